#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/rng.h"
#include "model/config.h"
#include "scale/compare.h"
#include "laws/fit.h"
#include "model/flops.h"
#include "runs/import.h"
#include "scale/ladder_data.h"
#include "laws/laws.h"

#define N_BOOT COMPARE_BOOT

// One ladder's final losses, fitted; they stay for the bootstraps.
typedef struct {
    fit_law law;
    bool bound;              // law bound (variant_free frees it)
    fit_options fo;
    size_t R, S[LADDER_MAX_RUNGS], off[LADDER_MAX_RUNGS + 1];   // rungs, seeds of each, where each starts in final
    double x[LADDER_MAX_RUNGS], y[LADDER_MAX_RUNGS];   // rung compute (largest first), seed-mean final loss
    double *final;           // (off[R]) every seed's final loss, rung after rung
    double p[LAW_POW_NPARAM];
    double *boot, *pboot;    // (N_BOOT, LAW_POW_NPARAM): unpaired, paired replicates
    double kv_bytes, params; // NaN when unknown (a curve ladder)
    char largest[128];
} variant;

static void variant_free(variant *v) {
    if (v->bound) fit_law_free(&v->law);
    free(v->final);
    free(v->boot);
    free(v->pboot);
}

// seeds: (R) per rung.
static sx_status variant_alloc(variant *v, size_t R, const size_t *seeds) {
    v->R = R;
    v->off[0] = 0;
    for (size_t r = 0; r < R; r++) {
        v->S[r] = seeds[r];
        v->off[r + 1] = v->off[r] + seeds[r];
    }
    v->final = sx_alloc(v->off[R] * sizeof *v->final, "compare final");
    v->boot = sx_alloc(N_BOOT * LAW_POW_NPARAM * sizeof *v->boot, "compare v.boot");
    v->pboot = sx_alloc(N_BOOT * LAW_POW_NPARAM * sizeof *v->pboot, "compare v.pboot");
    return v->final && v->boot && v->pboot ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
}

// The final losses of one of sextant's own ladders (its main runs), its largest model's KV bytes and params.
static sx_status variant_read_own(const ladder_spec *spec, const char *dir, variant *v) {
    size_t R = spec->n_rungs, F = spec->n_eval, seeds[LADDER_MAX_RUNGS];
    for (size_t r = 0; r < R; r++) seeds[r] = ladder_rung_seeds(spec, r);
    if (R < 3 || fabs(spec->eval_at[F - 1] - 1) > 1e-9)
        return sx_fail(SX_ERR_ARG, "%s: comparison needs >= 3 rungs evaluated at the end of the run", spec->spec_path);
    ladder_data d;
    sx_status st = ladder_data_read(spec, dir, &d);
    if (!st) st = variant_alloc(v, R, seeds);
    for (size_t r = 0; !st && r < R; r++) {   // the plan's main runs lie rung after rung, as final does
        v->x[r] = d.plan[v->off[r]].flops;
        for (size_t i = v->off[r]; i < v->off[r + 1]; i++) v->final[i] = ladder_loss_at_frac(&d.runs[i], spec->eval_at[F - 1]);
    }
    model_config c;
    if (!st) {
        size_t vocab = (size_t)json_integer_value(json_object_get(json_object_get(d.runs[0].config, "model_config"), "vocab"));
        snprintf(v->largest, sizeof v->largest, "%s", d.plan[0].descriptor);
        if (model_config_parse(d.plan[0].descriptor, vocab, &c) == SX_OK) {
            model_flops mf = model_flops_count(&c, spec->seq);
            v->kv_bytes = mf.kv_cache_bytes_per_token;
            v->params = mf.params_active;
        }
    }
    ladder_data_free(&d);
    return st;
}

