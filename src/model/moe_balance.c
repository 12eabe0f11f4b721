#include <stdbool.h>
#include "core/status.h"
#include "model/moe_balance.h"

void moe_choose(size_t T, size_t E, size_t K, const float *key, const float *bias, int32_t *idx_all, float *alpha) {
    size_t picks = K + (alpha ? 1 : 0);
    for (size_t t = 0; t < T; t++) {
        const float *s = key + t * E;
        int32_t *idx = idx_all + t * K;
        for (size_t j = 0; j < picks; j++) {
            long best = -1;
            float best_v = 0;
            for (size_t e = 0; e < E; e++) {
                bool taken = false;
                for (size_t i = 0; i < j; i++) taken |= idx[i] == (int32_t)e;
                float val = s[e] + (bias ? bias[e] : 0.0f);
                if (!taken && (best < 0 || val > best_v)) best = (long)e, best_v = val;
            }
            if (j < K) idx[j] = (int32_t)best;
            else alpha[t] = best_v;
        }
    }
}

void moe_bias_sign_update(size_t E, float rate, const float *load, float *b) {
    double mean = 0;
    for (size_t e = 0; e < E; e++) mean += load[e];
    mean /= (double)E;
    for (size_t e = 0; e < E; e++) b[e] += rate * (float)((load[e] < mean) - (load[e] > mean));
}

// Hoare partition around the middle element (descending), narrowing [lo, hi] to the side holding position
// k-1. O(n) expected; the middle pivot keeps already ordered columns linear too.
float moe_kth_largest(float *x, size_t n, size_t k) {
    SX_CHECK(k >= 1 && k <= n, "moe_kth_largest takes 1 <= k <= n");
    long lo = 0, hi = (long)n - 1, want = (long)k - 1;
    while (lo < hi) {
        float pivot = x[lo + (hi - lo) / 2];
        long i = lo, j = hi;
        while (i <= j) {
            while (x[i] > pivot) i++;
            while (x[j] < pivot) j--;
            if (i <= j) {
                float t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        // Now x[lo..j] >= pivot >= x[i..hi], and x[j+1..i-1] (if any) equal the pivot.
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return x[want];
    }
    return x[want];
}

void moe_qb_prices(size_t T, size_t E, size_t K, const float *u, const float *alpha, float *col, float *beta) {
    size_t k = T * K / E;
    if (k < 1) k = 1;
    for (size_t e = 0; e < E; e++) {
        for (size_t t = 0; t < T; t++) col[t] = u[t * E + e] - alpha[t];
        beta[e] = moe_kth_largest(col, T, k);
    }
}

void moe_qb_bias(size_t E, const float *beta_sum, float batches, float *b) {
    double mean = 0;
    for (size_t e = 0; e < E; e++) mean += beta_sum[e];
    mean /= (double)E;
    for (size_t e = 0; e < E; e++) b[e] = (float)((mean - beta_sum[e]) / batches);
}
