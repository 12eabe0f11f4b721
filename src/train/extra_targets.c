// extra_targets: see extra_targets.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "data/shard.h"
#include "tok/prefixmap.h"
#include "tok/vocab_io.h"
#include "train/extra_targets.h"

// The prefix map of the vocabulary `spec`, or of the .sxv beside the training shard.
static sx_status build_prefix_map(extra_targets *x, const char *spec, const char *train_data, size_t vocab) {
    char beside[4096] = "";
    shard_header h;
    if (!spec || !*spec) {
        if (!strncmp(train_data, "synthetic:", 10) || shard_read_header(train_data, &h) != SX_OK ||
            !vocab_find_beside(train_data, h.vocab_hash, beside, sizeof beside))
            return sx_fail(SX_ERR_ARG, "--prefix-aux needs the vocabulary of %s to build its prefix map: none found "
                           "beside it; give --prefix-vocab (a .sxv file, a GPT-2 directory or [ENCODING:]FILE.tiktoken)",
                           train_data);
        spec = beside;
    }
    bpe_vocab *v;
    sx_status st = vocab_load(spec, &v);
    if (st) return sx_fail(st, "--prefix-vocab %s: %s", spec, sx_last_error());
    x->prefix = sx_alloc(vocab * sizeof *x->prefix, "prefix map");
    if (x->prefix) tok_prefix_map(v, vocab, x->prefix);
    bpe_vocab_free(v);
    return x->prefix ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory for the prefix map");
}

sx_status extra_targets_init(extra_targets *x, long mtp, double prefix_w, double end, const char *prefix_vocab,
                             const char *train_data, size_t vocab) {
    memset(x, 0, sizeof *x);
    if (mtp < 0 || mtp >= XENT_MAX_EXTRA)
        return sx_fail(SX_ERR_ARG, "--mtp must be between 0 (off) and %d, not %ld", XENT_MAX_EXTRA - 1, mtp);
    if (!(prefix_w >= 0 && prefix_w <= 10)) return sx_fail(SX_ERR_ARG, "--prefix-aux must be in [0, 10], not %g", prefix_w);
    if (!(end > 0 && end <= 1)) return sx_fail(SX_ERR_ARG, "--aux-end must be a fraction in (0, 1], not %g", end);
    x->mtp = (size_t)mtp;
    x->prefix_w = prefix_w;
    x->end = end;
    return prefix_w > 0 ? build_prefix_map(x, prefix_vocab, train_data, vocab) : SX_OK;
}

void extra_targets_free(extra_targets *x) {
    free(x->prefix);
    memset(x, 0, sizeof *x);
}

// base held until fraction a, then linearly to zero at b.
static double hold_then_decay(double base, double p, double a, double b) {
    return p <= a ? base : p >= b ? 0 : base * (b - p) / (b - a);
}

size_t extra_targets_weights(const extra_targets *x, double p, float *w) {
    const double stage = x->end / (double)(x->mtp ? x->mtp : 1);
    for (size_t k = 1; k <= x->mtp; k++)
        w[k - 1] = (float)hold_then_decay(ldexp(1.0, -(int)k), p, (double)(x->mtp - k) * stage, (double)(x->mtp - k + 1) * stage);
    if (x->prefix) w[x->mtp] = (float)hold_then_decay(x->prefix_w, p, x->end / 2, x->end);
    return x->mtp + (x->prefix != NULL);
}

sx_status extra_targets_attach(const extra_targets *x, model *m) {
    return x->mtp || x->prefix ? model_set_extra_targets(m, x->mtp, x->prefix) : SX_OK;
}