// The final losses of a curve ladder (runs/import.h): every group is a rung, the runs of its longest length
// its seeds (so an own ladder written by `import --from-ladder` gives its main runs; shorter runs, branches or
// other token multipliers, are left out), as many seeds per rung as the rung with fewest has; rungs ordered by
// compute, largest first. A run's final loss is its evaluation at its last step (the first loss column).
static sx_status variant_read_curves(const char *dir, variant *v) {
    import_ladder l;
    sx_status st = import_read_dir(dir, &l);
    size_t R = 0, S = SIZE_MAX, first[LADDER_MAX_RUNGS], seeds[LADDER_MAX_RUNGS];
    double flops[LADDER_MAX_RUNGS];
    for (size_t i = 0; !st && i < l.n_runs; i++) {   // each group's longest runs: where they start, how many
        const import_run *a = &l.runs[i];
        size_t g = 0;
        while (g < R && strcmp(l.runs[first[g]].group, a->group)) g++;
        if (g == R && R == LADDER_MAX_RUNGS) st = sx_fail(SX_ERR_ARG, "%s: more than %d groups to compare", dir, LADDER_MAX_RUNGS);
        else if (g == R || a->total_steps > l.runs[first[g]].total_steps) { first[g] = i; seeds[g] = 1; R += g == R; }
        else seeds[g] += a->total_steps == l.runs[first[g]].total_steps;
    }
    if (!st && R < 3) st = sx_fail(SX_ERR_ARG, "%s: comparison needs >= 3 groups (sizes), the ladder has %zu", dir, R);
    size_t order[LADDER_MAX_RUNGS];
    for (size_t g = 0; !st && g < R; g++) {   // by compute, largest first (insertion sort)
        const import_run *a = &l.runs[first[g]];
        flops[g] = import_run_flops(a, (double)a->total_steps * a->tokens_per_step);
        S = seeds[g] < S ? seeds[g] : S;
        size_t j = g;
        while (j > 0 && flops[order[j - 1]] < flops[g]) { order[j] = order[j - 1]; j--; }
        order[j] = g;
    }
    size_t same[LADDER_MAX_RUNGS] = {0};
    for (size_t r = 0; r < R; r++) same[r] = S;
    if (!st) st = variant_alloc(v, R, same);
    for (size_t r = 0; !st && r < R; r++) {
        const import_run *a = &l.runs[first[order[r]]];
        v->x[r] = flops[order[r]];
        for (size_t i = first[order[r]], k = 0; !st && k < S; i++) {
            const import_run *b = &l.runs[i];
            if (strcmp(b->group, a->group) || b->total_steps != a->total_steps) continue;
            if (b->step[b->n_points - 1] != b->total_steps)
                st = sx_fail(SX_ERR_ARG, "%s: run '%s' has no evaluation at its last step %ld (compare needs final losses)", dir,
                             b->id, b->total_steps);
            else v->final[r * S + k++] = b->loss[(b->n_points - 1) * l.n_loss];
        }
    }
    if (!st) {
        snprintf(v->largest, sizeof v->largest, "%s", l.runs[first[order[0]]].group);
        v->params = l.runs[first[order[0]]].n_params;
        v->kv_bytes = NAN;
    }
    import_ladder_free(&l);
    return st;
}

// Seed-mean final loss of every rung, rung r averaging seeds pick[off[r] .. off[r+1]) (NULL: all its seeds).
// y (R) overwritten.
static void rung_means(const variant *v, const size_t *pick, double *y) {
    for (size_t r = 0; r < v->R; r++) {
        double sum = 0;
        for (size_t k = 0; k < v->S[r]; k++) sum += v->final[v->off[r] + (pick ? pick[v->off[r] + k] : k)];
        y[r] = sum / (double)v->S[r];
    }
}

// Fits a read ladder's rung means (pin: NaN-free entries pin parameters, or NULL).
static sx_status variant_fit(variant *v, const double *pin) {
    rung_means(v, NULL, v->y);
    fit_options_default(&v->fo);
    v->fo.pin = pin;
    sx_status st = law_power_bind(v->x, v->R, &v->law);
    if (st) return st;
    v->bound = true;
    fit_result res;
    if ((st = fit_law_run(&v->law, v->y, NULL, &v->fo, &res))) return st;
    memcpy(v->p, res.params, sizeof v->p);
    fit_result_free(&res);
    return SX_OK;
}

