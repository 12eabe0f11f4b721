// hyperball: the step of AdamH and MuonH (docs/MODEL.md "Optimizers"; "Fantastic Pretraining Optimizers II"):
// a matrix kept on the sphere of its initial Frobenius norm R, moved each step by a fixed fraction of R
// along a base optimizer's direction, instead of being shrunk by weight decay.
// Not responsible for: the direction (adam_direction, muon_direction), which tensors take it, or keeping R
// (optimizer.c holds it as state, so a resumed run continues on the same sphere).
#ifndef SEXTANT_HYPERBALL_H
#define SEXTANT_HYPERBALL_H
#include <stddef.h>

// In place on w (n), along u (n, read):
//   w = R · normalize(w − lr·R · normalize(u)),  normalize(a) = a / ‖a‖_F
// A zero u leaves the direction of w unchanged (only the renormalisation). Norms are summed in double over a
// fixed partition (optim_sumsq), so the result does not depend on the thread count. R > 0.
void hyperball_step(float *w, const float *u, size_t n, double radius, double lr);

#endif
