// attention: causal grouped-query attention with optional sliding window and logit soft-cap.
// The *_ref functions are the specification: one query row at a time, direct softmax, double accumulation.
// The fast functions tile queries and keys, keep an online softmax (running max and sum) so no T×T matrix
// exists, skip causal and out-of-window tiles, share each K/V tile across the query heads of its group,
// and recompute probabilities from lse in the backward (FlashAttention-2). The forward works on transposed
// tiles (queries along the vectors); the backward on key-major blocks. Small head dimensions (8, 16, 32)
// get register tiles of their own (see tile_mm); at 8 and 16 in fp32 on AVX-512 (no soft-cap) the same tasks
// run fused kernels instead (attention_small.c), where the tiles' trips through memory cost more than their
// products. In GEMM_BF16 precision on a CPU with AVX-512 BF16 the products take bf16 operands instead
// (attention_bf16.c, as the model's other products do); the softmax, its statistics and every accumulator
// stay fp32.
// -std=c11 turns off FMA contraction; the tile products and exp polynomials need it (2x the FLOP rate). It
// only fuses a·b+c in this file's own expressions, deterministically for a given build.
#pragma GCC optimize("fp-contract=fast")

#include "core/status.h"
#include "kernels/attention.h"

#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/attention_bf16.h"
#include "kernels/attention_small.h"
#include "kernels/gemm.h"
#include "kernels/vecmath.h"
#include "kernels/vecmath_avx512.h"

static void attn_check_shape(const attn_shape *s) {
    SX_CHECK(s->Hkv > 0 && s->H % s->Hkv == 0, "H must be a multiple of Hkv");
    SX_CHECK(s->hd > 0, "attention: set the head dimension in the attn_shape");
    SX_CHECK(s->softcap >= 0, "attention: the soft-cap is 0 (off) or positive");
}

// Scored logit of one query/key pair (scale, then soft-cap), in double.
static double attn_ref_logit(const attn_shape *s, const float *qr, const float *kr) {
    double dot = 0;
    for (size_t d = 0; d < s->hd; d++) dot += (double)qr[d] * kr[d];
    double z = dot * s->scale;
    return s->softcap > 0 ? s->softcap * tanh(z / s->softcap) : z;
}

// The backward's needs cover the forward's: dk and dv in double (B,T,Hkv,hd) each, p, dp, z (T) and dq (hd).
size_t attention_ref_workspace(const attn_shape *s) {
    return 2 * s->B * s->T * s->Hkv * s->hd + 3 * s->T + s->hd;
}

void attention_forward_ref(const attn_shape *s, const float *q, const float *k, const float *v, float *out,
                           float *lse, double *work) {
    attn_check_shape(s);
    size_t T = s->T, H = s->H, Hkv = s->Hkv, hd = s->hd, G = H / Hkv;
    double *z = work, *acc = work + T;   // (T) scored logits of one row, (hd) its output in double
    for (size_t b = 0; b < s->B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                const float *qr = q + ((b * T + t) * H + h) * hd;
                size_t j0 = attn_first_key(s, t);
                double mx = -INFINITY, sum = 0;
                for (size_t j = j0; j <= t; j++) {
                    z[j] = attn_ref_logit(s, qr, k + ((b * T + j) * Hkv + h / G) * hd);
                    if (z[j] > mx) mx = z[j];
                }
                for (size_t d = 0; d < hd; d++) acc[d] = 0;
                for (size_t j = j0; j <= t; j++) {
                    double p = exp(z[j] - mx);
                    sum += p;
                    const float *vr = v + ((b * T + j) * Hkv + h / G) * hd;
                    for (size_t d = 0; d < hd; d++) acc[d] += p * vr[d];
                }
                float *o = out + ((b * T + t) * H + h) * hd;
                for (size_t d = 0; d < hd; d++) o[d] = (float)(acc[d] / sum);
                lse[(b * H + h) * T + t] = (float)(mx + log(sum));
            }
}

// With z_j the scored logits of row t and p_j = exp(z_j − lse_t): out_t = Σ_j p_j v_j, so
// dv_j += p_j·dout_t; dp_j = dout_t·v_j; dz_j = p_j (dp_j − Σ_i p_i dp_i); through the soft-cap
// ds_j = dz_j (1 − (z_j/c)²); dq_t += scale·Σ_j ds_j k_j; dk_j += scale·ds_j q_t.
void attention_backward_ref(const attn_shape *s, const float *q, const float *k, const float *v,
                            const float *out, const float *lse, const float *dout, float *dq, float *dk,
                            float *dv, double *work) {
    attn_check_shape(s);
    size_t B = s->B, T = s->T, H = s->H, Hkv = s->Hkv, hd = s->hd, G = H / Hkv;
    size_t nkv = B * T * Hkv * hd;
    // Laid out as attention_ref_workspace counts it; dk and dv accumulate over query heads, so they start at 0.
    double *dkd = work, *dvd = dkd + nkv, *p = dvd + nkv, *dp = p + T, *z = dp + T, *dqd = z + T;
    memset(dkd, 0, 2 * nkv * sizeof(double));
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++) {
                size_t qi = ((b * T + t) * H + h) * hd;
                const float *qr = q + qi, *dor = dout + qi;
                double l = lse[(b * H + h) * T + t], dsum = 0;
                size_t j0 = attn_first_key(s, t);
                for (size_t j = j0; j <= t; j++) {
                    size_t kj = ((b * T + j) * Hkv + h / G) * hd;
                    z[j] = attn_ref_logit(s, qr, k + kj);
                    p[j] = exp(z[j] - l);
                    double acc = 0;
                    for (size_t d = 0; d < hd; d++) acc += (double)dor[d] * v[kj + d];
                    dp[j] = acc;
                    dsum += p[j] * dp[j];
                }
                for (size_t d = 0; d < hd; d++) dqd[d] = 0;
                for (size_t j = j0; j <= t; j++) {
                    size_t kj = ((b * T + j) * Hkv + h / G) * hd;
                    double ds = p[j] * (dp[j] - dsum);
                    if (s->softcap > 0) ds *= 1.0 - (z[j] / s->softcap) * (z[j] / s->softcap);
                    ds *= s->scale;
                    for (size_t d = 0; d < hd; d++) {
                        dvd[kj + d] += p[j] * dor[d];
                        dqd[d] += ds * k[kj + d];
                        dkd[kj + d] += ds * qr[d];
                    }
                }
                for (size_t d = 0; d < hd; d++) dq[qi + d] = (float)dqd[d];
            }
    for (size_t i = 0; i < nkv; i++) {
        dk[i] = (float)dkd[i];
        dv[i] = (float)dvd[i];
    }
}

