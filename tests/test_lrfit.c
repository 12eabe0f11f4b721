// The LR rule from a sweep (laws/lrfit.h): the parabola's vertex is the planted optimum exactly on noise-free
// losses; across three widths the power law recovers the planted power and coefficient, predicts the hero's
// optimum at a larger width, and with noisy losses its standard error covers the truth (the errors over 200
// noisy sweeps are about 1 standard error, so the uncertainty is honest); on losses that climb faster above the
// optimum than below (as real sweeps do) the optima stay within 10% of the truth over a 16x sweep; a sweep whose losses are still falling
// or that bends the wrong way is refused; the ladder plans the sweep's runs.
#include <math.h>
#include "core/rng.h"
#include <stdlib.h>
#include <string.h>
#include "scale/ladder.h"
#include "laws/lrfit.h"
#include "support/testlib.h"

static const double mults[] = {0.25, 0.5, 1, 2, 4};
static double planted(double w) { return 0.02 * pow(64 / w, 0.8); }
static double loss_at(double w, double lr) { double x = log(lr / planted(w)); return 3 + 10 / w + 0.06 * x * x; }

static void sweep(double w, rng_state *r, double noise, lrfit_optimum *o) {
    double lr[5], loss[5];
    for (int i = 0; i < 5; i++) {
        lr[i] = 0.015 * pow(64 / w, 0.5) * mults[i];   // centred on a wrong rule, as a real sweep would be
        loss[i] = loss_at(w, lr[i]) * (1 + noise * (r ? rng_normal(r) : 0));
    }
    CHECK(lrfit_vertex(lr, loss, 5, noise > 0 ? noise : 0.001, o) == SX_OK);
    o->width = w;
}

static void test_exact(void) {
    lrfit_optimum o[3];
    const double widths[3] = {32, 64, 128};
    for (int i = 0; i < 3; i++) {
        sweep(widths[i], NULL, 0, &o[i]);
        CHECK_CLOSE(o[i].lr, planted(widths[i]), 1e-9, 0);
        CHECK_CLOSE(o[i].curvature, 0.06, 1e-9, 0);
    }
    lrfit_rule rule;
    CHECK(lrfit_power(o, 3, 64, &rule) == SX_OK);
    CHECK_CLOSE(rule.power, 0.8, 1e-6, 0);
    CHECK_CLOSE(exp(rule.log_coef), 0.02, 1e-6, 0);
    double se, cost;
    CHECK_CLOSE(lrfit_predict(&rule, 384, &se, &cost), planted(384), 1e-6, 0);
    CHECK(se < 0.1 && cost >= 0);   // the floor noise (0.1%) on three points per width, extrapolated 3x
}

static void test_noisy_coverage(void) {
    rng_state r;
    rng_seed(&r, 11);
    const double widths[3] = {32, 64, 128};
    double sum_z2 = 0;
    int covered = 0, trials = 200;
    for (int t = 0; t < trials; t++) {
        lrfit_optimum o[3];
        for (int i = 0; i < 3; i++) sweep(widths[i], &r, 0.002, &o[i]);
        lrfit_rule rule;
        CHECK(lrfit_power(o, 3, 64, &rule) == SX_OK);
        double se, lr = lrfit_predict(&rule, 384, &se, NULL), z = log(lr / planted(384)) / se;
        sum_z2 += z * z;
        covered += fabs(z) < 2;
    }
    double rms_z = sqrt(sum_z2 / trials);
    fprintf(stderr, "    hero LR error / its standard error: rms %.2f, %d/%d within 2 se\n", rms_z, covered, trials);
    CHECK(rms_z > 0.6 && rms_z < 1.4);
    CHECK(covered >= 0.85 * trials);
}

// Loss 3 + 0.1 (e^u - u - 1), u = ln(lr / optimum): steep above the optimum, flat below. A parabola through all
// five LRs (0.25x..4x) put the vertex at 0.77-0.83x the optimum; the best LR and its neighbours put it at 0.92-0.96x.
static void test_asymmetric(void) {
    const double widths[3] = {32, 64, 128};
    lrfit_optimum o[3];
    for (int w = 0; w < 3; w++) {
        double lr[5], loss[5];
        for (int i = 0; i < 5; i++) {
            lr[i] = 0.015 * pow(64 / widths[w], 0.5) * mults[i];
            double u = log(lr[i] / planted(widths[w]));
            loss[i] = 3 + 0.1 * (exp(u) - u - 1);
        }
        CHECK(lrfit_vertex(lr, loss, 5, 0.001, &o[w]) == SX_OK);
        if (!CHECK(fabs(log(o[w].lr / planted(widths[w]))) < 0.1))
            fprintf(stderr, "    width %g: optimum %g, planted %g\n", widths[w], o[w].lr, planted(widths[w]));
        o[w].width = widths[w];
    }
    lrfit_rule rule;
    CHECK(lrfit_power(o, 3, 64, &rule) == SX_OK);
    CHECK(fabs(rule.power - 0.8) < 0.1);
}

