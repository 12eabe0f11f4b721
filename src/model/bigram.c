// bigram: see bigram.h. The fast functions vectorise the sign hash over channels; the backward splits the
// channels over threads (each thread walks every row), as the token embedding's backward does, so the sum per
// element runs in row order whatever the thread count.
#include <stdbool.h>
#include "model/bigram.h"

enum { HASH_A = 36313, HASH_B = 27191 };

sx_status bigram_declare(const model_config *c, param_table *t) {
    if (!c->bigram_rows) return SX_OK;
    return param_table_add(t, "bigram", c->bigram_rows, c->width, INIT_ZERO, 0, PGROUP_EMBED);
}

// a·x as the reference's int32 tensor product: wrapped modulo 2³² (two's complement).
static int32_t wrap_mul(uint32_t a, int32_t x) { return (int32_t)(a * (uint32_t)x); }

static int64_t floor_mod(int64_t v, int64_t m) { return ((v % m) + m) % m; }

void bigram_index(const model_config *c, size_t N, const int32_t *tok, const int32_t *prev, int32_t *row,
                  int32_t *pat) {
    int64_t R = (int64_t)c->bigram_rows, S = (int64_t)c->bigram_signs;
    for (size_t i = 0; i < N; i++) {
        int32_t p = prev[i] < 0 ? 0 : prev[i];
        row[i] = prev[i] < 0 ? (int32_t)(R - 1)
                             : (int32_t)floor_mod(wrap_mul(HASH_A, tok[i]) ^ wrap_mul(HASH_B, p), R - 1);
        pat[i] = S ? (int32_t)((p ^ tok[i]) % S) : 0;
    }
}

static inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

// The sign of channel c in pattern pat.
static inline float sign_of(int32_t pat, size_t c) {
    return fmix32((uint32_t)pat * 0x9E3779B1u + (uint32_t)c) & 1 ? -1.0f : 1.0f;
}

void bigram_forward_ref(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *E,
                        float *x) {
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++)
            x[i * C + c] += E[(size_t)row[i] * C + c] * (signs ? sign_of(pat[i], c) : 1.0f);
}

void bigram_backward_ref(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *dx,
                         float *dE) {
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++)
            dE[(size_t)row[i] * C + c] += dx[i * C + c] * (signs ? sign_of(pat[i], c) : 1.0f);
}

#define BIGRAM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define BIGRAM_THREADED(N, C) ((N) * (C) >= (1u << 16))

// dst[c] += src[c]·s(pat)_c for c in [c0, c1) (signed false: plain add).
BIGRAM_CLONES static void add_signed(size_t c0, size_t c1, bool signed_, int32_t pat, const float *src, float *dst) {
    if (!signed_) {
#pragma omp simd
        for (size_t c = c0; c < c1; c++) dst[c] += src[c];
        return;
    }
    uint32_t base = (uint32_t)pat * 0x9E3779B1u;
#pragma omp simd
    for (size_t c = c0; c < c1; c++) {
        uint32_t h = fmix32(base + (uint32_t)c);
        dst[c] += (h & 1) ? -src[c] : src[c];
    }
}

void bigram_forward(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *E,
                    float *x) {
#pragma omp parallel for schedule(static) if (BIGRAM_THREADED(N, C))
    for (size_t i = 0; i < N; i++) add_signed(0, C, signs > 0, pat[i], E + (size_t)row[i] * C, x + i * C);
}

void bigram_backward(size_t N, size_t C, size_t signs, const int32_t *row, const int32_t *pat, const float *dx,
                     float *dE) {
    const size_t slice = 64;
    size_t nslices = (C + slice - 1) / slice;
#pragma omp parallel for schedule(static) if (BIGRAM_THREADED(N, C))
    for (size_t s = 0; s < nslices; s++) {
        size_t c0 = s * slice, c1 = c0 + slice < C ? c0 + slice : C;
        for (size_t i = 0; i < N; i++)
            add_signed(c0, c1, signs > 0, pat[i], dx + i * C, dE + (size_t)row[i] * C);
    }
}