// ---------------------------------------------------------------------------------------------------------
// Fast path. Tiles of ATT_BQ queries × ATT_BK keys; every product is a small dense matrix product done by
// tile_mm (cloned for AVX-512, AVX2 and baseline x86-64, picked at load time). Its register tile adapts to
// the width n of the product so that about 16 vector accumulators are live whatever n is: the products
// whose columns are keys are 64 wide, but those whose columns run over the head dimension are only hd
// wide, and tiny models have hd = 8 or 16.

enum { ATT_BQ = 64, ATT_BK = 64 };

// x86-64-v4 is AVX-512 (F, VL, BW, DQ) with FMA on every vector width; v3 is AVX2 + FMA.
#define ATT_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#define ATT_INLINE static inline __attribute__((always_inline))

typedef float v16 __attribute__((vector_size(64), aligned(4)));
typedef float v8 __attribute__((vector_size(32), aligned(4)));

// acc[r][v] (+)= Σ_p A(r,p)·B(p, W·v .. W·v+W−1) for R rows and NV vectors of W lanes (R·NV <= 16).
#define ATT_MM_BLOCK(name, vec, W)                                                                           \
    ATT_INLINE void name(int R, int NV, size_t k, const float *A, size_t ars, size_t acs, const float *B,      \
                         size_t ldb, float *C, size_t ldc, bool accumulate) {                                \
        vec acc[16][4];                                                                                      \
        for (int r = 0; r < R; r++)                                                                          \
            for (int v = 0; v < NV; v++)                                                                     \
                acc[r][v] = accumulate ? *(const vec *)(C + r * ldc + W * v) : (vec){0};                     \
        for (size_t p = 0; p < k; p++) {                                                                     \
            vec b[4];                                                                                        \
            for (int v = 0; v < NV; v++) b[v] = *(const vec *)(B + p * ldb + W * v);                         \
            for (int r = 0; r < R; r++) {                                                                    \
                float a = A[r * ars + p * acs];                                                              \
                for (int v = 0; v < NV; v++) acc[r][v] += a * b[v];                                          \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < R; r++)                                                                          \
            for (int v = 0; v < NV; v++) *(vec *)(C + r * ldc + W * v) = acc[r][v];                          \
    }
ATT_MM_BLOCK(mm_block16, v16, 16)
ATT_MM_BLOCK(mm_block8, v8, 8)

// One R-row block (R a power of two, R <= 16 / its vectors) of the column panel [0, w) of width 64, 32,
// 16 or 8 (w >= 8), or of the scalar remainder (w < 8).
ATT_INLINE void mm_panel(int R, size_t w, size_t k, const float *A, size_t ars, size_t acs, const float *B,
                         size_t ldb, float *C, size_t ldc, bool accumulate) {
#define ATT_PANEL_CASES(blk, NV, ...)                                                                         \
    switch (R) {                                                                                             \
    __VA_ARGS__                                                                                              \
    default: blk(1, NV, k, A, ars, acs, B, ldb, C, ldc, accumulate); break;                                  \
    }
#define ATT_CASE(blk, RR, NV) case RR: blk(RR, NV, k, A, ars, acs, B, ldb, C, ldc, accumulate); break;
    if (w >= 64) {
        ATT_PANEL_CASES(mm_block16, 4, ATT_CASE(mm_block16, 4, 4) ATT_CASE(mm_block16, 2, 4))
    } else if (w >= 32) {
        ATT_PANEL_CASES(mm_block16, 2, ATT_CASE(mm_block16, 8, 2) ATT_CASE(mm_block16, 4, 2)
                                           ATT_CASE(mm_block16, 2, 2))
    } else if (w >= 16) {
        ATT_PANEL_CASES(mm_block16, 1, ATT_CASE(mm_block16, 16, 1) ATT_CASE(mm_block16, 8, 1)
                                           ATT_CASE(mm_block16, 4, 1) ATT_CASE(mm_block16, 2, 1))
    } else if (w >= 8) {
        ATT_PANEL_CASES(mm_block8, 1, ATT_CASE(mm_block8, 16, 1) ATT_CASE(mm_block8, 8, 1)
                                          ATT_CASE(mm_block8, 4, 1) ATT_CASE(mm_block8, 2, 1))
    } else {
        for (int r = 0; r < R; r++)
            for (size_t j = 0; j < w; j++) {
                float sum = accumulate ? C[r * ldc + j] : 0.0f;
                for (size_t p = 0; p < k; p++) sum += A[r * ars + p * acs] * B[p * ldb + j];
                C[r * ldc + j] = sum;
            }
    }
#undef ATT_CASE
#undef ATT_PANEL_CASES
}

// Which part of a product a causal diagonal tile (first query = first key, so query i sees keys j <= i)
// needs; everything skipped would only meet zeros or masked logits.
typedef enum {
    TRI_NONE,   // the whole product
    TRI_COLS,   // C rows are queries, columns keys: columns past the row (a 16-wide chunk) are set to 0
    TRI_K_HI,   // C rows are queries, k runs over keys: k < row + 1
    TRI_K_LO,   // C rows are keys, k runs over queries: k >= row
    TRI_COLS_LO,// C rows are keys, columns queries: columns before the row (a 16-wide chunk) are set to 0
} tri_mode;

// C (m,n) = A·B, or C += A·B when accumulate. A(i,p) is A[i·ars + p·acs] (so a transposed operand is just
// other strides); row p of B starts at B + p·ldb; row i of C at C + i·ldc. All rows contiguous in n.
// tri restricts the work on a diagonal tile as described above (ranges rounded to the register tile).
ATT_INLINE void tile_mm_strided(size_t m, size_t n, size_t k, const float *A, size_t ars, size_t acs,
                                const float *B, size_t ldb, float *C, size_t ldc, bool accumulate, tri_mode tri) {
    size_t rmax = n >= 64 ? 4 : n >= 32 ? 8 : 16;  // rows per block: 16 accumulators in the widest panel
    for (size_t i = 0, R; i < m; i += R) {
        for (R = rmax; R > m - i;) R /= 2;
        size_t kb = tri == TRI_K_LO ? (i < k ? i : k) : 0;
        size_t ke = tri == TRI_K_HI && i + R < k ? i + R : k;
        size_t ne = tri == TRI_COLS && (i + R + 15) / 16 * 16 < n ? (i + R + 15) / 16 * 16 : n;
        size_t nb = tri == TRI_COLS_LO ? (i / 16 * 16 < n ? i / 16 * 16 : n) : 0;
        const float *Ai = A + i * ars + kb * acs, *Bk = B + kb * ldb;
        float *Ci = C + i * ldc;
        // Panels of 64, 32, 16 or 8 columns, the widest that fits, then a scalar remainder.
        for (size_t j = nb, w; j < ne; j += w) {
            size_t left = ne - j;
            w = left >= 64 ? 64 : left >= 32 ? 32 : left >= 16 ? 16 : left >= 8 ? 8 : left;
            mm_panel((int)R, w, ke - kb, Ai, ars, acs, Bk + j, ldb, Ci + j, ldc, accumulate);
        }
        if (!accumulate)
            for (size_t r = 0; r < R; r++) {
                for (size_t j = 0; j < nb; j++) Ci[r * ldc + j] = 0;
                for (size_t j = ne; j < n; j++) Ci[r * ldc + j] = 0;
            }
    }
}

// tile_mm_strided with the A strides of a scratch tile (row-major or transposed) as constants: 16-row
// blocks then address A with immediate offsets instead of 16 live row pointers.
ATT_CLONES static void tile_mm(size_t m, size_t n, size_t k, const float *A, size_t ars, size_t acs,
                               const float *B, size_t ldb, float *C, size_t ldc, bool accumulate, tri_mode tri) {
    if (ars == ATT_BK && acs == 1)
        tile_mm_strided(m, n, k, A, ATT_BK, 1, B, ldb, C, ldc, accumulate, tri);
    else if (ars == 1 && acs == ATT_BK)
        tile_mm_strided(m, n, k, A, 1, ATT_BK, B, ldb, C, ldc, accumulate, tri);
    else
        tile_mm_strided(m, n, k, A, ars, acs, B, ldb, C, ldc, accumulate, tri);
}

// Columns [*c0, *c1) of the key tile starting at k0 (nk keys) that query t may see; empty when c0 >= c1.
static void attn_row_range(const attn_shape *s, size_t t, size_t k0, size_t nk, size_t *c0, size_t *c1) {
    size_t lo = attn_first_key(s, t), hi = t + 1;
    *c0 = lo > k0 ? lo - k0 : 0;
    *c1 = hi > k0 ? (hi - k0 < nk ? hi - k0 : nk) : 0;
}

// Key k0+j of a tile whose first query is q0 is seen by queries [*a, *b) of the tile (nq queries), relative
// to q0: from the key itself (causal) to the key's last window position; empty when a >= b.
static void attn_col_range(const attn_shape *s, size_t q0, size_t nq, size_t key, size_t *a, size_t *b) {
    size_t lo = key > q0 ? key - q0 : 0, hi = nq;
    if (s->window > 0) hi = key + s->window > q0 ? (key + s->window - q0 < nq ? key + s->window - q0 : nq) : 0;
    *a = lo < nq ? lo : nq;
    *b = hi;
}

// The exponentials of a tile row in AVX-512 (vscalefps, masks for the lanes outside the range; used where
// vm512_available()): on a tiny model the portable loops ran the ragged ends of the causal diagonal tile one
// lane at a time.
// z[i] = exp(z[i] − m[i]) for i in [a, b), 0 for the rest of [0, n); l[i] += z[i].
__attribute__((target("avx512f"))) static void online_exp_avx512(size_t n, size_t a, size_t b, float *z,
                                                                  const float *m, float *l) {
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 in = vm512_lanes(i, 0, n);
        __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, z + i), _mm512_maskz_loadu_ps(in, m + i));
        __m512 e = _mm512_maskz_mov_ps(vm512_lanes(i, a, b), vm512_expf(x));
        _mm512_mask_storeu_ps(z + i, in, e);
        _mm512_mask_storeu_ps(l + i, in, _mm512_add_ps(_mm512_maskz_loadu_ps(in, l + i), e));
    }
}

