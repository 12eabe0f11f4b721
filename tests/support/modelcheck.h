// modelcheck: whole-model test helpers (see modelcheck.c). Failures are counted through testlib's CHECK.
#ifndef SEXTANT_MODELCHECK_H
#define SEXTANT_MODELCHECK_H
#include <stdint.h>
#include "model/model.h"

// Every tensor random and non-zero (gains near 1; routers scaled up so top-k choices have clear margins).
void modelcheck_randomize(model *m, uint64_t seed);
// Directional central differences of the training objective (cross-entropy + auxiliary loss) per tensor,
// along the gradient and a random direction, on a random batch of 2 x 7 tokens.
void modelcheck_gradcheck(const char *descriptor);
// The same with extra cross-entropy targets (model_set_extra_targets: mtp offsets, the prefix map of the
// descriptor's vocabulary or NULL) at weights w: the objective then includes their weighted loss.
void modelcheck_gradcheck_extra(const char *descriptor, size_t mtp, const int32_t *prefix, const float *w);
// tests/fixtures/<name>.sxt: logits, loss, gradients, and parameters after the fixture's AdamW and Muon steps.
void modelcheck_fixture(const char *name);

#endif
