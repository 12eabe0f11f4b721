// calibration: see calibration.h.
#include <math.h>
#include <stdlib.h>
#include "core/status.h"
#include "infer/calibration.h"

typedef struct { double s; bool pos; } scored;
static int by_score(const void *a, const void *b) {
    double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return x < y ? -1 : x > y;
}

double calib_auroc(const double *score, const bool *positive, size_t n) {
    scored *v = sx_alloc((n ? n : 1) * sizeof *v, "calibration order");
    if (!v) return NAN;
    size_t np = 0;
    for (size_t i = 0; i < n; i++) v[i] = (scored){score[i], positive[i]}, np += positive[i];
    qsort(v, n, sizeof *v, by_score);
    // Sum of the positives' ranks (1-based, tied groups share their mean rank) − np(np+1)/2 = the number of
    // (positive, negative) pairs ordered right, ties counting one half.
    double rank_sum = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, pos = 0;
        while (j < n && v[j].s == v[i].s) pos += v[j++].pos;
        rank_sum += (double)pos * ((double)(i + 1) + (double)j) / 2.0;
        i = j;
    }
    free(v);
    size_t nn = n - np;
    if (np == 0 || nn == 0) return NAN;
    return (rank_sum - (double)np * (double)(np + 1) / 2.0) / ((double)np * (double)nn);
}

double calib_ece(const double *score, const double *label, size_t n, size_t bins) {
    if (n == 0 || bins == 0) return NAN;
    double *sum_s = sx_calloc_n(bins, sizeof *sum_s, "ece s"), *sum_y = sx_calloc_n(bins, sizeof *sum_y, "ece y");
    size_t *cnt = sx_calloc_n(bins, sizeof *cnt, "ece n");
    double ece = NAN;
    if (sum_s && sum_y && cnt) {
        for (size_t i = 0; i < n; i++) {
            double s = fmin(fmax(score[i], 0), 1);
            size_t b = (size_t)(s * (double)bins);
            if (b >= bins) b = bins - 1;
            sum_s[b] += s, sum_y[b] += label[i], cnt[b]++;
        }
        ece = 0;
        for (size_t b = 0; b < bins; b++) ece += fabs(sum_s[b] - sum_y[b]) / (double)n;   // (n_b/n)·|mean_s − mean_y|
    }
    free(sum_s), free(sum_y), free(cnt);
    return ece;
}
