// xent: softmax cross-entropy over the vocabulary fused with its gradient, on a block of logit rows.
// xent_forward_backward_ref is the specification (double arithmetic); the fast version vectorises each row
// and threads over rows. Not responsible for averaging over tokens (the caller picks grad_scale).
// -std=c11 turns off FMA contraction; the exp polynomials want it. Deterministic for a given build.
#pragma GCC optimize("fp-contract=fast")

#include "core/status.h"
#include "kernels/xent.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "kernels/vecmath.h"
#include "kernels/vecmath_avx512.h"

static void check_target(int32_t t, size_t V) {
    SX_CHECK(t < (int64_t)V, "targets must be below the vocabulary: the data and the model disagree (the loader checks shards)");
}

static void check_extra(const xent_extra *x) {
    SX_CHECK(!x || (x->n <= XENT_MAX_EXTRA && (x->n == 0 || (x->targets && x->w))),
             "xent_extra: at most XENT_MAX_EXTRA columns, with targets and weights");
}

double xent_forward_backward_ref(size_t N, size_t V, const float *logits, const int32_t *targets, xent_extra *extra,
                                 float softcap, float grad_scale, float *dlogits) {
    check_extra(extra);
    const size_t n_x = extra ? extra->n : 0;
    double total = 0, aux = 0;
    for (size_t i = 0; i < N; i++) {
        const float *l = logits + i * V;
        float *d = dlogits ? dlogits + i * V : NULL;
        int32_t tgt = targets[i];
        const int32_t *tx = n_x ? extra->targets + i * n_x : NULL;
        check_target(tgt, V);
        for (size_t k = 0; k < n_x; k++) check_target(tx[k], V);
        if (tgt < 0) {
            if (d)
                for (size_t j = 0; j < V; j++) d[j] = 0;
            continue;
        }
        double mx = -INFINITY;
        for (size_t j = 0; j < V; j++) {
            double z = softcap > 0 ? softcap * tanh(l[j] / (double)softcap) : l[j];
            if (z > mx) mx = z;
        }
        double sum = 0, zt = 0, zx[XENT_MAX_EXTRA] = {0};
        for (size_t j = 0; j < V; j++) {
            double z = softcap > 0 ? softcap * tanh(l[j] / (double)softcap) : l[j];
            sum += exp(z - mx);
            if (j == (size_t)tgt) zt = z;
            for (size_t k = 0; k < n_x; k++)
                if (tx[k] == (int32_t)j) zx[k] = z;
        }
        double lse = mx + log(sum), mass = 1;
        total += lse - zt;
        for (size_t k = 0; k < n_x; k++)
            if (tx[k] >= 0) aux += extra->w[k] * (lse - zx[k]), mass += extra->w[k];
        if (!d) continue;
        for (size_t j = 0; j < V; j++) {  // reads l[j] before writing d[j]: dlogits may alias logits
            double z = softcap > 0 ? softcap * tanh(l[j] / (double)softcap) : l[j];
            double g = mass * exp(z - lse) - (j == (size_t)tgt ? 1.0 : 0.0);
            for (size_t k = 0; k < n_x; k++)
                if (tx[k] == (int32_t)j) g -= extra->w[k];
            if (softcap > 0) g *= 1.0 - (z / softcap) * (z / softcap);
            d[j] = (float)(grad_scale * g);
        }
    }
    if (extra) extra->loss = aux;
    return total;
}

// Σ_j e[j] with e[j] = exp(z[j] − mx): the hot loop of a small model's step (a 2048-token vocabulary's
// exponentials were 15% of a width-32 rung's step on one thread; the AVX-512 form makes that step ~8% faster).
// next: the row the caller reads after this one (NULL: none), which the AVX-512 form pulls into the cache
// while it computes: the max pass over a row reads logits the head's GEMM wrote megabytes earlier.
typedef float (*exp_sum_fn)(size_t V, const float *z, float mx, float *e, const float *next);

