// compare_coverage: Monte-Carlo check of `compare`'s multiplier intervals (scale/compare.h) on synthetic
// ladders with a planted answer: is a 95% interval right 95% of the time at few seeds?
// Ladders: 5 rungs at 1e10 .. 3.9e11 FLOPs (x2.5 apart), final loss L(C) = 3 + 2·(C/1e10)^-0.25 (4.7 .. 3.8,
// the demo rungs' range) plus independent normal seed noise sigma per run and ladder (nothing shared, so
// pairing cancels none of it: the hardest case for the paired interval). The variant's law is the baseline's
// at m times the compute (A·m^-0.25), so its true multiplier is m at every target. Cases: m = 1 (identical laws)
// and 1.05; sigma 0.002 and 0.01 (the spread over seeds of per-seed loss differences measured on a synthetic
// MHA-vs-MQA ladder in the README: 0.004–0.019); 2, 3, 4, 6, 10 seeds per rung; targets inside the rungs (their
// geometric middle), 10x and 100x the largest. Last, a family of three variants identical to the baseline
// (sigma 0.01): the chance that any of the Holm-adjusted verdicts names a winner or loser.
// Prints per case: how often the paired and the unpaired 95% interval hold the true multiplier, how often the
// verdict decides (for m = 1 every decision is false, and should be <= 5%), and the median paired width.
// Usage: compare_coverage [REPLICATES]   (default 100; each replicate compares once per target)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "core/rng.h"
#include "laws/fit.h"
#include "scale/compare.h"

#define RUNGS 5
#define MAX_SEEDS 10
#define MAX_LADDERS 4

static double law(double C, double m) { return 3 + 2 * pow(m * C / 1e10, -0.25); }

static double field(json_t *r, size_t i, const char *key) {
    json_t *v = json_object_get(json_array_get(json_object_get(r, "variants"), i), key);
    return json_is_number(v) ? json_number_value(v) : json_is_null(v) ? INFINITY : NAN;
}

// Fresh seed noise for n ladders (ladder 0 the baseline at multiplier 1, the others at m), S seeds per rung.
// final (n, RUNGS * S) overwritten.
static void draw_ladders(rng_state *rng, const double *flops, size_t n, size_t S, double m, double sigma, double *final) {
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < RUNGS; r++)
            for (size_t k = 0; k < S; k++) final[(i * RUNGS + r) * S + k] = law(flops[r], i ? m : 1) + sigma * rng_normal(rng);
}

typedef struct { size_t cover_p, cover_u, decided, n; double *width; } tally;

// One case: reps replicates of n ladders, each compared at every target; one tally per target.
static void run_case(size_t n, size_t S, double m, double sigma, const double *targets, size_t nt, size_t reps, tally *t) {
    double flops[RUNGS], final[MAX_LADDERS * RUNGS * MAX_SEEDS];
    size_t seeds[RUNGS];
    for (size_t r = 0; r < RUNGS; r++) { flops[r] = 1e10 * pow(2.5, (double)(RUNGS - 1 - r)); seeds[r] = S; }
    compare_ladder l[MAX_LADDERS];
    const char *names[MAX_LADDERS] = {"base", "v1", "v2", "v3"};
    for (size_t i = 0; i < n; i++) l[i] = (compare_ladder){names[i], RUNGS, flops, seeds, final + i * RUNGS * S};
    rng_state rng;
    rng_seed(&rng, 7 + S * 1000 + (size_t)(sigma * 1e6) + (size_t)(m * 1e3) + n * 100000);
    for (size_t c = 0; c < nt; c++) t[c] = (tally){.width = calloc(reps, sizeof(double))};
    for (size_t rep = 0; rep < reps; rep++) {
        draw_ladders(&rng, flops, n, S, m, sigma, final);
        for (size_t c = 0; c < nt; c++) {
            json_t *r = NULL;
            if (compare_finals(l, n, targets[c], false, &r)) { fprintf(stderr, "compare failed\n"); exit(1); }
            bool any = false;
            for (size_t i = 1; i < n; i++) any = any || json_is_true(json_object_get(json_array_get(json_object_get(r, "variants"), i), "decided"));
            double plo = field(r, 1, "paired_lo"), phi = field(r, 1, "paired_hi");
            t[c].cover_p += plo <= m && m <= phi;
            t[c].cover_u += field(r, 1, "multiplier_lo") <= m && m <= field(r, 1, "multiplier_hi");
            t[c].decided += any;
            t[c].width[t[c].n++] = phi / plo;
            json_decref(r);
        }
    }
}

int main(int argc, char **argv) {
    size_t reps = argc > 1 ? (size_t)atol(argv[1]) : 100;
    const size_t seed_counts[] = {2, 3, 4, 6, 10};
    const double sigmas[] = {0.002, 0.01}, mults[] = {1, 1.05};
    const double largest = 1e10 * pow(2.5, RUNGS - 1);
    const double targets[] = {sqrt(1e10 * largest), 10 * largest, 100 * largest};
    const char *tname[] = {"inside", "10x", "100x"};
    if (reps < 1) { fprintf(stderr, "usage: compare_coverage [REPLICATES >= 1]\n"); return 2; }
    printf("%zu replicates a case; 5 rungs 1e10..%.2g FLOPs; paired/unpaired: %% of 95%% intervals holding the true multiplier; "
           "decided: %% of verdicts that name a winner or loser; width: median paired hi/lo\n", reps, largest);
    printf("%-8s %6s %5s %7s %8s %10s %8s %9s\n", "true m", "sigma", "seeds", "target", "paired", "unpaired", "decided", "width");
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < 2; b++)
            for (size_t s = 0; s < sizeof seed_counts / sizeof *seed_counts; s++) {
                tally t[3];
                run_case(2, seed_counts[s], mults[a], sigmas[b], targets, 3, reps, t);
                for (size_t c = 0; c < 3; c++) {
                    printf("%-8.2f %6.3f %5zu %7s %7.1f%% %9.1f%% %7.1f%% %9.4f\n", mults[a], sigmas[b], seed_counts[s], tname[c],
                           100.0 * (double)t[c].cover_p / (double)reps, 100.0 * (double)t[c].cover_u / (double)reps,
                           100.0 * (double)t[c].decided / (double)reps, fit_quantile(t[c].width, reps, 0.5));
                    free(t[c].width);
                }
            }
    printf("family of 3 variants identical to the baseline, sigma 0.01: %% of replicates where any verdict decides\n");
    for (size_t s = 0; s < sizeof seed_counts / sizeof *seed_counts; s++) {
        tally t[3];
        run_case(4, seed_counts[s], 1, 0.01, targets, 3, reps, t);
        printf("seeds %2zu:", seed_counts[s]);
        for (size_t c = 0; c < 3; c++) {
            printf("  %s %5.1f%%", tname[c], 100.0 * (double)t[c].decided / (double)reps);
            free(t[c].width);
        }
        printf("\n");
    }
    return 0;
}
