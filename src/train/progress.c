// progress: the checked reader of a checkpoint's training position. See progress.h.
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "data/mixture.h"
#include "data/shard.h"
#include "optim/optimizer.h"
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

// Flags that change how a run is watched or communicates, not what it trains: they may differ on resume.
static const char *const free_flags[] = {
    "out", "resume", "threads", "quiet", "eval-every", "eval-at", "eval-batches", "eval-tasks", "eval-task-items", "eval-tasks-val", "ckpt-every", "save-at",
    "forecast", "peak-gflops", "on-spike", "spike-threshold", "branch-from", "init-from", "override", "resume-or-start",
    "bucket-mb", "zero1",
};

static bool listed(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, list[i])) return true;
    return false;
}

// A setting that neither run's optimizer reads (a ladder once scaled muon_lr for AdamW runs too): no difference.
static bool unread_by_both(const char *key, json_t *old_flags, json_t *new_flags) {
    static const char *const setting_of[][2] = {   // flag -> optimizer_kind_uses's name
        {"muon-lr", "muon_lr"}, {"muon-momentum", "muon_momentum"}, {"muon-wd", "muon_weight_decay"}, {"hyper-lr", "hyper_lr"},
    };
    optimizer_kind was, now;
    const char *a = json_string_value(json_object_get(old_flags, "optimizer")), *b = json_string_value(json_object_get(new_flags, "optimizer"));
    if (!a || !b || optimizer_kind_parse(a, &was) || optimizer_kind_parse(b, &now)) return false;
    for (size_t i = 0; i < sizeof setting_of / sizeof *setting_of; i++)
        if (!strcmp(key, setting_of[i][0]))
            return !optimizer_kind_uses(was, setting_of[i][1]) && !optimizer_kind_uses(now, setting_of[i][1]);
    return false;
}

// Whether key is one of the comma-separated names in overrides.
static bool overridden(const char *key, const char *overrides) {
    size_t k = strlen(key);
    for (const char *p = overrides; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == k && !strncmp(p, key, k)) return true;
        p = comma ? comma + 1 : p + len;
    }
    return false;
}

// Flags that name a data file: the same file may be named another way (relative, absolute) on resume.
static const char *const path_flags[] = {"train", "val", "eval-tasks-val", "prefix-vocab"};

json_t *train_paths_resolved(json_t *flags) {
    json_t *out = json_object();
    for (size_t i = 0; out && i < sizeof path_flags / sizeof *path_flags; i++) {
        const char *v = json_string_value(json_object_get(flags, path_flags[i]));
        char abs[PATH_MAX];
        if (v && *v && realpath(v, abs)) json_object_set_new(out, path_flags[i], json_string(abs));
    }
    return out;
}

// The token shards among the data flags (not synthetic data or a mixture spec), whose content a resume checks.
static const char *const shard_flags[] = {"train", "val", "eval-tasks-val"};

json_t *train_data_identity(json_t *flags) {
    json_t *out = json_object();
    for (size_t i = 0; out && i < sizeof shard_flags / sizeof *shard_flags; i++) {
        const char *v = json_string_value(json_object_get(flags, shard_flags[i]));
        shard_header h;
        char crc[16];
        if (!v || !*v || mixture_is_spec(v) || !strncmp(v, "synthetic:", 10) || shard_read_header(v, &h)) continue;
        snprintf(crc, sizeof crc, "%08x", (unsigned)h.crc);
        json_object_set_new(out, shard_flags[i], json_pack("{s:I, s:s}", "tokens", (json_int_t)h.n_tokens, "crc32", crc));
    }
    return out;
}

sx_status train_data_check_resume(json_t *old_identity, json_t *new_flags, const char *overrides, const char *from) {
    json_t *now = train_data_identity(new_flags);
    const char *key;
    json_t *was;
    sx_status st = SX_OK;
    json_object_foreach(old_identity, key, was) {
        json_t *is = json_object_get(now, key);
        if (st || overridden(key, overrides) || json_equal(was, is)) continue;
        const char *path = json_string_value(json_object_get(new_flags, key));
        st = sx_fail(SX_ERR_MISMATCH, "%s: --%s %s is not the data the run trained on (%lld tokens, CRC-32 %s; now %s%lld "
                     "tokens, CRC-32 %s): resume with that data, or pass --override %s for a deliberate change", from,
                     key, path ? path : "?", (long long)json_integer_value(json_object_get(was, "tokens")),
                     json_string_value(json_object_get(was, "crc32")), is ? "" : "no readable shard: ",
                     (long long)json_integer_value(json_object_get(is, "tokens")),
                     is ? json_string_value(json_object_get(is, "crc32")) : "-", key);
    }
    json_decref(now);
    return st;
}

// Whether the path flag key's new value names the file old_resolved recorded for it.
static bool same_file(json_t *old_resolved, const char *key, json_t *nv) {
    const char *was = json_string_value(json_object_get(old_resolved, key)), *now = json_string_value(nv);
    char abs[PATH_MAX];
    return was && now && listed(key, path_flags, sizeof path_flags / sizeof *path_flags) && realpath(now, abs) &&
           !strcmp(abs, was);
}

size_t train_flags_differ(json_t *old_flags, json_t *old_resolved, json_t *new_flags, const char *also_free,
                          const char *was, char *diff, size_t cap) {
    size_t used = 0, n = 0;
    const char *key;
    json_t *nv;
    if (cap) diff[0] = 0;
    json_object_foreach(new_flags, key, nv) {
        json_t *ov = json_object_get(old_flags, key);
        if (!ov || json_equal(ov, nv) || listed(key, free_flags, sizeof free_flags / sizeof *free_flags) ||
            overridden(key, also_free) || same_file(old_resolved, key, nv) || unread_by_both(key, old_flags, new_flags))
            continue;
        const size_t fmt = JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(9);
        char *a = json_dumps(ov, fmt), *b = json_dumps(nv, fmt);
        if (used < cap)
            used += (size_t)snprintf(diff + used, cap - used, "%s--%s %s (%s %s)", n ? ", " : "", key, b ? b : "?",
                                     was, a ? a : "?");
        free(a);
        free(b);
        n++;
    }
    return n;
}

sx_status train_config_check_resume(json_t *old_flags, json_t *old_resolved, json_t *new_flags, const char *overrides,
                                    const char *from) {
    if (!json_is_object(old_flags) || !json_is_object(new_flags)) return SX_OK;   // nothing recorded to compare with
    char diff[1024];
    if (!train_flags_differ(old_flags, old_resolved, new_flags, overrides, "was", diff, sizeof diff)) return SX_OK;
    return sx_fail(SX_ERR_MISMATCH, "%s holds a run with other settings: %s. Resume with the same flags, or pass "
                   "--override NAME[,NAME...] for a deliberate change (e.g. --override steps to extend the run)",
                   from, diff);
}