__attribute__((target_clones("avx2", "default")))
static float exp_sum_portable(size_t V, const float *z, float mx, float *e, const float *next) {
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t j = 0; j < V; j++) {
        e[j] = vm_expf(z[j] - mx);
        sum += e[j];
    }
    return sum;
}

// Two vectors a step, so that two polynomials are in flight; the tail is masked.
__attribute__((target("avx512f"))) static float exp_sum_avx512(size_t V, const float *z, float mx, float *e,
                                                               const float *next) {
    const __m512 m = _mm512_set1_ps(mx);
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    size_t j = 0;
    for (; j + 32 <= V; j += 32) {
        if (next) _mm_prefetch((const char *)(next + j), _MM_HINT_T0), _mm_prefetch((const char *)(next + j + 16), _MM_HINT_T0);
        __m512 a = vm512_expf(_mm512_sub_ps(_mm512_loadu_ps(z + j), m));
        __m512 b = vm512_expf(_mm512_sub_ps(_mm512_loadu_ps(z + j + 16), m));
        _mm512_storeu_ps(e + j, a), _mm512_storeu_ps(e + j + 16, b);
        s0 = _mm512_add_ps(s0, a), s1 = _mm512_add_ps(s1, b);
    }
    for (; j < V; j += 16) {
        const __mmask16 k = vm512_lanes(j, 0, V);
        __m512 a = _mm512_maskz_mov_ps(k, vm512_expf(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, z + j), m)));
        _mm512_mask_storeu_ps(e + j, k, a);
        s0 = _mm512_add_ps(s0, a);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

// One row: returns loss = logsumexp(z) − z[tgt] and, if d is non-NULL, writes
// d = grad_scale·((1 + Σw)·softmax(z) − onehot(tgt) − Σ_k w_k·onehot(tx_k)) ⊙ ∂z/∂ℓ; *aux = Σ_k w_k·(lse − z[tx_k])
// over the n_x extra targets tx (those < 0 skipped). ebuf (V) is scratch. l and d may alias: each l[j] is
// read before d[j] is written.
__attribute__((target_clones("avx512f", "avx2", "default")))
static double xent_row(size_t V, const float *l, int32_t tgt, size_t n_x, const int32_t *tx, const float *wx, float cap,
                       float grad_scale, exp_sum_fn exp_sum, const float *next, float *ebuf, float *d, double *aux) {
    float mx = -INFINITY, inv = cap > 0 ? 1.0f / cap : 0.0f;
    if (cap > 0) {  // ebuf holds z until it is overwritten with exp(z − max)
#pragma omp simd reduction(max : mx)
        for (size_t j = 0; j < V; j++) {
            float z = cap * vm_tanhf(l[j] * inv);
            ebuf[j] = z;
            mx = z > mx ? z : mx;
        }
    } else {
#pragma omp simd reduction(max : mx)
        for (size_t j = 0; j < V; j++) mx = l[j] > mx ? l[j] : mx;
    }
    const float *z = cap > 0 ? ebuf : l;
    float zt = z[tgt], zx[XENT_MAX_EXTRA], mass = 1.0f;
    for (size_t k = 0; k < n_x; k++)
        if (tx[k] >= 0) zx[k] = z[tx[k]], mass += wx[k];
    const float sum = exp_sum(V, z, mx, ebuf, next);
    const double lse = (double)mx + log((double)sum);
    double loss = lse - zt, extra_loss = 0;
    for (size_t k = 0; k < n_x; k++)
        if (tx[k] >= 0) extra_loss += wx[k] * (lse - zx[k]);
    *aux = extra_loss;
    if (!d) return loss;
    float k = grad_scale * mass / sum;   // mass is exactly 1 without extras: the plain gradient, bit for bit
    if (cap > 0) {
#pragma omp simd
        for (size_t j = 0; j < V; j++) {
            float th = vm_tanhf(l[j] * inv);
            d[j] = k * ebuf[j] * (1.0f - th * th);
        }
        float u = zt * inv;
        d[tgt] -= grad_scale * (1.0f - u * u);
        for (size_t x = 0; x < n_x; x++)
            if (tx[x] >= 0) u = zx[x] * inv, d[tx[x]] -= grad_scale * wx[x] * (1.0f - u * u);
    } else {
#pragma omp simd
        for (size_t j = 0; j < V; j++) d[j] = k * ebuf[j];
        d[tgt] -= grad_scale;
        for (size_t x = 0; x < n_x; x++)
            if (tx[x] >= 0) d[tx[x]] -= grad_scale * wx[x];
    }
    return loss;
}