// p[j] = exp(scale·x[j] − lse) for j in [a, b), 0 for the rest of [0, n).
__attribute__((target("avx512f"))) static void probs_exp_avx512(size_t n, size_t a, size_t b, const float *x,
                                                                 float scale, float lse, float *p) {
    const __m512 sc = _mm512_set1_ps(scale), l = _mm512_set1_ps(lse);
    for (size_t j = 0; j < n; j += 16) {
        const __mmask16 in = vm512_lanes(j, 0, n);
        __m512 e = vm512_expf(_mm512_fmsub_ps(sc, _mm512_maskz_loadu_ps(in, x + j), l));
        _mm512_mask_storeu_ps(p + j, in, _mm512_maskz_mov_ps(vm512_lanes(j, a, b), e));
    }
}

// Online-softmax step on a transposed tile: st (nk, ATT_BQ) holds the raw dot products of keys k0.. (rows)
// with queries q0.. (columns); on exit st = exp(z − m_new), 0 where the query may not see the key. m, l (nq)
// are the running max and sum of each query; columns of ot (hd, ATT_BQ) are rescaled by exp(m_old − m_new).
// Every loop runs along the queries, so no horizontal reduction is needed; corr (nq) is scratch.
ATT_CLONES static void attn_online_tile(const attn_shape *s, size_t q0, size_t k0, size_t nq, size_t nk, float *st,
                                        float *m, float *l, float *ot, float *corr) {
    float scale = s->scale, cap = s->softcap, inv = cap > 0 ? scale / cap : 0.0f;
    for (size_t i = 0; i < nq; i++) corr[i] = m[i];  // corr holds m_new until the second pass
    for (size_t j = 0; j < nk; j++) {
        float *z = st + j * ATT_BQ;
        size_t a, b;
        attn_col_range(s, q0, nq, k0 + j, &a, &b);
        if (cap > 0) {
#pragma omp simd
            for (size_t i = a; i < b; i++) {
                z[i] = cap * vm_tanhf(z[i] * inv);
                corr[i] = z[i] > corr[i] ? z[i] : corr[i];
            }
        } else {
#pragma omp simd
            for (size_t i = a; i < b; i++) {
                z[i] *= scale;
                corr[i] = z[i] > corr[i] ? z[i] : corr[i];
            }
        }
    }
    // Every query sees its own key on the diagonal tile, which comes first: m_new is finite from then on,
    // and exp(−inf − m_new) = 0 on that first tile.
#pragma omp simd
    for (size_t i = 0; i < nq; i++) {
        float mn = corr[i];
        corr[i] = vm_expf(m[i] - mn);
        m[i] = mn;
        l[i] *= corr[i];
    }
    const bool avx512 = vm512_available();
    for (size_t j = 0; j < nk; j++) {
        float *z = st + j * ATT_BQ;
        size_t a, b;
        attn_col_range(s, q0, nq, k0 + j, &a, &b);
        if (avx512) {
            online_exp_avx512(nq, a, b, z, m, l);
            continue;
        }
        if (b < a) b = a;
        // Only the queries that see key j: no per-lane mask, and no exponentials of what the mask hides.
        for (size_t i = 0; i < a; i++) z[i] = 0.0f;
#pragma omp simd
        for (size_t i = a; i < b; i++) {
            float e = vm_expf(z[i] - m[i]);
            z[i] = e;
            l[i] += e;
        }
        for (size_t i = b; i < nq; i++) z[i] = 0.0f;
    }
    for (size_t d = 0; d < s->hd; d++) {
        float *o = ot + d * ATT_BQ;
#pragma omp simd
        for (size_t i = 0; i < nq; i++) o[i] *= corr[i];
    }
}