// A ladder given in memory: no model, so no KV bytes or parameter count.
static sx_status variant_read_memory(const compare_ladder *l, variant *v) {
    if (l->rungs < 3 || l->rungs > LADDER_MAX_RUNGS)
        return sx_fail(SX_ERR_ARG, "%s: comparison needs 3 to %d rungs, not %zu", l->name, LADDER_MAX_RUNGS, l->rungs);
    for (size_t r = 0; r < l->rungs; r++)
        if (l->seeds[r] < 1) return sx_fail(SX_ERR_ARG, "%s: rung %zu has no seeds", l->name, r);
    sx_status st = variant_alloc(v, l->rungs, l->seeds);
    if (st) return st;
    memcpy(v->x, l->flops, l->rungs * sizeof *v->x);
    memcpy(v->final, l->final, v->off[v->R] * sizeof *v->final);
    v->kv_bytes = v->params = NAN;
    snprintf(v->largest, sizeof v->largest, "-");
    return SX_OK;
}

// The law refitted to rung means y (R); out (LAW_POW_NPARAM) overwritten (the point fit when the refit fails).
static void variant_refit_means(variant *v, const double *y, double *out) {
    double obj;
    if (fit_refine(&v->law, y, NULL, &v->fo, v->p, out, &obj)) memcpy(out, v->p, sizeof v->p);
}

// One bootstrap replicate: rung r re-averages seeds pick[off[r] .. off[r+1]); out as variant_refit_means.
static void variant_refit(variant *v, const size_t *pick, double *out) {
    double y[LADDER_MAX_RUNGS];
    rung_means(v, pick, y);
    variant_refit_means(v, y, out);
}

// A resample of every rung's seeds (each rung its own, drawn rung after rung). pick (off[R]) overwritten.
static void draw_picks(rng_state *rng, size_t *pick, const variant *v) {
    for (size_t r = 0; r < v->R; r++)
        for (size_t k = 0; k < v->S[r]; k++) pick[v->off[r] + k] = v->S[r] > 1 ? rng_below(rng, v->S[r]) : 0;
}

// Compute multiplier of a variant at loss l_var over the baseline law p at target compute C: infinite when
// the variant reaches the baseline's floor, 0 when the baseline does and the variant does not.
static double multiplier(const double *p, double C, double l_var) {
    double l_base = law_power_eval(p, C);
    if (!(l_var > p[LAW_POW_LINF])) return INFINITY;
    if (!(l_base > p[LAW_POW_LINF])) return 0;
    return pow((l_base - p[LAW_POW_LINF]) / (l_var - p[LAW_POW_LINF]), 1 / p[LAW_POW_ALPHA]);
}

// Paired per-rung jackknife of the seed noise in every variant's ln multiplier at C. var (n, R) overwritten:
// row i, rung r is the variance rung r's seeds put into variant i's ln multiplier, (S−1)/S · Σ_k (ℓ_k − mean ℓ)²
// where ℓ_k refits every ladder with seed k of rung r left out of all of them alike (S: the rung's seeds); NAN
// where the rung has one seed or a multiplier is not finite. Row 0 (the baseline against itself) is 0.
// Needs paired variants (equal rungs and seeds per rung).
static sx_status rung_jackknife(variant *v, size_t n, double C, double *var) {
    double *q = sx_alloc(n * LAW_POW_NPARAM * sizeof *q, "compare q"), *mean = sx_alloc(n * sizeof *mean, "compare mean");
    if (!q || !mean) { free(q); free(mean); return sx_fail(SX_ERR_NOMEM, "out of memory"); }
    for (size_t r = 0; r < v[0].R; r++) {
        size_t S = v[0].S[r];
        for (size_t i = 0; i < n; i++) var[i * v[0].R + r] = mean[i] = 0;
        for (size_t k = 0; k < S && S > 1; k++) {
            for (size_t i = 0; i < n; i++) {
                double y[LADDER_MAX_RUNGS];
                memcpy(y, v[i].y, v[i].R * sizeof *y);
                y[r] = (y[r] * (double)S - v[i].final[v[i].off[r] + k]) / (double)(S - 1);
                variant_refit_means(&v[i], y, q + i * LAW_POW_NPARAM);
                double l = log(multiplier(q, C, law_power_eval(q + i * LAW_POW_NPARAM, C))), d = l - mean[i];
                mean[i] += d / (double)(k + 1);   // Welford: var holds the sum of squared deviations so far
                var[i * v[0].R + r] += d * (l - mean[i]);
            }
        }
        for (size_t i = 0; i < n; i++) {
            double *x = &var[i * v[0].R + r];
            *x = S > 1 && isfinite(*x) ? *x * (double)(S - 1) / (double)S : NAN;
        }
    }
    free(q);
    free(mean);
    return SX_OK;
}