// Workspace: the rows' losses and extra losses (2N doubles), then one V-float exp buffer per thread, each
// starting on a 64-byte boundary.
enum { EBUF_ALIGN = 16 };
static size_t ebuf_stride(size_t V) { return (V + EBUF_ALIGN - 1) & ~(size_t)(EBUF_ALIGN - 1); }
static size_t slots_floats(size_t N) { return (4 * N + EBUF_ALIGN - 1) & ~(size_t)(EBUF_ALIGN - 1); }

size_t xent_workspace_floats(size_t N, size_t V, int threads) {
    return slots_floats(N) + (size_t)(threads > 1 ? threads : 1) * ebuf_stride(V);
}

// Rows are independent: threads split them, each row's losses land in their own slots and the slots are
// summed in row order afterwards, so the totals do not depend on the thread count.
double xent_forward_backward(size_t N, size_t V, const float *logits, const int32_t *targets, xent_extra *extra,
                             float softcap, float grad_scale, float *dlogits, float *work, size_t work_floats) {
    check_extra(extra);
    SX_CHECK(work && ((uintptr_t)work & 7) == 0 && work_floats >= xent_workspace_floats(N, V, 1),
             "give xent_forward_backward an 8-byte aligned workspace of xent_workspace_floats(N, V, threads) floats");
    const size_t n_x = extra ? extra->n : 0;
    double *row_loss = (double *)work, *row_aux = row_loss + N;
    float *ebufs = work + slots_floats(N);
    const size_t fit = (work_floats - slots_floats(N)) / ebuf_stride(V);
    const int threads = (int)(fit < (size_t)omp_get_max_threads() ? fit : (size_t)omp_get_max_threads());
    const exp_sum_fn exp_sum = vm512_available() ? exp_sum_avx512 : exp_sum_portable;
#pragma omp parallel num_threads(threads) if (N * V >= (1u << 16))
    {
        float *ebuf = ebufs + (size_t)omp_get_thread_num() * ebuf_stride(V);
#pragma omp for schedule(static)
        for (size_t i = 0; i < N; i++) {
            int32_t tgt = targets[i];
            const int32_t *tx = n_x ? extra->targets + i * n_x : NULL;
            check_target(tgt, V);
            for (size_t k = 0; k < n_x; k++) check_target(tx[k], V);
            float *d = dlogits ? dlogits + i * V : NULL;
            if (tgt < 0) {
                row_loss[i] = row_aux[i] = 0;
                if (d) memset(d, 0, V * sizeof(float));
            } else {
                row_loss[i] = xent_row(V, logits + i * V, tgt, n_x, tx, n_x ? extra->w : NULL, softcap, grad_scale,
                                       exp_sum, i + 1 < N ? logits + (i + 1) * V : NULL, ebuf, d, row_aux + i);
            }
        }
    }
    double total = 0, aux = 0;
    for (size_t i = 0; i < N; i++) total += row_loss[i], aux += row_aux[i];
    if (extra) extra->loss = aux;
    return total;
}

void xent_offset_targets(size_t B, size_t T, const int32_t *tokens, size_t mtp, const int32_t *prefix, int32_t *out) {
    const size_t n = mtp + (prefix != NULL);
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const int32_t *next = tokens + b * (T + 1) + t + 1;   // next[0] is the row's next-token target
            int32_t *o = out + (b * T + t) * n;
            for (size_t k = 1; k <= mtp; k++) o[k - 1] = next[0] >= 0 && t + 1 + k <= T ? next[k] : -1;
            if (prefix) o[mtp] = next[0] >= 0 ? prefix[next[0]] : -1;
        }
}
