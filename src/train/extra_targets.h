// extra_targets: the extra cross-entropy targets of a training run (train --mtp, --prefix-aux; docs/MODEL.md
// "Loss"): the prefix map built once from the run's vocabulary, and the weights' schedule. Both weights end
// at zero at fraction --aux-end of the run, after which training is the plain next-token loss at its plain cost.
//   multi-token prediction (modded-nanogpt's parameter-free MTP): offset k = 1..K starts at 2^−k; the
//     schedule splits [0, end] into K equal stages and offset k decays linearly to zero over stage K−k+1
//     (K = 2, end 2/3: weights [.5, .25→0] over the first third, [.5→0] over the second, [] after).
//   prefix-token loss: w_p held over [0, end/2], then linearly to zero at end.
// Not responsible for the loss itself (kernels/xent.h, model/model.h) or for loading vocabularies (tok/).
#ifndef SEXTANT_EXTRA_TARGETS_H
#define SEXTANT_EXTRA_TARGETS_H
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"
#include "model/model.h"

typedef struct {
    size_t mtp;          // offsets 1..mtp
    double prefix_w;     // initial prefix-token weight (0: no prefix target)
    double end;          // fraction of the run at which every weight is zero
    int32_t *prefix;     // (vocab) the prefix map, or NULL
} extra_targets;

// From the options (mtp, prefix weight, end fraction, the vocabulary spec for the prefix map: "" means the
// .sxv beside train_data, with the hash its header names) for a model vocabulary of `vocab`. All off: x
// stays empty and costs nothing. Errors name the flag: a prefix loss without a vocabulary to build it from.
sx_status extra_targets_init(extra_targets *x, long mtp, double prefix_w, double end, const char *prefix_vocab,
                             const char *train_data, size_t vocab);
void extra_targets_free(extra_targets *x);
// The weights at fraction p in [0, 1] of the run into w (mtp values, then the prefix's when prefix_w > 0);
// returns how many (the model's n_extra).
size_t extra_targets_weights(const extra_targets *x, double p, float *w);
// Hands the targets to the model (before model_reserve).
sx_status extra_targets_attach(const extra_targets *x, model *m);
#endif
