// The data-constrained law (laws/datalaw.h): effective tokens match the closed form (no repeats: D; many:
// U*(1+Rstar)); the analytic Jacobian matches finite differences; fitting synthetic losses made from known
// parameters over fresh and repeated runs recovers them (exactly without noise, within a few percent with
// 0.3% noise), and the repeat penalty a forecaster adds is zero without repeats and grows with them;
// fitted from paired run differences it recovers its planted parameters (with intervals that cover them
// under noise); applied to a forecast it moves each point by the penalty at its tokens and records the law.
#include <math.h>
#include <stdlib.h>
#include "core/rng.h"
#include <string.h>
#include <stdio.h>
#include "core/fsutil.h"
#include "scale/datafit.h"
#include "scale/ladder.h"
#include "laws/datalaw.h"
#include "laws/fit.h"
#include "support/testlib.h"

static const double truth[LAW_DC_NPARAM] = {[LAW_DC_E] = 1.7, [LAW_DC_A] = 400, [LAW_DC_B] = 2000,
                                            [LAW_DC_ALPHA] = 0.34, [LAW_DC_BETA] = 0.28, [LAW_DC_RSTAR] = 15};

static void test_effective_tokens(void) {
    CHECK(law_dc_effective_tokens(5e8, 1e9, 15) == 5e8);
    CHECK(law_dc_effective_tokens(5e8, 0, 15) == 5e8);
    CHECK_CLOSE(law_dc_effective_tokens(2e9, 1e9, 15), 1e9 + 1e9 * 15 * (1 - exp(-1.0 / 15)), 1e-12, 0);
    CHECK_CLOSE(law_dc_effective_tokens(1e15, 1e9, 15), 1e9 * 16, 1e-9, 0);   // saturates at U*(1+Rstar)
    // One repetition is worth almost a fresh pass; the 40th little.
    double d1 = law_dc_effective_tokens(2e9, 1e9, 15) - 1e9, d40 = law_dc_effective_tokens(41e9, 1e9, 15) -
                law_dc_effective_tokens(40e9, 1e9, 15);
    CHECK(d1 > 0.96e9 && d40 < 0.1e9);
    CHECK(law_dc_repeat_penalty(2000, 0.28, 15, 5e8, 1e9) == 0);
    double p4 = law_dc_repeat_penalty(2000, 0.28, 15, 4e9, 1e9), p16 = law_dc_repeat_penalty(2000, 0.28, 15, 16e9, 1e9);
    CHECK(p4 > 0 && p16 > 3 * p4);
}

// Points: 5 sizes x 4 token multipliers x 5 caps (fresh, and 1.5 to 40 passes).
static size_t make_points(double *N, double *D, double *U) {
    static const double sizes[] = {1e6, 3e6, 1e7, 3e7, 1e8}, mult[] = {5, 10, 20, 40}, passes[] = {0, 1.5, 4, 12, 40};
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) {
                N[n] = sizes[i];
                D[n] = mult[j] * sizes[i];
                U[n] = passes[k] > 0 ? D[n] / passes[k] : 0;
                n++;
            }
    return n;
}

static void fit_and_check(double noise, double rtol_exp, double rtol_rstar) {
    double N[100], D[100], U[100], obs[100];
    size_t n = make_points(N, D, U);
    rng_state r;
    rng_seed(&r, 42);
    for (size_t i = 0; i < n; i++) obs[i] = law_dc_eval(truth, N[i], D[i], U[i]) * (1 + noise * rng_normal(&r));
    fit_law law;
    CHECK(law_dc_bind(N, D, U, n, &law) == SX_OK);
    fit_options o;
    fit_options_default(&o);
    fit_result res;
    CHECK(fit_law_run(&law, obs, NULL, &o, &res) == SX_OK);
    CHECK_CLOSE(res.params[LAW_DC_ALPHA], truth[LAW_DC_ALPHA], rtol_exp, 0);
    CHECK_CLOSE(res.params[LAW_DC_BETA], truth[LAW_DC_BETA], rtol_exp, 0);
    CHECK_CLOSE(res.params[LAW_DC_RSTAR], truth[LAW_DC_RSTAR], rtol_rstar, 0);
    CHECK_CLOSE(res.params[LAW_DC_E], truth[LAW_DC_E], rtol_exp, 0);
    fprintf(stderr, "    noise %.1f%%: alpha %.4f beta %.4f Rstar %.3f E %.4f (mean |err| %.4f%%)\n", 100 * noise,
            res.params[LAW_DC_ALPHA], res.params[LAW_DC_BETA], res.params[LAW_DC_RSTAR], res.params[LAW_DC_E],
            100 * res.mean_abs_rel);
    fit_result_free(&res);
    fit_law_free(&law);
}

