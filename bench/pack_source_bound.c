// bench/pack_source_bound: how much of bf16 packing would storing activations in bf16 save (issue 24)?
// Times, on one thread, the two ways gemm.c packs a bf16 operand (contiguous rows, as pack_rows; k-major
// row pairs, as pack_kmajor) from an fp32 source, with gemm.c's own converters (gemm_bf16_convert_avx512),
// against the same layouts made from a source already in bf16. The operand is d6's MLP activation at
// 8 x 256 tokens (2048 x 1536), read from memory as in a training step (a 64 MiB sweep before each timing).
// Prints best-of-15 times and their ratios. Needs AVX-512 BF16; elsewhere it says so and exits 0.
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/gemm_ukernel.h"

enum { ROWS = 2048, COLS = 1536, PANEL = 32, REPEATS = 15, FLUSH_FLOATS = 16 << 20 };
enum { PANEL_BYTES = ROWS / 2 * PANEL * 4 }; // a k-major panel: ROWS / 2 row pairs of PANEL 32-bit pairs
// gemm.c's blocking: bf16 K blocks (KC_BF16), values of a row packed at a time (PACK_GROUP), rows prefetched ahead.
enum { KC_BLOCK = 512, GROUP = 256, PREFETCH_ROWS = 8 };
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Word 2i of a pair vector is row k's value i, word 2i + 1 row k+1's (both halves of the input, lo first).
BF16_TARGET static __m512i interleave(__m512i lo_hi) {
    const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                           6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(order, lo_hi);
}

// One run of n values of a row (row_fn) or of rows k and k+1 (pair_fn), from an fp32 or a bf16 source.
typedef void row_fn(uint16_t *d, const void *s, size_t n);
typedef void pair_fn(unsigned char *d, const void *s0, const void *s1, size_t n);

// From fp32: gemm.c's own converters (gemm_pack_bf16.c).
static void row_from_f32(uint16_t *d, const void *s, size_t n) { gemm_bf16_convert_avx512.row(d, s, n); }

static void pair_from_f32(unsigned char *d, const void *s0, const void *s1, size_t n) {
    gemm_bf16_convert_avx512.pair_rows(d, PANEL_BYTES, s0, s1, n, PANEL);
}

// From bf16: the same panels, as packers of a bf16 source would make them (n a multiple of 32 / of 16).
BF16_TARGET static void row_from_bf16(uint16_t *d, const void *s, size_t n) {
    for (size_t i = 0; i < n; i += 32) _mm512_storeu_si512(d + i, _mm512_loadu_si512((const uint16_t *)s + i));
}

BF16_TARGET static void pair_from_bf16(unsigned char *d, const void *s0, const void *s1, size_t n) {
    for (size_t c = 0; c < n; c += 16) {
        const __m256i lo = _mm256_loadu_si256((const __m256i *)((const uint16_t *)s0 + c));
        const __m256i hi = _mm256_loadu_si256((const __m256i *)((const uint16_t *)s1 + c));
        _mm512_storeu_si512(d + c / PANEL * PANEL_BYTES + c % PANEL * 4,
                            interleave(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)));
    }
}

// Fetches source row r (es bytes a value) from value c0 on, n values, as gemm.c's packers do 8 rows ahead.
static void prefetch_row(const char *s, size_t es, size_t r, size_t c0, size_t n) {
    for (size_t i = 0; i < n * es; i += 64) __builtin_prefetch(s + (r * COLS + c0) * es + i);
}

// The walks of gemm.c's pack_rows and pack_kmajor over the (ROWS x COLS) source s: rows in K blocks of
// KC_BLOCK values (row-major panels of the blocks one after another), and row pairs in groups of GROUP values
// (k-major panels PANEL wide). d holds ROWS x COLS bf16 values either way.
static void pack_rows(uint16_t *d, const char *s, size_t es, row_fn *f) {
    for (size_t k0 = 0; k0 < COLS; k0 += KC_BLOCK)
        for (size_t r = 0; r < ROWS; r++) {
            if (r + PREFETCH_ROWS < ROWS) prefetch_row(s, es, r + PREFETCH_ROWS, k0, KC_BLOCK);
            f(d + k0 * ROWS + r * KC_BLOCK, s + (r * COLS + k0) * es, KC_BLOCK);
        }
}

