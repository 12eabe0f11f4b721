#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include "scale/spending.h"

#define GRID_MAX 8001   // points of the density's grid at one look (odd: Simpson's rule)
#define TAIL 8.5        // standard deviations beyond which a normal's mass (< 1e-16) is dropped

double spending_obf(double t, double alpha) {
    if (!(t > 0)) return 0;
    if (t >= 1) return alpha;
    return 2 * gsl_cdf_ugaussian_Q(gsl_cdf_ugaussian_Qinv(alpha / 2) / sqrt(t));
}

double spending_pocock(double t, double alpha) {
    if (!(t > 0)) return 0;
    if (t >= 1) return alpha;
    return alpha * log(1 + (M_E - 1) * t);
}

// W's sub-density at a look on the continuation region, as masses m_i (density x Simpson weight) at points
// u_i = u0 + i·h (n of them; one point of mass 1 at 0 before the first look).
typedef struct {
    double *m, u0, h;
    size_t n;
} density;

// Probability of crossing ±b at a look s = √Δ later, without having crossed before.
static double crossing(const density *d, double b, double s) {
    double p = 0;
    for (size_t i = 0; i < d->n; i++) {
        double u = d->u0 + (double)i * d->h;
        p += d->m[i] * (gsl_cdf_ugaussian_Q((b + u) / s) + gsl_cdf_ugaussian_Q((b - u) / s));
    }
    return p;
}

// The density at the look s = √Δ later, on (−b, b), with a grid fine for the next increment s_next:
// next overwritten (its m allocated). Only the points within TAIL·s of each new point add to it.
static sx_status propagate(const density *d, double b, double s, double s_next, double sd, density *next) {
    b = fmin(b, TAIL * sd);   // W's sd at this look: beyond that nothing is left
    double h = fmin(s_next / 6, sd / 10);
    size_t n = (size_t)ceil(2 * b / h);
    n += n % 2 == 0;   // odd: Simpson's rule
    if (n > GRID_MAX) n = GRID_MAX;
    if (n < 3) n = 3;
    next->n = n;
    next->u0 = -b;
    next->h = 2 * b / (double)(n - 1);
    if (!(next->m = calloc(n, sizeof *next->m))) return SX_ERR_NOMEM;
    for (size_t j = 0; j < n; j++) {
        double w = next->u0 + (double)j * next->h, f = 0;
        long i0 = 0, i1 = (long)d->n - 1;
        if (d->n > 1) {
            i0 = (long)fmax(0, ceil((w - TAIL * s - d->u0) / d->h));
            i1 = (long)fmin((double)i1, floor((w + TAIL * s - d->u0) / d->h));
        }
        for (long i = i0; i <= i1; i++) {
            double z = (w - d->u0 - (double)i * d->h) / s;
            f += d->m[i] * exp(-0.5 * z * z);
        }
        double simpson = j == 0 || j == n - 1 ? 1 : j % 2 ? 4 : 2;
        next->m[j] = f / (s * sqrt(2 * M_PI)) * simpson * next->h / 3;
    }
    return SX_OK;
}

sx_status spending_levels(const double *t, const double *spent, size_t k, double *nominal) {
    for (size_t j = 0; j < k; j++) {
        if (!(t[j] > 0 && t[j] <= 1) || (j && t[j] < t[j - 1])) return sx_fail(SX_ERR_ARG, "information fractions must rise within (0, 1]");
        if (!(spent[j] >= 0 && spent[j] < 1) || (j && spent[j] < spent[j - 1])) return sx_fail(SX_ERR_ARG, "the alpha spent must rise within [0, 1)");
    }
    for (size_t j = 0; j < k; j++) nominal[j] = 0;   // a look that adds nothing, here or after the last that does
    double origin = 1;
    density d = {.m = &origin, .n = 1, .h = 1};
    double before = 0, spent_before = 0;   // t and alpha spent at the last look that added information
    sx_status st = SX_OK;
    for (size_t j = 0; j < k && !st; j++) {
        double delta = t[j] - before, spend = spent[j] - spent_before;
        if (!(delta > 0) || !(spend > 0)) continue;
        double s = sqrt(delta), sd = sqrt(t[j]), lo = 0, hi = 40;
        for (int it = 0; it < 100 && hi - lo > 1e-12; it++) {   // the crossing probability falls as the bound rises
            double c = 0.5 * (lo + hi);
            if (crossing(&d, c * sd, s) > spend) lo = c; else hi = c;
        }
        nominal[j] = 2 * gsl_cdf_ugaussian_Q(hi);
        size_t after = j + 1;   // the next look that adds information sets the grid's spacing
        while (after < k && !(t[after] > t[j])) after++;
        if (after == k) break;
        density next;
        if ((st = propagate(&d, hi * sd, s, sqrt(t[after] - t[j]), sd, &next))) break;
        if (d.m != &origin) free(d.m);
        d = next;
        before = t[j];
        spent_before = spent[j];
    }
    if (d.m != &origin) free(d.m);
    return st;
}