static void test_jacobian(void) {
    double N[100], D[100], U[100];
    size_t n = make_points(N, D, U);
    fit_law law;
    CHECK(law_dc_bind(N, D, U, n, &law) == SX_OK);
    double *pred = malloc(n * sizeof *pred), *jac = malloc(n * LAW_DC_NPARAM * sizeof *jac), *p2 = malloc(n * sizeof *p2);
    law.eval(law.ctx, truth, pred, jac);
    for (int j = 0; j < LAW_DC_NPARAM; j++) {
        double q[LAW_DC_NPARAM];
        for (int k = 0; k < LAW_DC_NPARAM; k++) q[k] = truth[k];
        double h = 1e-6 * truth[j];
        q[j] += h;
        law.eval(law.ctx, q, p2, NULL);
        for (size_t i = 0; i < n; i++) CHECK_CLOSE(jac[i * LAW_DC_NPARAM + j], (p2[i] - pred[i]) / h, 1e-4, 1e-9);
    }
    free(pred); free(jac); free(p2);
    fit_law_free(&law);
}

static void test_fit_recovers_exact(void) { fit_and_check(0, 1e-4, 1e-3); }
static void test_fit_recovers_noisy(void) { fit_and_check(0.003, 0.05, 0.15); }

// datafit_apply: the penalty at each forecast point's tokens, none before the data repeats; the method says
// which law was used (or that none could be).
static void test_apply_to_forecast(void) {
    const char *text = "{\"hero\": {\"tokens\": 4e6}, \"method\": {}, \"points\": [{\"frac\": 0.25, \"loss\": 3.0, "
                       "\"lo\": 2.9, \"hi\": 3.1}, {\"frac\": 1.0, \"loss\": 2.5, \"lo\": 2.4, \"hi\": 2.6}]}";
    json_t *dc = json_pack("{s:{s:f, s:f, s:f}}", "params", "B", 2000.0, "beta", 0.28, "Rstar", 15.0);
    json_t *fc = json_loads(text, 0, NULL);
    CHECK(datafit_apply(fc, dc, 1e6) == SX_OK);
    json_t *p0 = json_array_get(json_object_get(fc, "points"), 0), *p1 = json_array_get(json_object_get(fc, "points"), 1);
    double pen = law_dc_repeat_penalty(2000, 0.28, 15, 4e6, 1e6);
    CHECK(pen > 1e-3);
    CHECK(json_number_value(json_object_get(p0, "loss")) == 3.0);   // 1e6 tokens: the first pass
    CHECK_CLOSE(json_number_value(json_object_get(p1, "loss")), 2.5 + pen, 1e-12, 0);
    CHECK_CLOSE(json_number_value(json_object_get(p1, "hi")), 2.6 + pen, 1e-12, 0);
    json_t *dl = json_object_get(json_object_get(fc, "method"), "data_law");
    CHECK(strstr(json_string_value(json_object_get(dl, "law")), "data-constrained") != NULL);
    CHECK_CLOSE(json_number_value(json_object_get(dl, "passes")), 4, 1e-12, 0);
    json_decref(fc);
    fc = json_loads(text, 0, NULL);   // no fitted law: unchanged, and said
    CHECK(datafit_apply(fc, NULL, 1e6) == SX_OK);
    CHECK(json_number_value(json_object_get(json_array_get(json_object_get(fc, "points"), 1), "loss")) == 2.5);
    dl = json_object_get(json_object_get(fc, "method"), "data_law");
    CHECK(strstr(json_string_value(json_object_get(dl, "law")), "optimistic") != NULL);
    json_decref(fc);
    fc = json_loads(text, 0, NULL);   // enough unique data: fresh
    CHECK(datafit_apply(fc, dc, 1e7) == SX_OK);
    CHECK(json_number_value(json_object_get(json_array_get(json_object_get(fc, "points"), 1), "loss")) == 2.5);
    json_decref(fc);
    json_decref(dc);
}

