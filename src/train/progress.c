// progress: the checked reader of a checkpoint's training position. See progress.h.
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include "train/progress.h"

// A whole number in [lo, hi] at meta[key] into *out.
static sx_status whole(json_t *meta, const char *key, long lo, long hi, const char *from, long *out) {
    json_t *v = json_object_get(meta, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        sx_status st = sx_fail(SX_ERR_FORMAT, "%s: checkpoint field train.%s is %s, not a whole number in [%ld, %ld] "
                               "(a corrupted or hand-edited checkpoint)", from, key, text ? text : "missing", lo, hi);
        free(text);
        return st;
    }
    *out = (long)json_integer_value(v);
    return SX_OK;
}

// A finite number >= 0 at meta[key] into *out.
static sx_status amount(json_t *meta, const char *key, const char *from, double *out) {
    json_t *v = json_object_get(meta, key);
    double x = json_number_value(v);
    if (!json_is_number(v) || !(x >= 0) || !isfinite(x)) {
        char *text = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        sx_status st = sx_fail(SX_ERR_FORMAT, "%s: checkpoint field train.%s is %s, not a finite number >= 0 "
                               "(a corrupted or hand-edited checkpoint)", from, key, text ? text : "missing");
        free(text);
        return st;
    }
    *out = x;
    return SX_OK;
}

sx_status train_progress_read(json_t *meta, long total_steps, long optimizer_steps, const char *from,
                              train_progress *out) {
    sx_status st = whole(meta, "step", 0, LONG_MAX, from, &out->step);
    if (!st) st = amount(meta, "tokens_seen", from, &out->tokens_seen);
    if (!st) st = amount(meta, "flops_seen", from, &out->flops_seen);
    if (!st) st = amount(meta, "loss_avg", from, &out->loss_avg);
    if (!st) st = whole(meta, "loss_avg_n", 0, LONG_MAX, from, &out->loss_avg_n);
    if (st) return st;
    out->data = json_object_get(meta, "data");
    if (!json_is_object(out->data))
        return sx_fail(SX_ERR_FORMAT, "%s: checkpoint field train.data (the data position) is missing", from);
    if (out->step > total_steps)
        return sx_fail(SX_ERR_MISMATCH, "%s: checkpoint is at step %ld, beyond this run's %ld steps", from, out->step,
                       total_steps);
    if (optimizer_steps >= 0 && optimizer_steps != out->step)
        return sx_fail(SX_ERR_FORMAT, "%s: the optimizer has taken %ld steps but the run %ld (a corrupted or "
                       "hand-edited checkpoint: Adam's bias correction would restart)", from, optimizer_steps, out->step);
    return SX_OK;
}