// Whether the tile products run on bf16 operands (attention_bf16.c): in GEMM_BF16 precision on a CPU with
// vdpbf16ps, as the model's other products do, and for an even head dimension (pairs along it). Elsewhere
// attention stays fp32, also in GEMM_BF16 precision.
static bool attn_use_bf16(const attn_shape *s) {
    return gemm_get_precision() == GEMM_BF16 && s->hd % 2 == 0 && strcmp(gemm_path_name(), "avx512bf16") == 0;
}

static size_t round16(size_t n) { return (n + 15) / 16 * 16; }

// Scratch of one forward task, owned by one thread. The forward works transposed (queries along the
// vectors): Sᵀ = K·Qᵀ and Oᵀ += Vᵀ·Pᵀ, so the softmax needs no horizontal reductions and both products are
// ATT_BQ wide whatever hd is.
typedef struct {
    float *st;        // (ATT_BK, ATT_BQ): logits, then probabilities, keys × queries
    float *qt, *ot;   // (G, hd, ATT_BQ): the queries transposed, unnormalised output accumulators transposed
    float *m, *l;     // (G, ATT_BQ): running max and sum
    float *corr;      // (ATT_BQ)
    // bf16 products only (attention_bf16.h layouts; hdw = hd/2 words, hdp = hd rounded up to 16):
    uint32_t *qp;     // (G, hdw, ATT_BQ): the queries, pairs along hd, transposed
    uint32_t *kw;     // (ATT_BK, hdw): the key tile, pairs along hd
    uint32_t *vp;     // (ATT_BK/2, hdp): the value tile, pairs along the keys
    uint32_t *pp;     // (ATT_BK/2, ATT_BQ): the probabilities, pairs along the keys
    uint32_t *tmp;    // (ATT_BQ, hdw)
} attn_fwd_scratch;