// A hypothetical next rung: v with a rung at x_0²/x_1 (the ladder's own spacing) in front, whose seeds lie
// off the fitted law as the largest rung's do (seed k by seed k's deviation, so pairing carries over), refitted.
// out overwritten (variant_free it); SX_ERR_ARG when the ladder has LADDER_MAX_RUNGS rungs already.
static sx_status variant_extend(const variant *v, variant *out) {
    memset(out, 0, sizeof *out);
    if (v->R >= LADDER_MAX_RUNGS) return SX_ERR_ARG;
    size_t seeds[LADDER_MAX_RUNGS], R = v->R + 1;
    seeds[0] = v->S[0];
    memcpy(seeds + 1, v->S, v->R * sizeof *seeds);
    sx_status st = variant_alloc(out, R, seeds);
    if (st) return st;
    out->x[0] = v->x[0] * v->x[0] / v->x[1];
    memcpy(out->x + 1, v->x, v->R * sizeof *v->x);
    double at = law_power_eval(v->p, out->x[0]);
    for (size_t k = 0; k < v->S[0]; k++) out->final[k] = at + v->final[k] - v->y[0];
    memcpy(out->final + v->S[0], v->final, v->off[v->R] * sizeof *v->final);
    rung_means(out, NULL, out->y);
    out->fo = v->fo;
    memcpy(out->p, v->p, sizeof v->p);
    if ((st = law_power_bind(out->x, R, &out->law))) return st;
    out->bound = true;
    variant_refit_means(out, out->y, out->p);
    return SX_OK;
}

// What a larger rung would do to the seed noise: next_var (n) the total rung_jackknife variance of every
// variant with a next rung (variant_extend: as many seeds as the largest rung), at compute next_x (n); both
// NAN where there is no such rung.
static sx_status next_rung_noise(variant *v, size_t n, double C, double *next_var, double *next_x) {
    variant *ext = sx_calloc_n(n, sizeof *ext, "compare ext");
    double *ext_var = sx_alloc(n * (v[0].R + 1) * sizeof *ext_var, "compare ext_var");
    sx_status st = ext && ext_var ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    bool extended = !st;
    for (size_t i = 0; i < n && !st && extended; i++) {
        sx_status e = variant_extend(&v[i], &ext[i]);
        if (e == SX_ERR_NOMEM) st = e;
        extended = !e;
    }
    if (!st && extended) st = rung_jackknife(ext, n, C, ext_var);
    for (size_t i = 0; i < n && !st; i++) {
        next_var[i] = extended ? 0 : NAN;
        next_x[i] = extended ? ext[i].x[0] : NAN;
        for (size_t r = 0; r <= v[0].R && extended; r++) next_var[i] += ext_var[i * (v[0].R + 1) + r];
    }
    for (size_t i = 0; ext && i < n; i++) variant_free(&ext[i]);
    free(ext);
    free(ext_var);
    return st;
}

static bool excludes_one(double *m, size_t n, double a) {
    return fit_quantile(m, n, a / 2) > 1 || fit_quantile(m, n, 1 - a / 2) < 1;
}

double compare_boot_pvalue(double *m, size_t n) {
    if (!excludes_one(m, n, 1)) return 1;
    double lo = 0, hi = 1;   // excludes_one is monotone in a: the interval shrinks as a grows
    for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi);
        if (excludes_one(m, n, mid)) hi = mid;
        else lo = mid;
    }
    return hi;
}