// The repeat penalty from paired run differences: 6 run pairs (caps of 2e5, 5e5, 1e6 unique tokens, two run
// lengths), 10 evaluations each, losses differing by the planted penalty (B 50, beta 0.3, Rstar 8).
static size_t make_pairs(double noise, double *D, double *U, double *delta, size_t *group) {
    static const double caps[] = {2e5, 5e5, 1e6}, totals[] = {2e6, 8e6};
    rng_state r;
    rng_seed(&r, 5);
    size_t n = 0, g = 0;
    for (int c = 0; c < 3; c++)
        for (int t = 0; t < 2; t++, g++)
            for (int j = 1; j <= 10; j++) {
                D[n] = totals[t] * j / 10;
                U[n] = caps[c];
                delta[n] = law_dc_repeat_penalty(50, 0.3, 8, D[n], U[n]) + noise * rng_normal(&r);
                group[n++] = g;
            }
    return n;
}

static void test_penalty_fit(void) {
    double D[60], U[60], delta[60];
    size_t group[60], n = make_pairs(0, D, U, delta, group);
    datafit_result r;
    CHECK(datafit_penalty(D, U, delta, n, group, 6, &r) == SX_OK);
    CHECK_CLOSE(r.params[0], 50, 1e-3, 0);
    CHECK_CLOSE(r.params[1], 0.3, 1e-3, 0);
    CHECK_CLOSE(r.params[2], 8, 1e-3, 0);
    n = make_pairs(2e-4, D, U, delta, group);   // noise ~5% of the largest penalties
    CHECK(datafit_penalty(D, U, delta, n, group, 6, &r) == SX_OK);
    fprintf(stderr, "    noisy: B %.1f [%.1f, %.1f], beta %.3f [%.3f, %.3f], Rstar %.2f [%.2f, %.2f]\n", r.params[0], r.lo[0],
            r.hi[0], r.params[1], r.lo[1], r.hi[1], r.params[2], r.lo[2], r.hi[2]);
    CHECK_CLOSE(r.params[2], 8, 0.3, 0);
    CHECK(r.lo[2] <= 8 && r.hi[2] >= 8 && r.n_boot > 80);
    for (size_t i = 0; i < n; i++) delta[i] = -fabs(delta[i]);   // limited runs no worse: nothing to fit
    CHECK(datafit_penalty(D, U, delta, n, group, 6, &r) == SX_ERR_NUMERIC);
}


// One finished run as the trainer writes it (the fields rundir reads), evaluated every tenth of its steps at
// loss(tokens) = 2 + 30 tokens^-0.3 + penalty(tokens, U) + overfit (unique > 0: a data-limited twin).
static bool write_run(const char *dir, long steps, double unique, double overfit_from) {
    if (!CHECK(fs_mkdir_p(dir) == SX_OK)) return false;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *c = json_pack("{s:s, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:{s:I}}", "model", "d1-hd8-w8", "n_params",
                          (json_int_t)1000, "n_params_nonembed", (json_int_t)1000, "flops_per_token", 6000.0, "total_steps",
                          (json_int_t)steps, "total_tokens", (json_int_t)(steps * 1000), "batch_tokens", (json_int_t)1000,
                          "seed", (json_int_t)1, "model_config", "vocab", (json_int_t)64);
    if (unique > 0) json_object_set_new(c, "unique_tokens", json_real(unique));
    bool ok = json_dump_file(c, path, 0) == 0;
    json_decref(c);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "w");
    for (long step = 1; f && step <= steps; step++) {   // every step logged, as the trainer does
        double D = 1000.0 * step, loss = 2 + 30 * pow(D, -0.3);
        if (unique > 0) {
            loss += law_dc_repeat_penalty(50, 0.3, 3, D, unique);
            if (D / unique > overfit_from) loss += 0.05 * pow(D / unique - overfit_from, 2);   // loss rises: overfitting
        }
        fprintf(f, "{\"step\": %ld, \"lr\": 0.001, \"tokens\": %.17g, \"flops\": %.17g", step, D, 6000 * D);
        if (step % (steps / 10) == 0) fprintf(f, ", \"val_loss\": %.17g", loss);
        fputs("}\n", f);
    }
    ok = ok && f && fclose(f) == 0;
    snprintf(path, sizeof path, "%s/DONE", dir);
    FILE *d = fopen(path, "w");
    return CHECK(ok && d && fclose(d) == 0);
}