// Queries q0..q0+nq−1 of the G heads sharing KV head kvh of sequence b.
static void attn_forward_block(const attn_shape *s, const float *q, const float *k, const float *v, float *out,
                               float *lse, size_t b, size_t kvh, size_t q0, size_t nq, attn_fwd_scratch *w) {
    size_t T = s->T, H = s->H, Hkv = s->Hkv, hd = s->hd, G = H / Hkv;
    const size_t hdw = hd / 2, hdp = round16(hd);
    for (size_t g = 0; g < G; g++) {
        const float *qg = q + ((b * T + q0) * H + kvh * G + g) * hd;
        if (w->qp)
            attn_bf16_rows_transposed(w->qp + g * hdw * ATT_BQ, ATT_BQ, qg, H * hd, nq, hd, w->tmp);
        else
            gemm_transpose(qg, H * hd, w->qt + g * hd * ATT_BQ, ATT_BQ, nq, hd);
    }
    for (size_t i = 0; i < G * hd * ATT_BQ; i++) w->ot[i] = 0;
    for (size_t i = 0; i < G * ATT_BQ; i++) w->m[i] = -INFINITY, w->l[i] = 0;
    // Key tiles from the diagonal one [q0, q0+nq) backwards to the first key the block's first query sees.
    size_t kbeg = attn_first_key(s, q0);
    for (size_t hi = q0 + nq; hi > kbeg;) {
        size_t k0 = hi == q0 + nq ? q0 : (hi - kbeg > ATT_BK ? hi - ATT_BK : kbeg), nk = hi - k0;
        bool diag = k0 == q0;
        hi = k0;
        const float *kb = k + ((b * T + k0) * Hkv + kvh) * hd, *vb = v + ((b * T + k0) * Hkv + kvh) * hd;
        if (w->qp) {
            attn_bf16_rows(w->kw, hdw, kb, Hkv * hd, nk, hd);
            attn_bf16_pairs(w->vp, hdp, vb, Hkv * hd, nk, hd);
        }
        for (size_t g = 0; g < G; g++) {
            float *qt = w->qt + g * hd * ATT_BQ, *ot = w->ot + g * hd * ATT_BQ;
            float *m = w->m + g * ATT_BQ, *l = w->l + g * ATT_BQ;
            // bf16: whole tiles (the online softmax ignores what the mask hides).
            if (w->qp)
                attn_bf16_mm(nk, nq, hdw, w->kw, hdw, 1, w->qp + g * hdw * ATT_BQ, ATT_BQ, w->st, ATT_BQ, false);
            else
                tile_mm(nk, nq, hd, kb, Hkv * hd, 1, qt, ATT_BQ, w->st, ATT_BQ, false, diag ? TRI_COLS_LO : TRI_NONE);
            attn_online_tile(s, q0, k0, nq, nk, w->st, m, l, ot, w->corr);
            if (w->qp) {
                attn_bf16_pairs(w->pp, ATT_BQ, w->st, ATT_BQ, nk, nq);
                attn_bf16_mm(hd, nq, (nk + 1) / 2, w->vp, 1, hdp, w->pp, ATT_BQ, ot, ATT_BQ, true);
            } else {
                tile_mm(hd, nq, nk, vb, 1, Hkv * hd, w->st, ATT_BQ, ot, ATT_BQ, true, TRI_NONE);
            }
        }
    }
    for (size_t g = 0; g < G; g++) {
        size_t h = kvh * G + g;
        const float *m = w->m + g * ATT_BQ, *l = w->l + g * ATT_BQ;
        float *ob = out + ((b * T + q0) * H + h) * hd;
        gemm_transpose(w->ot + g * hd * ATT_BQ, ATT_BQ, ob, H * hd, hd, nq);
        for (size_t i = 0; i < nq; i++) {
            float inv = 1.0f / l[i], *dst = ob + i * H * hd;
            for (size_t d = 0; d < hd; d++) dst[d] *= inv;
            lse[(b * H + h) * T + q0 + i] = m[i] + logf(l[i]);
        }
    }
}

// Floats of one thread's forward scratch: the fp32 views, then (even hd: the bf16 path is possible) the words
// of the bf16 views; each part a multiple of 16 floats, so every thread's scratch starts 64-byte aligned.
static size_t fwd_floats(const attn_shape *s) {
    const size_t G = s->H / s->Hkv;
    return ATT_BK * ATT_BQ + 2 * G * s->hd * ATT_BQ + 2 * G * ATT_BQ + ATT_BQ;
}
static size_t fwd_thread_floats(const attn_shape *s) {
    const size_t G = s->H / s->Hkv, hd = s->hd, hdw = hd / 2, hdp = round16(hd);
    const size_t words = G * hdw * ATT_BQ + ATT_BK * hdw + ATT_BK / 2 * hdp + ATT_BK / 2 * ATT_BQ + ATT_BQ * hdw;
    return round16(fwd_floats(s)) + (hd % 2 == 0 ? round16(words) : 0);
}

// Points w's views into one thread's scratch (fwd_thread_floats); the bf16 views only when bf.
static void fwd_carve(const attn_shape *s, float *base, bool bf, attn_fwd_scratch *w) {
    const size_t G = s->H / s->Hkv, hd = s->hd, hdw = hd / 2, hdp = round16(hd);
    *w = (attn_fwd_scratch){0};
    w->st = base, w->qt = w->st + ATT_BK * ATT_BQ, w->ot = w->qt + G * hd * ATT_BQ, w->m = w->ot + G * hd * ATT_BQ;
    w->l = w->m + G * ATT_BQ, w->corr = w->l + G * ATT_BQ;
    if (!bf) return;
    w->qp = (uint32_t *)(base + round16(fwd_floats(s))), w->kw = w->qp + G * hdw * ATT_BQ;
    w->vp = w->kw + ATT_BK * hdw;
    w->pp = w->vp + ATT_BK / 2 * hdp, w->tmp = w->pp + ATT_BK / 2 * ATT_BQ;
}

size_t attention_forward_workspace_floats(const attn_shape *s, size_t threads) {
    return threads * fwd_thread_floats(s);
}

// Threads for a pass whose threads need per_thread floats of work each: as many as OpenMP would start, at
// most as many as work_floats holds (fewer only slows the pass: tasks, not threads, fix the result).
static int attn_team(size_t work_floats, size_t per_thread) {
    SX_CHECK(work_floats >= per_thread, "attention: size work with attention_{forward,backward}_workspace_floats");
    size_t fit = work_floats / per_thread, most = (size_t)omp_get_max_threads();
    return (int)(fit < most ? fit : most);
}

void attention_forward(const attn_shape *s, const float *q, const float *k, const float *v, float *out,
                       float *lse, float *work, size_t work_floats) {
    attn_check_shape(s);
    size_t nqb = (s->T + ATT_BQ - 1) / ATT_BQ, nbh = s->B * s->Hkv, per_thread = fwd_thread_floats(s);
    double flops = (double)s->B * s->H * s->T * (double)(s->window ? s->window : s->T) * s->hd;
    const bool bf = attn_use_bf16(s), small = !bf && attn_small_applies(s);
    SX_CHECK(!small || attn_small_scratch_floats(s) <= ATT_BK * ATT_BQ, "attention_small: its scratch outgrew a tile");
#pragma omp parallel num_threads(attn_team(work_floats, per_thread)) if (flops > 1e6)
    {
        attn_fwd_scratch w;
        fwd_carve(s, work + (size_t)omp_get_thread_num() * per_thread, bf, &w);
        // Latest query blocks (the most keys) first, so the dynamic schedule ends balanced.
#pragma omp for schedule(dynamic, 1)
        for (size_t task = 0; task < nqb * nbh; task++) {
            size_t qb = nqb - 1 - task / nbh, bh = task % nbh;
            size_t q0 = qb * ATT_BQ, nq = s->T - q0 < ATT_BQ ? s->T - q0 : ATT_BQ;
            if (small) attn_small_forward(s, q, k, v, out, lse, bh / s->Hkv, bh % s->Hkv, q0, nq, w.st);
            else attn_forward_block(s, q, k, v, out, lse, bh / s->Hkv, bh % s->Hkv, q0, nq, &w);
        }
    }
}

