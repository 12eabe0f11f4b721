// attention_small: see attention_small.h. A vector's lane i is query i0+i (forward) or key k0+i (backward);
// a tile's rows come in and go out through a register transpose. The scale goes into the queries (forward) or
// the keys (backward) once, so a pair's scaled logit is one dot product; a masked pair gets the logit −inf
// (forward: its exponential is 0) or the probability 0 (backward). Scratch holds the logits of a key chunk
// (forward), or the block's scaled Kᵀ and Vᵀ, its dK and dV accumulators and a query chunk's P and dS
// (backward).
#include "kernels/attention_small.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "kernels/transpose_avx512.h"
#include "kernels/vecmath_avx512.h"

enum {
    LANES = 16,        // queries (forward) or keys (backward) per vector
    KEY_CHUNK = 64,    // forward: keys whose logits are kept between the max pass and the exponentials
    QUERY_CHUNK = 64,  // backward: queries whose P and dS rows are kept between passes
};

#define SMALL __attribute__((target("avx512f,fma")))
#define SMALL_INLINE SMALL static inline __attribute__((always_inline))

bool attn_small_applies(const attn_shape *s) {
    return (s->hd == 8 || s->hd == 16) && s->softcap == 0 && vm512_available();
}

size_t attn_small_scratch_floats(const attn_shape *s) {
    const size_t fwd = KEY_CHUNK * LANES, bwd = 4 * s->hd * LANES + 2 * QUERY_CHUNK * LANES;
    return fwd > bwd ? fwd : bwd;
}

// Lanes (queries i0 + lane) that see key j: j <= i0 + lane, and within the window.
static inline __mmask16 queries_seeing(const attn_shape *s, size_t i0, size_t j) {
    if (j <= i0 && (s->window == 0 || j + s->window >= i0 + LANES)) return 0xffff;   // the common case
    size_t lo = j > i0 ? j - i0 : 0, hi = LANES;
    if (s->window > 0) hi = j + s->window > i0 ? j + s->window - i0 : 0;
    return vm512_lanes(0, lo, hi);
}

// Rows 0..n−1 (n <= 16, row stride ld, HD values each) transposed into t[0..HD): t[d] lane i = rows[i][d],
// lanes past n zero.
SMALL_INLINE void load_transposed(const float *rows, size_t ld, size_t n, int HD, __m512 *t) {
    __m512 r[16];
    const __mmask16 cols = (__mmask16)((1u << HD) - 1);
    for (size_t i = 0; i < LANES; i++) r[i] = i < n ? _mm512_maskz_loadu_ps(cols, rows + i * ld) : _mm512_setzero_ps();
    transpose16x16_avx512(r);
#pragma GCC unroll 16
    for (int d = 0; d < HD; d++) t[d] = r[d];
}

// The inverse: rows[i][d] = t[d] lane i for i < n, d < HD.
SMALL_INLINE void store_transposed(const __m512 *t, int HD, size_t n, float *rows, size_t ld) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int d = 0; d < LANES; d++) r[d] = d < HD ? t[d] : _mm512_setzero_ps();
    transpose16x16_avx512(r);
    const __mmask16 cols = (__mmask16)((1u << HD) - 1);
    for (size_t i = 0; i < n; i++) _mm512_mask_storeu_ps(rows + i * ld, cols, r[i]);
}

// Σ_d x[d]·w[d], w broadcast from memory; two chains.
SMALL_INLINE __m512 dot(const __m512 *x, const float *w, int HD) {
    __m512 a0 = _mm512_mul_ps(x[0], _mm512_set1_ps(w[0])), a1 = _mm512_mul_ps(x[1], _mm512_set1_ps(w[1]));
#pragma GCC unroll 16
    for (int d = 2; d < HD; d += 2) {
        a0 = _mm512_fmadd_ps(x[d], _mm512_set1_ps(w[d]), a0);
        a1 = _mm512_fmadd_ps(x[d + 1], _mm512_set1_ps(w[d + 1]), a1);
    }
    return _mm512_add_ps(a0, a1);
}

