// hyperball: see hyperball.h.
#include "core/status.h"
#include "optim/hyperball.h"

#include <math.h>

#include "optim/optimizer.h"

enum { PAR_MIN = 32768 }; // elementwise loops shorter than this stay on one thread

void hyperball_step(float *w, const float *u, size_t n, double radius, double lr) {
    SX_CHECK(radius > 0, "hyperball_step: the radius must be positive (a zero matrix has no sphere to stay on)");
    const double u_norm = sqrt(optim_sumsq(u, n));
    const float k = u_norm > 0 ? (float)(lr * radius / u_norm) : 0.0f;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) w[i] -= k * u[i];
    const double w_norm = sqrt(optim_sumsq(w, n));
    // The step is a fraction lr of R along a unit direction, so for lr < 1 the moved point is never at 0.
    const float s = (float)(radius / w_norm);
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t i = 0; i < n; i++) w[i] *= s;
}