// Scratch of one backward task, owned by one thread.
typedef struct {
    float *kt, *vt;   // (hd, ATT_BK): key and value tiles transposed
    float *p, *ds;    // (ATT_BQ, ATT_BK): probabilities; dP, then dS
    float *f;         // (ATT_BQ, ATT_BK): ∂z/∂(q·k) = scale·(1 − (z/c)²); only with a soft-cap
    float *dk, *dv;   // (ATT_BK, hd): accumulators for the key tile; transposed, (hd, ATT_BK), where dkv_transposed
    float *D;         // (G, T): rowsum(dout ⊙ out) of each query row
    // bf16 products only (attention_bf16.h layouts; hdw = hd/2 words, hdp = hd rounded up to 16):
    uint32_t *kp, *vp;   // (hdw, ATT_BK): key and value tiles, pairs along hd, transposed
    uint32_t *kpr;       // (ATT_BK/2, hdp): the key tile, pairs along the keys
    uint32_t *pp, *dsp;  // (ATT_BQ/2, ATT_BK): P and dS, pairs along the queries
    uint32_t *dsw;       // (ATT_BQ, ATT_BK/2): dS, pairs along the keys
    uint32_t *tmp;       // (ATT_BK, hdw)
    // The queries and dout of each query tile in the layouts their products need, converted on first use in
    // a task and reused by every key tile: (G, T/ATT_BQ + 1) slots of bwd_tile_words, each qw, dow
    // (ATT_BQ, hdw: pairs along hd) then qpr, dop (ATT_BQ/2, hdp: pairs along the queries).
    uint32_t *qcache;
    uint32_t *cached;    // (G, T/ATT_BQ + 1): nonzero where a slot holds its tile's conversions
} attn_bwd_scratch;

// Words of one query tile's conversions in the backward: qw, dow (ATT_BQ, hdw); qpr, dop (ATT_BQ/2, hdp).
static size_t bwd_tile_words(size_t hd) { return 2 * ATT_BQ * (hd / 2) + 2 * (ATT_BQ / 2) * round16(hd); }

// Probabilities of a tile (queries q0.. as rows, keys k0.. as columns), given the raw dot products x (nq, ATT_BK)
// (overwritten) and lse (nq) of the rows: p = exp(z − lse) where the query may see the key and 0 elsewhere,
// and with a soft-cap f = ∂z/∂x (without one ∂z/∂x is the constant scale and f is not written).
ATT_CLONES static void attn_probs(const attn_shape *s, size_t q0, size_t k0, size_t nq, size_t nk, const float *lse,
                                  float *x, float *p, float *f) {
    float scale = s->scale, cap = s->softcap, inv = cap > 0 ? scale / cap : 0.0f;
    const bool avx512 = vm512_available();
    for (size_t i = 0; i < nq; i++) {
        float *xi = x + i * ATT_BK, *pi = p + i * ATT_BK, *fi = f + i * ATT_BK, l = lse[i];
        size_t c0, c1;
        attn_row_range(s, q0 + i, k0, nk, &c0, &c1);
        if (cap > 0) {
#pragma omp simd
            for (size_t j = 0; j < nk; j++) {
                float th = vm_tanhf(xi[j] * inv);
                pi[j] = (j >= c0 && j < c1) ? vm_expf(cap * th - l) : 0.0f;
                fi[j] = scale * (1.0f - th * th);
            }
        } else if (avx512) {
            probs_exp_avx512(nk, c0, c1, xi, scale, l, pi);
        } else {
            if (c0 > nk) c0 = nk;   // a window may end before this tile
            if (c1 < c0) c1 = c0;
            for (size_t j = 0; j < c0; j++) pi[j] = 0.0f;
#pragma omp simd
            for (size_t j = c0; j < c1; j++) pi[j] = vm_expf(scale * xi[j] - l);
            for (size_t j = c1; j < nk; j++) pi[j] = 0.0f;
        }
    }
}

// dS = P ⊙ (dP − D) ⊙ ∂z/∂x on a tile (nq, ATT_BK), in place on dp; D (nq) = rowsum(dout ⊙ out) of the rows.
ATT_CLONES static void attn_ds(const attn_shape *s, size_t nq, size_t nk, const float *p, const float *f,
                               const float *D, float *dp) {
    for (size_t i = 0; i < nq; i++) {
        const float *pi = p + i * ATT_BK, *fi = f + i * ATT_BK;
        float *di = dp + i * ATT_BK, Di = D[i], scale = s->scale;
        if (s->softcap > 0) {
#pragma omp simd
            for (size_t j = 0; j < nk; j++) di[j] = pi[j] * (di[j] - Di) * fi[j];
        } else {
#pragma omp simd
            for (size_t j = 0; j < nk; j++) di[j] = pi[j] * (di[j] - Di) * scale;
        }
    }
}

// Whether the fp32 backward accumulates dK and dV transposed: below 32 a product hd wide fills less than two
// vectors of the widest register tile (tile_mm), and the transposed one is ATT_BK wide. On the causal diagonal
// it runs over the whole tile (P and dS are zero where the mask hides a key) rather than the triangle.
static bool dkv_transposed(size_t hd) { return hd < 32; }

