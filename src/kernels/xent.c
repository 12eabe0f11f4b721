// xent: softmax cross-entropy over the vocabulary fused with its gradient, on a block of logit rows.
// xent_forward_backward_ref is the specification (double arithmetic); the fast version vectorises each row
// and threads over rows. Not responsible for averaging over tokens (the caller picks grad_scale).
// -std=c11 turns off FMA contraction; the exp polynomials want it. Deterministic for a given build.
#pragma GCC optimize("fp-contract=fast")

#include "core/status.h"
#include "kernels/xent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vecmath.h"

double xent_forward_backward_ref(size_t N, size_t V, const float *logits, const int32_t *targets,
                                 float softcap, float grad_scale, float *dlogits) {
    double total = 0;
    for (size_t i = 0; i < N; i++) {
        const float *l = logits + i * V;
        float *d = dlogits ? dlogits + i * V : NULL;
        int32_t tgt = targets[i];
        SX_CHECK(tgt < (int64_t)V, "targets must be below the vocabulary: the data and the model disagree (the loader checks shards)");
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
        double sum = 0, zt = 0;
        for (size_t j = 0; j < V; j++) {
            double z = softcap > 0 ? softcap * tanh(l[j] / (double)softcap) : l[j];
            sum += exp(z - mx);
            if (j == (size_t)tgt) zt = z;
        }
        double lse = mx + log(sum);
        total += lse - zt;
        if (!d) continue;
        for (size_t j = 0; j < V; j++) {  // reads l[j] before writing d[j]: dlogits may alias logits
            double z = softcap > 0 ? softcap * tanh(l[j] / (double)softcap) : l[j];
            double g = exp(z - lse) - (j == (size_t)tgt ? 1.0 : 0.0);
            if (softcap > 0) g *= 1.0 - (z / softcap) * (z / softcap);
            d[j] = (float)(grad_scale * g);
        }
    }
    return total;
}

// One row: returns loss = logsumexp(z) − z[tgt] and, if d is non-NULL, writes
// d = grad_scale·(softmax(z) − onehot) ⊙ ∂z/∂ℓ. ebuf (V) is scratch. l and d may alias: each l[j] is read
// before d[j] is written.
__attribute__((target_clones("avx512f", "avx2", "default")))
static double xent_row(size_t V, const float *l, int32_t tgt, float cap, float grad_scale, float *ebuf, float *d) {
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
    float zt = z[tgt], sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t j = 0; j < V; j++) {
        float e = vm_expf(z[j] - mx);
        ebuf[j] = e;
        sum += e;
    }
    double loss = (double)mx + log((double)sum) - zt;
    if (!d) return loss;
    float k = grad_scale / sum;
    if (cap > 0) {
#pragma omp simd
        for (size_t j = 0; j < V; j++) {
            float th = vm_tanhf(l[j] * inv);
            d[j] = k * ebuf[j] * (1.0f - th * th);
        }
        float u = zt * inv;
        d[tgt] -= grad_scale * (1.0f - u * u);
    } else {
#pragma omp simd
        for (size_t j = 0; j < V; j++) d[j] = k * ebuf[j];
        d[tgt] -= grad_scale;
    }
    return loss;
}

// Rows are independent: threads split them, each row's loss lands in its own slot and the slots are summed
// in row order afterwards, so the total does not depend on the thread count.
double xent_forward_backward(size_t N, size_t V, const float *logits, const int32_t *targets, float softcap,
                             float grad_scale, float *dlogits) {
    double *row_loss = sx_alloc((N ? N : 1) * sizeof(double), "xent row_loss");
    if (!row_loss) return NAN;   // sx_alloc_failures tells the caller why
#pragma omp parallel if (N * V >= (1u << 16))
    {
        float *ebuf = sx_alloc(V * sizeof(float), "xent ebuf");   // without it the rows are skipped (NaN loss)
#pragma omp for schedule(static)
        for (size_t i = 0; i < N; i++) {
            int32_t tgt = targets[i];
            SX_CHECK(tgt < (int64_t)V, "targets must be below the vocabulary: the data and the model disagree (the loader checks shards)");
            float *d = dlogits ? dlogits + i * V : NULL;
            if (tgt < 0) {
                row_loss[i] = 0;
                if (d) memset(d, 0, V * sizeof(float));
            } else if (!ebuf) {
                row_loss[i] = NAN;
            } else {
                row_loss[i] = xent_row(V, logits + i * V, tgt, softcap, grad_scale, ebuf, d);
            }
        }
        free(ebuf);
    }
    double total = 0;
    for (size_t i = 0; i < N; i++) total += row_loss[i];
    free(row_loss);
    return total;
}