// Queries i0..i0+nl−1 (nl <= 16) of head h of sequence b, against every key they see, from the diagonal
// backwards in chunks of KEY_CHUNK keys: logits and their max, then the rescale and the exponentials.
SMALL_INLINE void fwd_queries(const attn_shape *s, int HD, const float *q, const float *k, const float *v, float *out,
                              float *lse, size_t b, size_t kvh, size_t h, size_t i0, size_t nl, float *scratch) {
    const size_t T = s->T, H = s->H, Hkv = s->Hkv;
    float *sbuf = scratch;
    __m512 qt[16], o[16];
    load_transposed(q + ((b * T + i0) * H + h) * HD, H * HD, nl, HD, qt);
    const __m512 scale = _mm512_set1_ps(s->scale), neg_inf = _mm512_set1_ps(-INFINITY);
#pragma GCC unroll 16
    for (int d = 0; d < HD; d++) qt[d] = _mm512_mul_ps(qt[d], scale), o[d] = _mm512_setzero_ps();
    __m512 m = neg_inf, l = _mm512_setzero_ps();
    // Lanes without a query see every key (finite maxima; their results are not stored). The first chunk
    // holds each query's own key, so every running max is finite after it.
    const __mmask16 no_query = (__mmask16)~((1u << nl) - 1);
    const size_t kbeg = attn_first_key(s, i0);
    for (size_t hi = i0 + nl; hi > kbeg;) {
        const size_t c0 = hi - kbeg > KEY_CHUNK ? hi - KEY_CHUNK : kbeg, n = hi - c0;
        __m512 mc = m;
        for (size_t j = 0; j < n; j++) {
            const __m512 z = dot(qt, k + ((b * T + c0 + j) * Hkv + kvh) * HD, HD);
            const __m512 zm = _mm512_mask_mov_ps(neg_inf, queries_seeing(s, i0, c0 + j) | no_query, z);
            _mm512_storeu_ps(sbuf + j * LANES, zm);
            mc = _mm512_max_ps(mc, zm);
        }
        const __m512 corr = vm512_expf(_mm512_sub_ps(m, mc));
        m = mc, l = _mm512_mul_ps(l, corr);
#pragma GCC unroll 16
        for (int d = 0; d < HD; d++) o[d] = _mm512_mul_ps(o[d], corr);
        for (size_t j = 0; j < n; j++) {
            const __m512 p = vm512_expf(_mm512_sub_ps(_mm512_loadu_ps(sbuf + j * LANES), m));
            const float *vr = v + ((b * T + c0 + j) * Hkv + kvh) * HD;
            l = _mm512_add_ps(l, p);
#pragma GCC unroll 16
            for (int d = 0; d < HD; d++) o[d] = _mm512_fmadd_ps(p, _mm512_set1_ps(vr[d]), o[d]);
        }
        hi = c0;
    }
    const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), l);
#pragma GCC unroll 16
    for (int d = 0; d < HD; d++) o[d] = _mm512_mul_ps(o[d], inv);
    store_transposed(o, HD, nl, out + ((b * T + i0) * H + h) * HD, H * HD);
    float mv[LANES], lv[LANES];
    _mm512_storeu_ps(mv, m), _mm512_storeu_ps(lv, l);
    for (size_t i = 0; i < nl; i++) lse[(b * H + h) * T + i0 + i] = mv[i] + logf(lv[i]);
}

SMALL void attn_small_forward(const attn_shape *s, const float *q, const float *k, const float *v, float *out,
                              float *lse, size_t b, size_t kvh, size_t q0, size_t nq, float *scratch) {
    const size_t G = s->H / s->Hkv;
    for (size_t g = 0; g < G; g++)
        for (size_t i0 = q0; i0 < q0 + nq; i0 += LANES) {
            const size_t nl = q0 + nq - i0 < LANES ? q0 + nq - i0 : LANES;
            if (s->hd == 8) fwd_queries(s, 8, q, k, v, out, lse, b, kvh, kvh * G + g, i0, nl, scratch);
            else fwd_queries(s, 16, q, k, v, out, lse, b, kvh, kvh * G + g, i0, nl, scratch);
        }
}