// Keys k0..k0+nk−1 of KV head kvh of sequence b, against every query of the group's G heads that sees them.
// Accumulates into dq (zeroed by the caller) and overwrites those rows of dk and dv.
static void attn_backward_block(const attn_shape *s, const float *q, const float *k, const float *v,
                                const float *lse, const float *dout, float *dq, float *dk, float *dv, size_t b,
                                size_t kvh, size_t k0, size_t nk, attn_bwd_scratch *w) {
    size_t T = s->T, H = s->H, Hkv = s->Hkv, hd = s->hd, G = H / Hkv;
    const float *kb = k + ((b * T + k0) * Hkv + kvh) * hd, *vb = v + ((b * T + k0) * Hkv + kvh) * hd;
    const size_t hdw = hd / 2, hdp = round16(hd);
    const bool bf = w->kp != NULL;
    if (bf) {
        attn_bf16_rows_transposed(w->kp, ATT_BK, kb, Hkv * hd, nk, hd, w->tmp);
        attn_bf16_rows_transposed(w->vp, ATT_BK, vb, Hkv * hd, nk, hd, w->tmp);
        attn_bf16_pairs(w->kpr, hdp, kb, Hkv * hd, nk, hd);
    } else {
        gemm_transpose(kb, Hkv * hd, w->kt, ATT_BK, nk, hd);
        gemm_transpose(vb, Hkv * hd, w->vt, ATT_BK, nk, hd);
    }
    // fp32 with a narrow head: dV and dK accumulate transposed (dVᵀ += dOᵀ P, dKᵀ += Qᵀ dS), products ATT_BK
    // keys wide instead of hd (full vectors, and a broadcast per 4 of them rather than per one).
    const bool dkv_t = !bf && dkv_transposed(hd);
    for (size_t i = 0; i < ATT_BK * hd; i++) w->dk[i] = 0, w->dv[i] = 0;
    // The last query that sees key k0+nk−1 is k0+nk−1 + window−1.
    size_t qend = s->window && k0 + nk - 1 + s->window < T ? k0 + nk - 1 + s->window : T;
    for (size_t g = 0; g < G; g++) {
        size_t h = kvh * G + g;
        for (size_t q0 = k0; q0 < qend; q0 += ATT_BQ) {
            size_t nq = qend - q0 < ATT_BQ ? qend - q0 : ATT_BQ;
            size_t row = (b * T + q0) * H + h;
            const float *qb = q + row * hd, *dob = dout + row * hd;
            float *dqb = dq + row * hd;
            const float *lse_q = lse + (b * H + h) * T + q0, *D_q = w->D + g * T + q0;
            if (bf) { // whole tiles: P and dS are zero wherever the mask hides a key
                const size_t nqw = (nq + 1) / 2, nkw = (nk + 1) / 2;
                // The query tile's own rows (a window may cut nq shorter: the rows past it meet zeros).
                const size_t nfull = T - q0 < ATT_BQ ? T - q0 : ATT_BQ, slot = g * (T / ATT_BQ + 1) + q0 / ATT_BQ;
                uint32_t *qw = w->qcache + slot * bwd_tile_words(hd), *dow = qw + ATT_BQ * hdw;
                uint32_t *qpr = dow + ATT_BQ * hdw, *dop = qpr + ATT_BQ / 2 * hdp;
                if (!w->cached[slot]) {
                    w->cached[slot] = 1;
                    attn_bf16_rows(qw, hdw, qb, H * hd, nfull, hd);
                    attn_bf16_rows(dow, hdw, dob, H * hd, nfull, hd);
                    attn_bf16_pairs(qpr, hdp, qb, H * hd, nfull, hd);
                    attn_bf16_pairs(dop, hdp, dob, H * hd, nfull, hd);
                }
                attn_bf16_mm(nq, nk, hdw, qw, hdw, 1, w->kp, ATT_BK, w->ds, ATT_BK, false);       // S = Q Kᵀ
                attn_probs(s, q0, k0, nq, nk, lse_q, w->ds, w->p, w->f);
                attn_bf16_pairs(w->pp, ATT_BK, w->p, ATT_BK, nq, nk);
                attn_bf16_mm(nk, hd, nqw, w->pp, 1, ATT_BK, dop, hdp, w->dv, hd, true);           // dV += Pᵀ dO
                attn_bf16_mm(nq, nk, hdw, dow, hdw, 1, w->vp, ATT_BK, w->ds, ATT_BK, false);     // dP = dO Vᵀ
                attn_ds(s, nq, nk, w->p, w->f, D_q, w->ds);
                attn_bf16_rows(w->dsw, ATT_BK / 2, w->ds, ATT_BK, nq, nk);
                attn_bf16_mm(nq, hd, nkw, w->dsw, ATT_BK / 2, 1, w->kpr, hdp, dqb, H * hd, true); // dQ += dS K
                attn_bf16_pairs(w->dsp, ATT_BK, w->ds, ATT_BK, nq, nk);
                attn_bf16_mm(nk, hd, nqw, w->dsp, 1, ATT_BK, qpr, hdp, w->dk, hd, true);         // dK += dSᵀ Q
                continue;
            }
            bool diag = q0 == k0;  // the first query tile of a key tile is its causal diagonal
            tile_mm(nq, nk, hd, qb, H * hd, 1, w->kt, ATT_BK, w->ds, ATT_BK, false, diag ? TRI_COLS : TRI_NONE);
            attn_probs(s, q0, k0, nq, nk, lse_q, w->ds, w->p, w->f);
            tri_mode kq = diag ? TRI_K_HI : TRI_NONE, kk = diag ? TRI_K_LO : TRI_NONE;
            tri_mode cols = diag ? TRI_COLS : TRI_NONE;
            if (dkv_t) tile_mm(hd, nk, nq, dob, 1, H * hd, w->p, ATT_BK, w->dv, ATT_BK, true, TRI_NONE);   // dVᵀ += dOᵀ P
            else tile_mm(nk, hd, nq, w->p, 1, ATT_BK, dob, H * hd, w->dv, hd, true, kk);               // dV += Pᵀ dO
            tile_mm(nq, nk, hd, dob, H * hd, 1, w->vt, ATT_BK, w->ds, ATT_BK, false, cols); // dP = dO Vᵀ
            attn_ds(s, nq, nk, w->p, w->f, D_q, w->ds);
            tile_mm(nq, hd, nk, w->ds, ATT_BK, 1, kb, Hkv * hd, dqb, H * hd, true, kq);    // dQ += dS K
            if (dkv_t) tile_mm(hd, nk, nq, qb, 1, H * hd, w->ds, ATT_BK, w->dk, ATT_BK, true, TRI_NONE);   // dKᵀ += Qᵀ dS
            else tile_mm(nk, hd, nq, w->ds, 1, ATT_BK, qb, H * hd, w->dk, hd, true, kk);               // dK += dSᵀ Q
        }
    }
    for (size_t j = 0; j < nk; j++)
        for (size_t d = 0; d < hd; d++) {
            size_t at = dkv_t ? d * ATT_BK + j : j * hd + d;
            dk[((b * T + k0 + j) * Hkv + kvh) * hd + d] = w->dk[at];
            dv[((b * T + k0 + j) * Hkv + kvh) * hd + d] = w->dv[at];
        }
}