void compare_holm(const double *p, size_t m, double *adj) {
    size_t *order = sx_alloc(m * sizeof *order, "compare order");
    double *pv = sx_alloc(m * sizeof *pv, "compare pv");
    if (!order || !pv) abort();
    memcpy(pv, p, m * sizeof *pv);
    for (size_t i = 0; i < m; i++) {   // insertion sort by p, stable: ties keep their order
        size_t j = i;
        while (j > 0 && pv[order[j - 1]] > pv[i]) { order[j] = order[j - 1]; j--; }
        order[j] = i;
    }
    double run = 0;
    for (size_t j = 0; j < m; j++) {
        run = fmax(run, fmin(1, (double)(m - j) * pv[order[j]]));
        adj[order[j]] = run;
    }
    free(order);
    free(pv);
}

static json_t *doubles(const double *x, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, isfinite(x[i]) ? json_real(x[i]) : json_null());
    return a;
}

// Multipliers of variant v over the baseline b at C, one per replicate of the given bootstrap arrays.
static void boot_multipliers(const double *base_boot, const double *var_boot, double C, double *lb, double *mb) {
    for (int b = 0; b < N_BOOT; b++) {
        lb[b] = law_power_eval(var_boot + b * LAW_POW_NPARAM, C);
        mb[b] = multiplier(base_boot + b * LAW_POW_NPARAM, C, lb[b]);
    }
}

static void set_number(json_t *row, const char *key, double x) {   // a non-finite number is written as null
    json_object_set_new(row, key, isfinite(x) ? json_real(x) : json_null());
}