// acc[d] += Σ_i x[i]·rows[i][d] over n rows (row stride ld), x[i] the 16 lanes at xs + 16·i; acc lives at
// acc_t (HD vectors) between calls.
SMALL_INLINE void accumulate_outer(int HD, size_t n, const float *xs, const float *rows, size_t ld, float *acc_t) {
    __m512 acc[16];
#pragma GCC unroll 16
    for (int d = 0; d < HD; d++) acc[d] = _mm512_loadu_ps(acc_t + d * LANES);
    for (size_t i = 0; i < n; i++) {
        const __m512 x = _mm512_loadu_ps(xs + i * LANES);
        const float *r = rows + i * ld;
#pragma GCC unroll 16
        for (int d = 0; d < HD; d++) acc[d] = _mm512_fmadd_ps(x, _mm512_set1_ps(r[d]), acc[d]);
    }
#pragma GCC unroll 16
    for (int d = 0; d < HD; d++) _mm512_storeu_ps(acc_t + d * LANES, acc[d]);
}

// rows[i][0..HD) += Σ_lane ds[i][lane]·kr[lane][0..HD) for n rows (row stride ld): dQ += dS·K over the
// block's keys, kr its nk key rows (the rest zero, as their dS lanes are). A key row is one vector: 512 bits
// at HD 16, 256 at HD 8 (ds_times_keys_W, one body for both widths).
#define DS_TIMES_KEYS(W, vec)                                                                                    \
    SMALL_INLINE void ds_times_keys_##W(size_t n, const float *ds, const float *kr, size_t kld, size_t nk,       \
                                        float *rows, size_t ld) {                                                \
        vec kv[LANES];                                                                                           \
        for (int j = 0; j < LANES; j++) kv[j] = (size_t)j < nk ? _mm##W##_loadu_ps(kr + j * kld) : _mm##W##_setzero_ps(); \
        for (size_t i = 0; i < n; i++) {                                                                         \
            const float *x = ds + i * LANES;                                                                     \
            vec a[4];                                                                                            \
            _Pragma("GCC unroll 4") for (int u = 0; u < 4; u++) a[u] = _mm##W##_mul_ps(_mm##W##_set1_ps(x[u]), kv[u]); \
            _Pragma("GCC unroll 16") for (int j = 4; j < LANES; j++)                                            \
                a[j % 4] = _mm##W##_fmadd_ps(_mm##W##_set1_ps(x[j]), kv[j], a[j % 4]);                           \
            float *r = rows + i * ld;                                                                            \
            const vec sum = _mm##W##_add_ps(_mm##W##_add_ps(a[0], a[1]), _mm##W##_add_ps(a[2], a[3]));           \
            _mm##W##_storeu_ps(r, _mm##W##_add_ps(_mm##W##_loadu_ps(r), sum));                                  \
        }                                                                                                        \
    }
DS_TIMES_KEYS(512, __m512)
DS_TIMES_KEYS(256, __m256)
#undef DS_TIMES_KEYS

