// bench/pack_source_bound: how much of bf16 packing would storing activations in bf16 save (issue 24)?
// Times, on one thread, the two ways gemm.c packs a bf16 operand (contiguous rows, as pack_rows; k-major
// row pairs, as pack_kmajor's pair_rows) from an fp32 source, converted with vcvtne2ps2bf16 as gemm.c does,
// against the same layouts made from a source already in bf16. The operand is d6's MLP activation at
// 8 x 256 tokens (2048 x 1536), read from memory as in a training step (a 64 MiB sweep before each timing).
// Prints best-of-15 times and their ratios. Needs AVX-512 BF16; elsewhere it says so and exits 0.
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ROWS = 2048, COLS = 1536, PANEL = 32, REPEATS = 15, FLUSH_FLOATS = 16 << 20 };
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

BF16_TARGET static void rows_from_f32(uint16_t *d, const float *s) {
    for (size_t i = 0; i < (size_t)ROWS * COLS; i += 32)
        _mm512_storeu_si512(d + i, (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + i + 16), _mm512_loadu_ps(s + i)));
}

BF16_TARGET static void rows_from_bf16(uint16_t *d, const uint16_t *s) {
    for (size_t i = 0; i < (size_t)ROWS * COLS; i += 32) _mm512_storeu_si512(d + i, _mm512_loadu_si512(s + i));
}

// Panels PANEL columns wide of the (ROWS x COLS) source read k-major: rows k and k+1 paired.
BF16_TARGET static void pairs_from_f32(unsigned char *d, const float *s) {
    const size_t panel_bytes = ROWS / 2 * PANEL * 4;
    for (size_t k = 0; k < ROWS; k += 2)
        for (size_t c = 0; c < COLS; c += 16) {
            const __m512 lo = _mm512_loadu_ps(s + k * COLS + c), hi = _mm512_loadu_ps(s + (k + 1) * COLS + c);
            _mm512_storeu_si512(d + c / PANEL * panel_bytes + k / 2 * PANEL * 4 + c % PANEL * 4,
                                interleave((__m512i)_mm512_cvtne2ps_pbh(hi, lo)));
        }
}

BF16_TARGET static void pairs_from_bf16(unsigned char *d, const uint16_t *s) {
    const size_t panel_bytes = ROWS / 2 * PANEL * 4;
    for (size_t k = 0; k < ROWS; k += 2)
        for (size_t c = 0; c < COLS; c += 16) {
            const __m256i lo = _mm256_loadu_si256((const __m256i *)(s + k * COLS + c));
            const __m256i hi = _mm256_loadu_si256((const __m256i *)(s + (k + 1) * COLS + c));
            _mm512_storeu_si512(d + c / PANEL * panel_bytes + k / 2 * PANEL * 4 + c % PANEL * 4,
                                interleave(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1)));
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
    if (!f32 || !flush || !bf16 || !out) {
        fprintf(stderr, "pack_source_bound: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        f32[i] = (float)rand() / (float)RAND_MAX;
        bf16[i] = (uint16_t)(rand() & 0x3fff);
    }
    memset(flush, 0, FLUSH_FLOATS * sizeof(float));
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    for (int rep = 0; rep < REPEATS; rep++)
        for (int c = 0; c < 4; c++) {
            for (size_t i = 0; i < FLUSH_FLOATS; i += 16) flush[i] += 1.0f;
            const double t0 = seconds();
            if (c == 0) rows_from_f32(out, f32);
            if (c == 1) rows_from_bf16(out, bf16);
            if (c == 2) pairs_from_f32((unsigned char *)out, f32);
            if (c == 3) pairs_from_bf16((unsigned char *)out, bf16);
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
    free(f32), free(flush), free(bf16), free(out);
    return sink;
}