// The comparison of read ladders v (n; v[0] the baseline, names[i] v[i]'s): fits, intervals, verdicts. v is
// the caller's (freed by it).
static sx_status compare_variants(variant *v, const char *const *names, size_t n, double C, bool shared_linf, json_t **report) {
    double *var = NULL, *next_var = NULL, *next_x = NULL;
    double pin[LAW_POW_NPARAM] = {NAN, NAN, NAN};
    double *lb = sx_alloc(N_BOOT * sizeof *lb, "compare lb"), *mb = sx_alloc(N_BOOT * sizeof *mb, "compare mb"),
           *pm = sx_alloc(N_BOOT * sizeof *pm, "compare pm");
    double *pval = sx_calloc_n(n, sizeof *pval, "compare pval"), *padj = sx_calloc_n(n, sizeof *padj, "compare padj");
    size_t *pick = NULL;
    sx_status st = lb && mb && pm && pval && padj ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        st = variant_fit(&v[i], i && shared_linf ? pin : NULL);
        if (!st && i == 0) pin[LAW_POW_LINF] = v[0].p[LAW_POW_LINF];
    }
    if (!st && !(C > 0)) C = 10 * v[0].x[0];   // default: 10x the baseline's largest rung
    bool paired = !st;
    for (size_t i = 1; i < n && !st; i++) paired = paired && v[i].R == v[0].R && !memcmp(v[i].S, v[0].S, v[0].R * sizeof *v[0].S);
    if (!st && !(pick = sx_alloc(v[0].off[v[0].R] * sizeof *pick, "compare pick"))) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {   // unpaired: each ladder its own resamples (the same as before pairing)
        size_t *own = i ? sx_alloc(v[i].off[v[i].R] * sizeof *own, "compare") : pick;
        rng_state rng;
        rng_seed(&rng, 1000 + i);
        for (int b = 0; b < N_BOOT && own; b++) {
            draw_picks(&rng, own, &v[i]);
            variant_refit(&v[i], own, v[i].boot + b * LAW_POW_NPARAM);
        }
        if (!own) st = sx_fail(SX_ERR_NOMEM, "out of memory");
        if (i) free(own);
    }
    if (!st && paired) {   // paired: one resample of seed indices per replicate, the same for every variant
        rng_state rng;
        rng_seed(&rng, 2000);
        for (int b = 0; b < N_BOOT; b++) {
            draw_picks(&rng, pick, &v[0]);
            for (size_t i = 0; i < n; i++) variant_refit(&v[i], pick, v[i].pboot + b * LAW_POW_NPARAM);
        }
    }
    for (size_t i = 1; i < n && !st; i++) {   // the verdicts' p-values, Holm-adjusted over the n - 1 variants
        boot_multipliers(paired ? v[0].pboot : v[0].boot, paired ? v[i].pboot : v[i].boot, C, lb, mb);
        pval[i] = compare_boot_pvalue(mb, N_BOOT);
    }
    if (!st && n > 1) compare_holm(pval + 1, n - 1, padj + 1);
    if (!st) var = sx_alloc(n * v[0].R * sizeof *var, "compare var");
    next_var = sx_alloc(n * sizeof *next_var, "compare nv"), next_x = sx_alloc(n * sizeof *next_x, "compare nx");
    if (!st && (!var || !next_var || !next_x)) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st && paired) st = rung_jackknife(v, n, C, var);   // where the paired interval's noise comes from
    if (!st && paired) st = next_rung_noise(v, n, C, next_var, next_x);
    json_t *rows = json_array();
    for (size_t i = 0; i < n && !st; i++) {
        double loss = law_power_eval(v[i].p, C), mult = multiplier(v[0].p, C, loss);
        boot_multipliers(v[0].boot, v[i].boot, C, lb, mb);
        double llo = fit_quantile(lb, N_BOOT, 0.025), lhi = fit_quantile(lb, N_BOOT, 0.975);
        double mlo = fit_quantile(mb, N_BOOT, 0.025), mhi = fit_quantile(mb, N_BOOT, 0.975);
        double plo = NAN, phi = NAN, pmed = NAN;
        if (paired) {
            boot_multipliers(v[0].pboot, v[i].pboot, C, lb, pm);
            plo = fit_quantile(pm, N_BOOT, 0.025), phi = fit_quantile(pm, N_BOOT, 0.975), pmed = fit_quantile(pm, N_BOOT, 0.5);
        } else pmed = fit_quantile(mb, N_BOOT, 0.5);
        bool decided = i > 0 && padj[i] <= COMPARE_ALPHA;
        const char *verdict = i == 0 ? "baseline" : !decided ? "no significant difference"
                              : pmed > 1 ? "better than the baseline" : "worse than the baseline";
        size_t fewest = v[i].S[0];
        json_t *seeds = json_array();
        for (size_t r = 0; r < v[i].R; r++) {
            fewest = v[i].S[r] < fewest ? v[i].S[r] : fewest;
            json_array_append_new(seeds, json_integer((json_int_t)v[i].S[r]));
        }
        json_t *row = json_pack("{s:s, s:s, s:I, s:o, s:s, s:b, s:o, s:o, s:o}", "name", names[i], "largest_rung", v[i].largest,
                                "seeds", (json_int_t)fewest, "rung_seeds", seeds, "verdict", verdict, "decided", decided, "params",
                                doubles(v[i].p, LAW_POW_NPARAM), "rung_flops", doubles(v[i].x, v[i].R), "rung_loss",
                                doubles(v[i].y, v[i].R));
        const char *keys[] = {"loss", "loss_lo", "loss_hi", "multiplier", "multiplier_lo", "multiplier_hi", "paired_lo",
                              "paired_hi", "p_value", "p_holm", "kv_bytes_per_token", "active_params_largest"};
        const double vals[] = {loss, llo, lhi, mult, mlo, mhi, plo, phi, i ? pval[i] : NAN, i ? padj[i] : NAN,
                               v[i].kv_bytes, v[i].params};
        for (size_t k = 0; k < sizeof vals / sizeof *vals; k++) set_number(row, keys[k], vals[k]);
        if (paired) {   // where the paired interval's seed noise comes from (scale/sequential.h places seeds by it)
            json_object_set_new(row, "rung_var", doubles(var + i * v[0].R, v[0].R));
            set_number(row, "next_rung_flops", next_x[i]);
            set_number(row, "next_rung_var", next_var[i]);
        }
        json_array_append_new(rows, row);
    }
    if (!st) *report = json_pack("{s:f, s:b, s:i, s:b, s:f, s:I, s:o}", "target_flops", C, "shared_linf", shared_linf, "bootstrap",
                                 N_BOOT, "paired", paired, "alpha", COMPARE_ALPHA, "family", (json_int_t)(n - 1), "variants", rows);
    else json_decref(rows);
    free(lb); free(mb); free(pm); free(pval); free(padj); free(pick); free(var); free(next_var); free(next_x);
    return st;
}