// Keys k0..k0+nk−1 against the queries of one head h, QUERY_CHUNK at a time: P of each query row over the
// 16 keys, then scale·dS (each pass with its HD vectors of the block, ktile = scale·Kᵀ or vtile = Vᵀ, in
// registers), then dV += Pᵀ dO, dK += scale·dSᵀ Q (accumulated at dvt, dkt) and dQ += scale·dS K.
SMALL_INLINE void bwd_keys(const attn_shape *s, int HD, const float *q, const float *k, const float *lse,
                           const float *dout, const float *Dh, float *dq, size_t b, size_t kvh, size_t h, size_t k0,
                           size_t nk, const float *ktile, const float *vtile, float *dkt, float *dvt, float *pb,
                           float *dsb) {
    const size_t T = s->T, H = s->H, Hkv = s->Hkv;
    const __m512 scale = _mm512_set1_ps(s->scale);
    // The last query that sees key k0+nk−1 is k0+nk−1 + window−1.
    const size_t qend = s->window && k0 + nk - 1 + s->window < T ? k0 + nk - 1 + s->window : T;
    const __mmask16 all_keys = vm512_lanes(0, 0, nk);
    for (size_t c0 = k0; c0 < qend; c0 += QUERY_CHUNK) {
        const size_t n = qend - c0 < QUERY_CHUNK ? qend - c0 : QUERY_CHUNK;
        const float *qc = q + ((b * T + c0) * H + h) * HD, *dc = dout + ((b * T + c0) * H + h) * HD;
        __m512 t[16];
#pragma GCC unroll 16
        for (int d = 0; d < HD; d++) t[d] = _mm512_loadu_ps(ktile + d * LANES);
        for (size_t i = 0; i < n; i++) {
            const size_t tq = c0 + i, first = attn_first_key(s, tq);
            const __mmask16 seen = tq + 1 >= k0 + nk && first <= k0
                                       ? all_keys
                                       : vm512_lanes(k0, first, tq + 1 < k0 + nk ? tq + 1 : k0 + nk);
            const __m512 z = dot(t, qc + i * H * HD, HD);
            _mm512_storeu_ps(pb + i * LANES, _mm512_maskz_mov_ps(seen, vm512_expf(_mm512_sub_ps(z, _mm512_set1_ps(lse[tq])))));
        }
#pragma GCC unroll 16
        for (int d = 0; d < HD; d++) t[d] = _mm512_loadu_ps(vtile + d * LANES);
        for (size_t i = 0; i < n; i++) {
            const __m512 dp = dot(t, dc + i * H * HD, HD), p = _mm512_loadu_ps(pb + i * LANES);
            _mm512_storeu_ps(dsb + i * LANES, _mm512_mul_ps(_mm512_mul_ps(p, _mm512_sub_ps(dp, _mm512_set1_ps(Dh[c0 + i]))), scale));
        }
        accumulate_outer(HD, n, pb, dc, H * HD, dvt);
        accumulate_outer(HD, n, dsb, qc, H * HD, dkt);
        const float *kr = k + ((b * T + k0) * Hkv + kvh) * HD;
        float *dqc = dq + ((b * T + c0) * H + h) * HD;
        if (HD == 16) ds_times_keys_512(n, dsb, kr, Hkv * HD, nk, dqc, H * HD);
        else ds_times_keys_256(n, dsb, kr, Hkv * HD, nk, dqc, H * HD);
    }
}

SMALL void attn_small_backward(const attn_shape *s, const float *q, const float *k, const float *v, const float *lse,
                               const float *dout, const float *D, float *dq, float *dk, float *dv, size_t b, size_t kvh,
                               size_t k0, size_t nk, float *scratch) {
    const size_t T = s->T, H = s->H, Hkv = s->Hkv, hd = s->hd, G = H / Hkv, kv_row = ((b * T + k0) * Hkv + kvh) * hd;
    float *dkt = scratch, *dvt = dkt + hd * LANES, *ktile = dvt + hd * LANES, *vtile = ktile + hd * LANES;
    float *pb = vtile + hd * LANES, *dsb = pb + QUERY_CHUNK * LANES;
    memset(dkt, 0, 2 * hd * LANES * sizeof(float));
    __m512 t[16];
    for (int pass = 0; pass < 2; pass++) {   // scale·Kᵀ, then Vᵀ
        load_transposed((pass ? v : k) + kv_row, Hkv * hd, nk, (int)hd, t);
        for (size_t d = 0; d < hd; d++) _mm512_storeu_ps((pass ? vtile : ktile) + d * LANES, pass ? t[d] : _mm512_mul_ps(t[d], _mm512_set1_ps(s->scale)));
    }
    for (size_t g = 0; g < G; g++) {
        const size_t h = kvh * G + g;
        const float *lse_h = lse + (b * H + h) * T, *Dh = D + g * T;
        if (hd == 8) bwd_keys(s, 8, q, k, lse_h, dout, Dh, dq, b, kvh, h, k0, nk, ktile, vtile, dkt, dvt, pb, dsb);
        else bwd_keys(s, 16, q, k, lse_h, dout, Dh, dq, b, kvh, h, k0, nk, ktile, vtile, dkt, dvt, pb, dsb);
    }
    for (int pass = 0; pass < 2; pass++) {   // dK, then dV
        const float *acc = pass ? dvt : dkt;
        for (size_t d = 0; d < hd; d++) t[d] = _mm512_loadu_ps(acc + d * LANES);
        store_transposed(t, (int)hd, nk, (pass ? dv : dk) + kv_row, Hkv * hd);
    }
}