static void pack_pairs(unsigned char *d, const char *s, size_t es, pair_fn *f) {
    for (size_t c0 = 0; c0 < COLS; c0 += GROUP)
        for (size_t k = 0; k < ROWS; k += 2) {
            for (size_t r = k + PREFETCH_ROWS; r < k + PREFETCH_ROWS + 2 && r < ROWS; r++) prefetch_row(s, es, r, c0, GROUP);
            f(d + c0 / PANEL * PANEL_BYTES + k / 2 * PANEL * 4, s + (k * COLS + c0) * es, s + ((k + 1) * COLS + c0) * es,
              GROUP);
        }
}

int main(void) {
    if (!__builtin_cpu_supports("avx512bf16")) {
        printf("pack_source_bound: this CPU has no AVX-512 BF16; nothing to measure\n");
        return 0;
    }
    const size_t n = (size_t)ROWS * COLS;
    float *f32 = aligned_alloc(64, n * sizeof(float)), *flush = aligned_alloc(64, FLUSH_FLOATS * sizeof(float));
    uint16_t *bf16 = aligned_alloc(64, n * sizeof(uint16_t)), *out = aligned_alloc(64, n * sizeof(uint16_t));
    uint16_t *check = aligned_alloc(64, n * sizeof(uint16_t));
    if (!f32 || !flush || !bf16 || !out || !check) {
        fprintf(stderr, "pack_source_bound: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) f32[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    row_from_f32(bf16, f32, n); // the bf16 source: the same values, rounded as gemm.c rounds them
    // Both sources must give the same panels, or the timings compare different work.
    pack_pairs((unsigned char *)out, (const char *)f32, sizeof *f32, pair_from_f32);
    pack_pairs((unsigned char *)check, (const char *)bf16, sizeof *bf16, pair_from_bf16);
    bool same = !memcmp(out, check, n * sizeof *out);
    pack_rows(out, (const char *)f32, sizeof *f32, row_from_f32);
    pack_rows(check, (const char *)bf16, sizeof *bf16, row_from_bf16);
    same = same && !memcmp(out, check, n * sizeof *out);
    if (!same) {
        fprintf(stderr, "pack_source_bound: the bf16-source packers do not make gemm.c's panels\n");
        return 1;
    }
    memset(flush, 0, FLUSH_FLOATS * sizeof(float));
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int rep = 0; rep < REPEATS; rep++)
        for (int c = 0; c < 4; c++) {
            for (size_t i = 0; i < FLUSH_FLOATS; i += 16) flush[i] += 1.0f;
            const double t0 = seconds();
            if (c == 0) pack_rows(out, (const char *)f32, sizeof *f32, row_from_f32);
            if (c == 1) pack_rows(out, (const char *)bf16, sizeof *bf16, row_from_bf16);
            if (c == 2) pack_pairs((unsigned char *)out, (const char *)f32, sizeof *f32, pair_from_f32);
            if (c == 3) pack_pairs((unsigned char *)out, (const char *)bf16, sizeof *bf16, pair_from_bf16);
            const double t = seconds() - t0;
            if (t < best[c]) best[c] = t;
        }
    printf("packing a %d x %d operand to bf16 panels, one thread, best of %d (source read from memory)\n", ROWS,
           COLS, REPEATS);
    printf("rows:   from fp32 %.3f ms, from bf16 %.3f ms: %.2fx the time\n", 1e3 * best[0], 1e3 * best[1],
           best[1] / best[0]);
    printf("pairs:  from fp32 %.3f ms, from bf16 %.3f ms: %.2fx the time\n", 1e3 * best[2], 1e3 * best[3],
           best[3] / best[2]);
    const int sink = out[n / 2] == 0x7fff && flush[16] < 0; // keeps the stores observable
    free(f32), free(flush), free(bf16), free(out), free(check);
    return sink;
}