static void test_refusals(void) {
    double lr[4] = {1e-3, 2e-3, 4e-3, 8e-3}, down[4] = {3.0, 2.8, 2.65, 2.55}, two[4] = {1e-3, 1e-3, 2e-3, 2e-3};
    double cap[4] = {2.9, 3.0, 3.0, 2.9};
    lrfit_optimum o;
    CHECK(lrfit_vertex(lr, down, 4, 0.001, &o) == SX_ERR_NUMERIC);   // still falling: the optimum is beyond 8e-3
    CHECK(lrfit_vertex(lr, cap, 4, 0.001, &o) == SX_ERR_NUMERIC);    // a maximum, not a minimum
    double up[4] = {3.2, 3.0, 3.0, 3.2};
    CHECK(lrfit_vertex(two, up, 4, 0.001, &o) == SX_ERR_ARG);
    lrfit_rule rule;
    CHECK(lrfit_power(&o, 1, 64, &rule) == SX_ERR_ARG);
}

// The ladder key lr_sweep adds seed 1 of the swept rungs at each LR multiple (not 1x: the main run), after the
// main runs and branches; every run gets a rank.
static void test_ladder_plan(void) {
    FILE *f = fopen("build/tests/lrsweep.ladder", "w");
    fputs("name sw\ntrain synthetic:64\nmodel d1-hd16-w{width}\nwidths 32 48 64 96\nseeds 2\nseq 16\nbatch 2\n"
          "lr 1e-2\nlr_ref_width 64\nlr_sweep 0.5 1 2\nbranches 0.5:0.2:linear\n", f);
    fclose(f);
    ladder_spec s;
    CHECK(ladder_spec_read("build/tests/lrsweep.ladder", &s) == SX_OK);
    ladder_run *runs = NULL;
    size_t n = 0;
    CHECK(ladder_plan(&s, &runs, &n) == SX_OK);
    CHECK(n == 4 * 2 * 2 + 3 * 2);   // mains + branches + 3 widths x 2 multipliers
    const char *want[] = {"w32-lr0.5", "w32-lr2", "w48-lr0.5", "w48-lr2", "w64-lr0.5", "w64-lr2"};
    for (size_t i = 0; i < 6 && n == 22; i++) {
        const ladder_run *x = &runs[16 + i];
        if (!CHECK(!strcmp(x->dir, want[i]))) fprintf(stderr, "    run %zu is %s\n", 16 + i, x->dir);
        CHECK(x->branch == LADDER_SWEEP && x->seed == 1);
        CHECK_CLOSE(x->lr, 1e-2 * (64.0 / (double)x->width) * (i % 2 ? 2 : 0.5), 1e-12, 0);
    }
    int owner[32];
    ladder_assign_ranks(&s, runs, n, 2, owner);
    for (size_t i = 0; i < n; i++) CHECK(owner[i] == 0 || owner[i] == 1);
    free(runs);
    f = fopen("build/tests/lrsweep.ladder", "a");
    fputs("lr_sweep_widths 40\n", f);
    fclose(f);
    CHECK(ladder_spec_read("build/tests/lrsweep.ladder", &s) == SX_OK);
    CHECK(ladder_plan(&s, &runs, &n) == SX_ERR_ARG && strstr(sx_last_error(), "40 is not a rung"));
}

// The hyperball's step is a fraction of each matrix's norm: hyper_lr is the same at every width and only the
// sweep multiplies it; an unknown optimizer is refused with its line.
static void test_ladder_hyper_lr(void) {
    FILE *f = fopen("build/tests/hyper.ladder", "w");
    fputs("train synthetic:64\nmodel d1-hd16-w{width}\nwidths 32 64\nseeds 1\nseq 16\nbatch 2\n"
          "optimizer muonh\nhyper_lr 0.03\nlr_sweep 0.5 1\n", f);
    fclose(f);
    ladder_spec s;
    ladder_run *runs = NULL;
    size_t n = 0;
    CHECK(ladder_spec_read("build/tests/hyper.ladder", &s) == SX_OK && !strcmp(s.optimizer, "muonh"));
    CHECK(ladder_plan(&s, &runs, &n) == SX_OK && n == 4);
    for (size_t i = 0; i < n && n == 4; i++) CHECK_CLOSE(runs[i].hyper_lr, i < 2 ? 0.03 : 0.015, 1e-12, 0);
    free(runs);
    f = fopen("build/tests/hyper.ladder", "a");
    fputs("optimizer adamhh\n", f);
    fclose(f);
    CHECK(ladder_spec_read("build/tests/hyper.ladder", &s) == SX_ERR_FORMAT && strstr(sx_last_error(), ":10: optimizer"));
}

int main(void) {
    TEST_RUN(test_exact);
    TEST_RUN(test_noisy_coverage);
    TEST_RUN(test_asymmetric);
    TEST_RUN(test_refusals);
    TEST_RUN(test_ladder_plan);
    TEST_RUN(test_ladder_hyper_lr);
    return testlib_finish("lrfit");
}