// Floats of one thread's backward scratch, laid out as fwd_thread_floats: fp32 views, then the bf16 words
// (even hd), the qcache's flags (one word per slot) last.
static size_t bwd_floats(const attn_shape *s) {
    return 2 * s->hd * ATT_BK + 3 * ATT_BQ * ATT_BK + 2 * ATT_BK * s->hd + s->H / s->Hkv * s->T;
}
static size_t bwd_slots(const attn_shape *s) { return s->H / s->Hkv * (s->T / ATT_BQ + 1); }
static size_t bwd_thread_floats(const attn_shape *s) {
    const size_t hd = s->hd, hdw = hd / 2, hdp = round16(hd), slots = bwd_slots(s);
    const size_t words = 2 * hdw * ATT_BK + ATT_BK / 2 * hdp + 2 * (ATT_BQ / 2 * ATT_BK) + ATT_BQ * ATT_BK / 2 +
                         ATT_BK * hdw + slots * bwd_tile_words(hd) + slots;
    return round16(bwd_floats(s)) + (hd % 2 == 0 ? round16(words) : 0);
}

static void bwd_carve(const attn_shape *s, float *base, bool bf, attn_bwd_scratch *w) {
    const size_t hd = s->hd, hdw = hd / 2, hdp = round16(hd), kt_words = hdw * ATT_BK;
    const size_t ppair_words = ATT_BQ / 2 * ATT_BK;
    *w = (attn_bwd_scratch){0};
    w->kt = base, w->vt = w->kt + hd * ATT_BK, w->p = w->vt + hd * ATT_BK, w->ds = w->p + ATT_BQ * ATT_BK;
    w->f = w->ds + ATT_BQ * ATT_BK, w->dk = w->f + ATT_BQ * ATT_BK, w->dv = w->dk + ATT_BK * hd;
    w->D = w->dv + ATT_BK * hd;
    if (!bf) return;
    w->kp = (uint32_t *)(base + round16(bwd_floats(s))), w->vp = w->kp + kt_words, w->kpr = w->vp + kt_words;
    w->pp = w->kpr + ATT_BK / 2 * hdp, w->dsp = w->pp + ppair_words, w->dsw = w->dsp + ppair_words;
    w->tmp = w->dsw + ATT_BQ * ATT_BK / 2, w->qcache = w->tmp + ATT_BK * hdw;
    w->cached = w->qcache + bwd_slots(s) * bwd_tile_words(hd);
}

size_t attention_backward_workspace_floats(const attn_shape *s, size_t threads) {
    return threads * bwd_thread_floats(s);
}

// Parallel over (sequence, KV head): a task owns dk/dv of its KV head and dq of the G query heads that read
// it, so nothing is shared between threads and the result does not depend on the thread count.
void attention_backward(const attn_shape *s, const float *q, const float *k, const float *v, const float *out,
                        const float *lse, const float *dout, float *dq, float *dk, float *dv, float *work,
                        size_t work_floats) {
    attn_check_shape(s);
    size_t T = s->T, H = s->H, Hkv = s->Hkv, hd = s->hd, G = H / Hkv, per_thread = bwd_thread_floats(s);
    double flops = (double)s->B * H * T * (double)(s->window ? s->window : T) * hd;
    const bool bf = attn_use_bf16(s), small = !bf && attn_small_applies(s);
    SX_CHECK(!small || attn_small_scratch_floats(s) <= 3 * ATT_BQ * ATT_BK, "attention_small: its scratch outgrew p, ds and f");
#pragma omp parallel num_threads(attn_team(work_floats, per_thread)) if (flops > 1e6)
    {
        attn_bwd_scratch w;
        bwd_carve(s, work + (size_t)omp_get_thread_num() * per_thread, bf, &w);
#pragma omp for schedule(dynamic, 1)
        for (size_t task = 0; task < s->B * Hkv; task++) {
            size_t b = task / Hkv, kvh = task % Hkv;
            if (w.cached) memset(w.cached, 0, bwd_slots(s) * sizeof *w.cached);
            for (size_t t = 0; t < T; t++) {
                size_t row = ((b * T + t) * H + kvh * G) * hd;  // the G heads of the group are adjacent
                for (size_t i = 0; i < G * hd; i++) dq[row + i] = 0;
                for (size_t g = 0; g < G; g++) {
                    float acc = 0;
#pragma omp simd reduction(+ : acc)
                    for (size_t d = 0; d < hd; d++) acc += dout[row + g * hd + d] * out[row + g * hd + d];
                    w.D[g * T + t] = acc;
                }
            }
            if (small)   // p, ds and f are contiguous: the fused kernel's scratch
                for (size_t k0 = 0; k0 < T; k0 += ATTN_SMALL_KEYS)
                    attn_small_backward(s, q, k, v, lse, dout, w.D, dq, dk, dv, b, kvh, k0,
                                        T - k0 < ATTN_SMALL_KEYS ? T - k0 : ATTN_SMALL_KEYS, w.p);
            else
                for (size_t k0 = 0; k0 < T; k0 += ATT_BK)
                    attn_backward_block(s, q, k, v, lse, dout, dq, dk, dv, b, kvh, k0,
                                        T - k0 < ATT_BK ? T - k0 : ATT_BK, &w);
        }
    }
}