sx_status compare_ladders(const ladder_spec *specs, const char *const *dirs, size_t n, double C, bool shared_linf,
                          json_t **report) {
    variant *v = sx_calloc_n(n, sizeof *v, "compare v");
    const char **names = sx_calloc_n(n, sizeof *names, "compare names");
    sx_status st = v && names ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        names[i] = specs[i].name;
        st = import_is_ladder_dir(dirs[i]) ? variant_read_curves(dirs[i], &v[i]) : variant_read_own(&specs[i], dirs[i], &v[i]);
    }
    if (!st) st = compare_variants(v, names, n, C, shared_linf, report);
    for (size_t i = 0; v && i < n; i++) variant_free(&v[i]);
    free(v);
    free(names);
    return st;
}

sx_status compare_finals(const compare_ladder *l, size_t n, double C, bool shared_linf, json_t **report) {
    variant *v = sx_calloc_n(n, sizeof *v, "compare v");
    const char **names = sx_calloc_n(n, sizeof *names, "compare names");
    sx_status st = v && names ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        names[i] = l[i].name;
        st = variant_read_memory(&l[i], &v[i]);
    }
    if (!st) st = compare_variants(v, names, n, C, shared_linf, report);
    for (size_t i = 0; v && i < n; i++) variant_free(&v[i]);
    free(v);
    free(names);
    return st;
}

void compare_print(FILE *out, json_t *r) {
    json_t *rows = json_object_get(r, "variants");
    bool paired = json_is_true(json_object_get(r, "paired"));
    size_t family = (size_t)json_integer_value(json_object_get(r, "family"));
    fprintf(out, "at %.3g training FLOPs (95%% seed-bootstrap intervals%s):\n", json_number_value(json_object_get(r, "target_flops")),
            json_is_true(json_object_get(r, "shared_linf")) ? ", Linf shared" : "");
    fprintf(out, "%-18s %-24s %24s %10s %17s %17s %9s %9s  %s\n", "variant", "largest rung", "projected loss", "multiplier",
            "paired 95%", "unpaired 95%", "p (Holm)", "KV B/tok", "verdict");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
#define N(k) (json_is_null(json_object_get(e, k)) ? INFINITY : json_number_value(json_object_get(e, k)))
        char p[16] = "", pi[24] = "-", ui[24], kv[16] = "-";
        if (!json_is_null(json_object_get(e, "kv_bytes_per_token"))) snprintf(kv, sizeof kv, "%.0f", N("kv_bytes_per_token"));
        if (i) snprintf(p, sizeof p, N("p_holm") < 1.0 / N_BOOT ? "<%.3f" : "%.3f", N("p_holm") < 1.0 / N_BOOT ? 1.0 / N_BOOT : N("p_holm"));
        if (paired) snprintf(pi, sizeof pi, "[%6.3f, %6.3f]", N("paired_lo"), N("paired_hi"));
        snprintf(ui, sizeof ui, "[%6.3f, %6.3f]", N("multiplier_lo"), N("multiplier_hi"));
        fprintf(out, "%-18s %-24s %7.4f [%6.4f, %6.4f] %9.3fx %17s %17s %9s %9s  %s\n", json_string_value(json_object_get(e, "name")),
                json_string_value(json_object_get(e, "largest_rung")), N("loss"), N("loss_lo"), N("loss_hi"), N("multiplier"),
                pi, ui, p, kv, json_string_value(json_object_get(e, "verdict")));
#undef N
    }
    fprintf(out, "verdicts: %s seed bootstrap, p-values Holm-adjusted over %zu variant%s against the baseline "
            "(family-wise error <= %.0f%%)%s\n", paired ? "paired" : "unpaired", family, family == 1 ? "" : "s",
            100 * json_number_value(json_object_get(r, "alpha")),
            paired ? "" : "; no pairing: the ladders differ in rungs or seeds");
}