// A fresh ladder and its data-limited twin (200k unique tokens; the rungs reach 1-15 passes) whose twins start to
// overfit at 6 passes (their lowest loss is a little before): the fit leaves out each twin's points after its
// lowest loss, recovers the planted penalty from the rest and records where the twins stopped improving (before
// the change it fitted every point and missed Rstar).
static void test_ladders_leave_out_overfitting(void) {
    char tmp[] = "/tmp/sextant_datafit_XXXXXX", path[256], dir[2][300];
    if (!CHECK(mkdtemp(tmp) != NULL)) return;
    ladder_spec spec[2];
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s.ladder", tmp, k ? "lim" : "fresh");
        FILE *o = fopen(path, "w");
        if (!CHECK(o != NULL)) return;
        fprintf(o, "name %s\ntrain synthetic:64\nmodel d1-hd8-w{width}\nwidths 8 16 24 32\nseeds 1\ntokens_per_param 2\n"
                "seq 16\nbatch 4\n%s", k ? "lim" : "fresh", k ? "unique_tokens 2e5\n" : "");
        fclose(o);
        if (!CHECK(ladder_spec_read(path, &spec[k]) == SX_OK)) return;
        snprintf(dir[k], sizeof dir[k], "%s/runs-%d", tmp, k);
    }
    ladder_run *plan;
    size_t n;
    if (!CHECK(ladder_plan(&spec[1], &plan, &n) == SX_OK)) return;
    static const long steps[] = {200, 800, 1800, 3000};   // 1, 4, 9, 15 passes over 2e5 tokens
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (plan[i].branch != -1) continue;
        char a[4300];
        long st = steps[3 - w++ % 4];   // the plan lists the largest first
        snprintf(a, sizeof a, "%s/%s", dir[0], plan[i].dir);
        write_run(a, st, 0, 0);
        snprintf(a, sizeof a, "%s/%s", dir[1], plan[i].dir);
        write_run(a, st, 2e5, 6);
    }
    free(plan);
    json_t *out = NULL;
    if (!CHECK(datafit_ladders(&spec[0], dir[0], &spec[1], dir[1], &out) == SX_OK)) fprintf(stderr, "    %s\n", sx_last_error());
    json_t *p = json_object_get(out, "params"), *from = json_object_get(out, "overfits_from_passes");
    fprintf(stderr, "    Rstar %.3f beta %.3f, overfits from %.2f passes\n", json_number_value(json_object_get(p, "Rstar")),
            json_number_value(json_object_get(p, "beta")), json_number_value(from));
    CHECK_CLOSE(json_number_value(json_object_get(p, "Rstar")), 3, 0.05, 0);
    CHECK(json_is_number(from) && json_number_value(from) >= 4.5 && json_number_value(from) <= 7);
    json_decref(out);
}

int main(void) {
    TEST_RUN(test_effective_tokens);
    TEST_RUN(test_jacobian);
    TEST_RUN(test_fit_recovers_exact);
    TEST_RUN(test_fit_recovers_noisy);
    TEST_RUN(test_penalty_fit);
    TEST_RUN(test_apply_to_forecast);
    TEST_RUN(test_ladders_leave_out_overfitting);
    return testlib_finish("datalaw");
}
