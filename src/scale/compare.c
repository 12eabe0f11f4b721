#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "model/config.h"
#include "scale/compare.h"
#include "laws/fit.h"
#include "model/flops.h"
#include "runs/import.h"
#include "scale/ladder_data.h"
#include "laws/laws.h"

// One ladder's final losses, fitted; they stay for the jackknife.
typedef struct {
    fit_law law;
    bool bound;              // law bound (variant_free frees it)
    fit_options fo;
    size_t R, S[LADDER_MAX_RUNGS], off[LADDER_MAX_RUNGS + 1];   // rungs, seeds of each, where each starts in final
    double x[LADDER_MAX_RUNGS], y[LADDER_MAX_RUNGS];   // rung compute (largest first), seed-mean final loss
    double *final;           // (off[R]) every seed's final loss, rung after rung
    double p[LAW_POW_NPARAM];
    double *loo;             // (off[R], LAW_POW_NPARAM) refitted with one seed left out (variant_loo)
    double kv_bytes, params; // NaN when unknown (a curve ladder)
    char largest[128];
    char loss[80];           // the loss compared: val_loss (or val_loss_SET) of an own ladder, a curve ladder's column
    char rung[LADDER_MAX_RUNGS][48];   // each rung's name in messages: w32 (own ladder), its group (curve ladder), 1.. (in memory)
    const char *more_seeds;  // how to give a rung more seeds, in messages
} variant;

static void variant_free(variant *v) {
    if (v->bound) fit_law_free(&v->law);
    free(v->final);
    free(v->loo);
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
    v->loo = sx_alloc(v->off[R] * LAW_POW_NPARAM * sizeof *v->loo, "compare v.loo");
    return v->final && v->loo ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
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
        snprintf(v->rung[r], sizeof v->rung[r], "w%zu", d.plan[v->off[r]].width);
        for (size_t i = v->off[r]; i < v->off[r + 1]; i++) v->final[i] = ladder_loss_at_frac(&d.runs[i], spec->eval_at[F - 1]);
    }
    model_config c;
    v->more_seeds = "give the spec `seeds 2` or more, or run `compare --until-decided`";
    ladder_loss_key(spec, v->loss, sizeof v->loss);
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
        snprintf(v->rung[r], sizeof v->rung[r], "%.47s", a->group);
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
        v->more_seeds = "import two or more runs of each size";
        snprintf(v->loss, sizeof v->loss, "%s", l.loss_names[0]);
    }
    import_ladder_free(&l);
    return st;
}

// Seed-mean final loss of every rung. y (R) overwritten.
static void rung_means(const variant *v, double *y) {
    for (size_t r = 0; r < v->R; r++) {
        double sum = 0;
        for (size_t k = 0; k < v->S[r]; k++) sum += v->final[v->off[r] + k];
        y[r] = sum / (double)v->S[r];
    }
}

// Fits a read ladder's rung means (pin: NaN-free entries pin parameters, or NULL).
static sx_status variant_fit(variant *v, const double *pin) {
    rung_means(v, v->y);
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
    for (size_t r = 0; r < v->R; r++) snprintf(v->rung[r], sizeof v->rung[r], "%zu", r + 1);   // 1 the largest
    v->more_seeds = "give every rung two or more seeds";
    v->kv_bytes = v->params = NAN;
    snprintf(v->largest, sizeof v->largest, "-");
    return SX_OK;
}

// The law refitted to rung means y (R); out (LAW_POW_NPARAM) overwritten (the point fit when the refit fails).
static void variant_refit_means(variant *v, const double *y, double *out) {
    double obj;
    if (fit_refine(&v->law, y, NULL, &v->fo, v->p, out, &obj)) memcpy(out, v->p, sizeof v->p);
}

// Compute multiplier of a variant at loss l_var over the baseline law p at target compute C: infinite when
// the variant reaches the baseline's floor, 0 when the baseline does and the variant does not.
static double multiplier(const double *p, double C, double l_var) {
    double l_base = law_power_eval(p, C);
    if (!(l_var > p[LAW_POW_LINF])) return INFINITY;
    if (!(l_base > p[LAW_POW_LINF])) return 0;
    return pow((l_base - p[LAW_POW_LINF]) / (l_var - p[LAW_POW_LINF]), 1 / p[LAW_POW_ALPHA]);
}

// The rung means with seed k of rung r (of two or more seeds) left out: y (R) overwritten.
static void means_without(const variant *v, size_t r, size_t k, double *y) {
    memcpy(y, v->y, v->R * sizeof *y);
    y[r] = (y[r] * (double)v->S[r] - v->final[v->off[r] + k]) / (double)(v->S[r] - 1);
}

// Every leave-one-seed-out refit: row off[r] + k of v->loo refits the law with seed k of rung r left out (the
// other rungs as they are); NaN rows at a rung of one seed.
static void variant_loo(variant *v) {
    for (size_t r = 0; r < v->R; r++) {
        size_t S = v->S[r];
        for (size_t k = 0; k < S; k++) {
            double y[LADDER_MAX_RUNGS], *out = v->loo + (v->off[r] + k) * LAW_POW_NPARAM;
            if (S < 2) {
                for (size_t j = 0; j < LAW_POW_NPARAM; j++) out[j] = NAN;
                continue;
            }
            means_without(v, r, k, y);
            variant_refit_means(v, y, out);
        }
    }
}

// ln multiplier of variant law pv over baseline law pb at C.
static double ln_multiplier(const double *pb, const double *pv, double C) { return log(multiplier(pb, C, law_power_eval(pv, C))); }

// What a jackknife is taken of, at the target compute C, from a baseline law pb and a variant law pv.
typedef enum {
    STAT_LOSS,           // the variant's projected loss
    STAT_LN_MULTIPLIER,  // ln of the variant's compute multiplier over the baseline
    STAT_GAIN,           // the baseline's projected loss minus the variant's: 0 exactly where the multiplier is 1,
                         // and finite where the multiplier is not (a variant projected below the baseline's floor)
} stat_kind;

static double stat_at(stat_kind kind, const double *pb, const double *pv, double C) {
    return kind == STAT_LOSS ? law_power_eval(pv, C)
         : kind == STAT_GAIN ? law_power_eval(pb, C) - law_power_eval(pv, C) : ln_multiplier(pb, pv, C);
}

// The jackknife variance (S−1)/S · Σ_k (ℓ_k − mean ℓ)² of one rung's S leave-one-seed-out values, accumulated
// (Welford): NAN when S < 2 or a value is not finite.
typedef struct { double mean, ss; size_t S; } jack_rows;

static void jack_row(jack_rows *j, double l) {
    double d = l - j->mean;
    j->mean += d / (double)++j->S;
    j->ss += d * (l - j->mean);
}

static double jack_rows_var(const jack_rows *j) {
    return j->S > 1 && isfinite(j->ss) ? j->ss * (double)(j->S - 1) / (double)j->S : NAN;
}

// The jackknife variance over one rung's S seeds of the statistic of parameter rows base + k·bs (baseline) and
// var + k·vs (variant), a stride 0 holding that side at its full fit.
static double jack_rung(stat_kind kind, const double *base, size_t bs, const double *var, size_t vs, size_t S, double C) {
    jack_rows j = {0};
    for (size_t k = 0; k < S; k++) jack_row(&j, stat_at(kind, base + k * bs, var + k * vs, C));
    return jack_rows_var(&j);
}

// A jackknife variance summed over independent groups of seeds (rungs; or the rungs of two ladders), with
// Welch–Satterthwaite degrees of freedom (Σ v_g)² / Σ v_g²/(S_g − 1): a group's share v_g from S_g seeds is
// known to S_g − 1 degrees of freedom. var NAN once a group's is unknown.
typedef struct { double var, df_den; } jack_sum;

static void jack_add(jack_sum *j, double v, size_t S) {
    j->var += v;
    j->df_den += S > 1 ? v * v / (double)(S - 1) : NAN;
}

// Per-rung paired jackknife of every variant's ln multiplier at C (seed k of rung r left out of every ladder
// alike: variant_loo rows of the same rung and seed). var (n, R) overwritten; row 0 (the baseline against
// itself) is 0. Needs paired variants (equal rungs and seeds per rung) with their loo rows.
static void rung_jackknife(const variant *v, size_t n, double C, double *var) {
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < v[0].R; r++)
            var[i * v[0].R + r] = jack_rung(STAT_LN_MULTIPLIER, v[0].loo + v[0].off[r] * LAW_POW_NPARAM, LAW_POW_NPARAM,
                                            v[i].loo + v[i].off[r] * LAW_POW_NPARAM, LAW_POW_NPARAM, v[0].S[r], C);
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
    rung_means(out, out->y);
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
    for (size_t i = 0; i < n && !st && extended; i++) variant_loo(&ext[i]);
    if (!st && extended) rung_jackknife(ext, n, C, ext_var);
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

// A statistic at the target with its t interval at level 1 − COMPARE_ALPHA: [lo, hi] ([−inf, inf] when the
// seed noise is unknown, [est, est] when there is none), the jackknife variance, the degrees of freedom, and
// the two-sided p-value of "the statistic is 0" (1 when the noise is unknown, or when there is none and est
// is 0; 0 when there is none and est is not).
typedef struct { double est, lo, hi, var, df, p; } t_stat;

static t_stat t_interval(double est, const jack_sum *j) {
    t_stat t = {.est = est, .lo = -INFINITY, .hi = INFINITY, .var = j->var, .df = NAN, .p = 1};
    if (!isfinite(est) || !(j->var >= 0) || !isfinite(j->df_den)) return t;
    if (j->var == 0) { t.lo = t.hi = est; t.p = est == 0; return t; }
    double se = sqrt(j->var);
    t.df = j->var * j->var / j->df_den;
    double q = gsl_cdf_tdist_Pinv(1 - COMPARE_ALPHA / 2, t.df);
    t.lo = est - q * se, t.hi = est + q * se;
    t.p = 2 * gsl_cdf_tdist_Q(fabs(est) / se, t.df);
    return t;
}

static void set_number(json_t *row, const char *key, double x) {   // a non-finite number is written as null
    json_object_set_new(row, key, isfinite(x) ? json_real(x) : json_null());
}

// A t interval taken on a log (the multiplier's), bounded once back on the multiplier's scale.
static bool bounded_exp(const t_stat *t) { return exp(t->lo) > 0 && isfinite(exp(t->hi)); }

// The names of v's rungs with one seed ("w8, w16") appended to buf (size bytes); how many there are.
static size_t one_seed_names(const variant *v, char *buf, size_t size) {
    size_t k = 0;
    for (size_t r = 0; r < v->R; r++)
        if (v->S[r] < 2) {
            size_t len = strlen(buf);
            snprintf(buf + len, size - len, "%s%s", k++ ? ", " : "", v->rung[r]);
        }
    return k;
}

// Why an interval of variant i (v[0] the baseline) is unbounded, into buf: a rung with one seed here or in the
// baseline (the seed noise cannot be estimated: no verdict either); a multiplier estimate that is not finite;
// a refit with a seed left out whose multiplier is not (paired: the rungs where); or an end past the
// largest finite multiplier. lm: the ln multiplier; var (R): the paired rung_var, or NULL; u, p: its unpaired
// and paired intervals (p NULL when unpaired).
static void unbounded_reason(const variant *v, const char *base, size_t i, double lm, const double *var, const t_stat *u,
                             const t_stat *p, char *buf, size_t size) {
    char own[1024] = "", other[1024] = "", rungs[1024] = "";
    size_t k = one_seed_names(&v[i], own, sizeof own), kb = i ? one_seed_names(&v[0], other, sizeof other) : 0;
    if (k || kb) {
        char here[1100] = "", there[1200] = "";
        if (k) snprintf(here, sizeof here, "one seed at rung%s %s", k > 1 ? "s" : "", own);
        if (kb) snprintf(there, sizeof there, "%sthe baseline %s has one seed at rung%s %s", k ? ", and " : "", base,
                         kb > 1 ? "s" : "", other);
        snprintf(buf, size, "%s%s: the seed noise, and so the intervals, cannot be estimated from one seed (unbounded; no "
                 "verdict); %s", here, there, k ? v[i].more_seeds : v[0].more_seeds);
        return;
    }
    if (!isfinite(lm)) {
        snprintf(buf, size, "the multiplier at the target is not finite (a projected loss at or below the baseline's floor, "
                 "Linf %.4g): its intervals are unbounded, while the verdict tests the loss gain, which stays finite",
                 v[0].p[LAW_POW_LINF]);
        return;
    }
    if (isfinite(u->var) && (!p || isfinite(p->var))) {
        snprintf(buf, size, "the interval reaches past the largest finite multiplier (ln multiplier %.3g +- %.3g)", lm,
                 (u->hi - u->lo) / 2);
        return;
    }
    for (size_t r = 0; var && r < v[0].R; r++)
        if (!isfinite(var[r])) {
            size_t len = strlen(rungs);
            snprintf(rungs + len, sizeof rungs - len, "%s%s", len ? ", " : " (rung ", v[0].rung[r]);
        }
    snprintf(buf, size, "a refit with one seed left out%s%s has a multiplier at the target that is not finite (a projected "
             "loss at or below the baseline's floor): the seed noise cannot be estimated there", rungs, *rungs ? ")" : "");
}

// Ladder v's law without its largest rung (rungs x + 1, R − 1; L∞ pinned where pin's is not NaN), as
// variant_fit and variant_loo fit the whole ladder: fitted (out[0..P)), then refitted from that fit with each
// seed k of each other rung r of two or more seeds left out (row 1 + off[r] + k of out; the point fit where a
// refit fails). pins, when given, holds each row's L∞ to pin (a value pin_stride apart per row: the baseline's
// fits of the same rows, where L∞ is shared). The binding's or the fit's status.
static sx_status fit_less(const variant *v, double *pin, const double *pins, size_t pin_stride, double *out) {
    const size_t P = LAW_POW_NPARAM;
    fit_law law;
    fit_options fo;
    fit_result res;
    fit_options_default(&fo);
    fo.pin = pin;
    sx_status st = law_power_bind(v->x + 1, v->R - 1, &law);
    if (st) return st;
    st = fit_law_run(&law, v->y + 1, NULL, &fo, &res);
    if (!st) {
        memcpy(out, res.params, P * sizeof *out);
        fit_result_free(&res);
    }
    for (size_t r = 1; !st && r < v->R; r++)   // the largest rung's seeds do not enter this fit: its rows stay unused
        for (size_t k = 0; k < v->S[r] && v->S[r] > 1; k++) {
            double y[LADDER_MAX_RUNGS], obj, *row = out + (1 + v->off[r] + k) * P;
            means_without(v, r, k, y);
            if (pins) pin[LAW_POW_LINF] = pins[(1 + v->off[r] + k) * pin_stride];
            if (fit_refine(&law, y + 1, NULL, &fo, out, row, &obj)) memcpy(row, out, P * sizeof *row);
        }
    fit_law_free(&law);
    return st;
}

// Does the largest rung move the multipliers more than the seeds' noise explains? For each variant, ln of its
// multiplier at C with every ladder refitted without its largest rung (lm, n), and the paired jackknife t test
// of its shift from the full fit's (p, n: seed k of a rung left out of every ladder and of both fits alike).
// NaN for the baseline, and for every variant where the ladders are not paired, a ladder has fewer than 4
// rungs or a fit fails; p NaN too where a rung's seed noise is unknown (one seed). The seed intervals hold the
// rungs' noise at the law's form; a shift beyond it is the form's (in the KV study a w144 rung moved every
// multiplier out of its 4-rung interval). SX_ERR_NOMEM where memory ran out (as next_rung_noise).
static sx_status largest_rung_shift(const variant *v, size_t n, double C, bool shared_linf, bool paired, double *lm,
                                    double *p) {
    const size_t P = LAW_POW_NPARAM, R = v[0].R, all = v[0].off[R];
    for (size_t i = 0; i < n; i++) lm[i] = p[i] = NAN;
    if (!paired || R < 4) return SX_OK;
    double *q = sx_calloc_n(n * (all + 1), P * sizeof *q, "compare less");   // per ladder: the fit, then its loo rows
    sx_status st = q ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    bool ok = !st;
    for (size_t i = 0; ok && i < n; i++) {
        double pin[LAW_POW_NPARAM] = {NAN, NAN, NAN};
        bool shared = i && shared_linf;   // L∞ pinned to the baseline's fit of the same rows
        if (shared) pin[LAW_POW_LINF] = q[LAW_POW_LINF];
        sx_status e = fit_less(&v[i], shared ? pin : NULL, shared ? q + LAW_POW_LINF : NULL, P, q + i * (all + 1) * P);
        if (e == SX_ERR_NOMEM) st = e;
        ok = !e;
    }
    for (size_t i = 1; ok && i < n; i++) {
        const double *q0 = q, *qi = q + i * (all + 1) * P;
        lm[i] = ln_multiplier(q0, qi, C);
        jack_sum j = {0};
        for (size_t r = 0; r < R; r++) {   // the shift with seed k of rung r left out everywhere
            jack_rows rows = {0};
            for (size_t k = 0; k < v[0].S[r]; k++) {
                size_t row = v[0].off[r] + k;
                double less = r ? ln_multiplier(q0 + (1 + row) * P, qi + (1 + row) * P, C) : lm[i];
                jack_row(&rows, ln_multiplier(v[0].loo + row * P, v[i].loo + row * P, C) - less);
            }
            jack_add(&j, jack_rows_var(&rows), v[0].S[r]);
        }
        t_stat t = t_interval(ln_multiplier(v[0].p, v[i].p, C) - lm[i], &j);
        p[i] = isfinite(t.df) || t.var == 0 ? t.p : NAN;   // NaN, not t_interval's 1, where the noise is unknown
    }
    free(q);
    return st;
}

// The comparison of read ladders v (n; v[0] the baseline, names[i] v[i]'s): fits, intervals, verdicts. v is
// the caller's (freed by it).
static sx_status compare_variants(variant *v, const char *const *names, size_t n, double C, bool shared_linf, json_t **report) {
    double pin[LAW_POW_NPARAM] = {NAN, NAN, NAN};
    double *pval = sx_calloc_n(n, sizeof *pval, "compare pval"), *padj = sx_calloc_n(n, sizeof *padj, "compare padj");
    bool *better = sx_calloc_n(n, sizeof *better, "compare better");
    double *next_var = sx_calloc_n(n, sizeof *next_var, "compare nv"), *next_x = sx_calloc_n(n, sizeof *next_x, "compare nx");
    double *var = sx_calloc_n(n * v[0].R, sizeof *var, "compare var"), *lm_less = sx_calloc_n(2 * n, sizeof *lm_less, "compare lm");
    double *p_shift = lm_less ? lm_less + n : NULL;
    t_stat *loss = sx_calloc_n(4 * n, sizeof *loss, "compare stats"), *unpaired = loss + n, *paired = loss + 2 * n, *test = loss + 3 * n;
    sx_status st = pval && padj && better && next_var && next_x && var && lm_less && loss ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        st = variant_fit(&v[i], i && shared_linf ? pin : NULL);
        if (!st && i == 0) pin[LAW_POW_LINF] = v[0].p[LAW_POW_LINF];
        if (!st) variant_loo(&v[i]);
    }
    if (!st && !(C > 0)) C = 10 * v[0].x[0];   // default: 10x the baseline's largest rung
    bool paired_ok = !st;
    for (size_t i = 1; i < n && !st; i++) paired_ok = paired_ok && v[i].R == v[0].R && !memcmp(v[i].S, v[0].S, v[0].R * sizeof *v[0].S);
    if (!st && paired_ok) rung_jackknife(v, n, C, var);   // where the paired interval's noise comes from
    if (!st) st = largest_rung_shift(v, n, C, shared_linf, paired_ok, lm_less, p_shift);
    if (!st && paired_ok) st = next_rung_noise(v, n, C, next_var, next_x);
    const size_t P = LAW_POW_NPARAM;
    for (size_t i = 0; i < n && !st; i++) {   // each ladder's loss; each variant's ln multiplier and gain, paired
        const double *lb = v[0].loo, *lv = v[i].loo;   // (one jackknife over every ladder alike) and unpaired (the
        jack_sum jl = {0}, ju = {0}, jp = {0}, gu = {0}, gp = {0};   // two ladders' own, summed)
        for (size_t r = 0; r < v[i].R; r++) jack_add(&jl, jack_rung(STAT_LOSS, v[0].p, 0, lv + v[i].off[r] * P, P, v[i].S[r], C), v[i].S[r]);
        for (size_t r = 0; i && r < v[0].R; r++) {
            jack_add(&ju, jack_rung(STAT_LN_MULTIPLIER, lb + v[0].off[r] * P, P, v[i].p, 0, v[0].S[r], C), v[0].S[r]);
            jack_add(&gu, jack_rung(STAT_GAIN, lb + v[0].off[r] * P, P, v[i].p, 0, v[0].S[r], C), v[0].S[r]);
        }
        for (size_t r = 0; i && r < v[i].R; r++) {
            jack_add(&ju, jack_rung(STAT_LN_MULTIPLIER, v[0].p, 0, lv + v[i].off[r] * P, P, v[i].S[r], C), v[i].S[r]);
            jack_add(&gu, jack_rung(STAT_GAIN, v[0].p, 0, lv + v[i].off[r] * P, P, v[i].S[r], C), v[i].S[r]);
        }
        for (size_t r = 0; paired_ok && r < v[0].R; r++) {
            jack_add(&jp, var[i * v[0].R + r], v[0].S[r]);
            jack_add(&gp, jack_rung(STAT_GAIN, lb + v[0].off[r] * P, P, lv + v[i].off[r] * P, P, v[0].S[r], C), v[0].S[r]);
        }
        double lm = ln_multiplier(v[0].p, v[i].p, C), gain = stat_at(STAT_GAIN, v[0].p, v[i].p, C);
        loss[i] = t_interval(law_power_eval(v[i].p, C), &jl);
        unpaired[i] = t_interval(lm, &ju);
        if (paired_ok) paired[i] = t_interval(lm, &jp);
        test[i] = t_interval(gain, paired_ok ? &gp : &gu);
        pval[i] = test[i].p;
        better[i] = gain > 0;
    }
    if (!st && n > 1) compare_holm(pval + 1, n - 1, padj + 1);
    json_t *rows = json_array();
    for (size_t i = 0; i < n && !st; i++) {
        bool decided = i > 0 && padj[i] <= COMPARE_ALPHA;
        const char *verdict = i == 0 ? "baseline" : !decided ? "no significant difference"
                              : better[i] ? "better than the baseline" : "worse than the baseline";
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
        const char *keys[] = {"loss", "loss_lo", "loss_hi", "multiplier", "multiplier_lo", "multiplier_hi", "unpaired_df", "paired_lo",
                              "paired_hi", "paired_se", "paired_df", "gain", "gain_se", "gain_df", "p_value", "p_holm",
                              "kv_bytes_per_token", "active_params_largest", "multiplier_without_largest", "largest_rung_shift_p"};
        const double vals[] = {loss[i].est, loss[i].lo, loss[i].hi, exp(unpaired[i].est), exp(unpaired[i].lo), exp(unpaired[i].hi),
                               unpaired[i].df, paired_ok ? exp(paired[i].lo) : NAN, paired_ok ? exp(paired[i].hi) : NAN,
                               paired_ok ? sqrt(paired[i].var) : NAN, paired_ok ? paired[i].df : NAN, i ? test[i].est : NAN,
                               i ? sqrt(test[i].var) : NAN, i ? test[i].df : NAN, i ? pval[i] : NAN, i ? padj[i] : NAN,
                               v[i].kv_bytes, v[i].params, exp(lm_less[i]), p_shift[i]};
        for (size_t k = 0; k < sizeof vals / sizeof *vals; k++) set_number(row, keys[k], vals[k]);
        json_t *one = json_array();   // rungs whose seed noise cannot be estimated
        for (size_t r = 0; r < v[i].R; r++)
            if (v[i].S[r] < 2) json_array_append_new(one, json_string(v[i].rung[r]));
        if (json_array_size(one)) json_object_set_new(row, "one_seed_rungs", one);
        else json_decref(one);
        char why[4096];
        if (!isfinite(loss[i].lo) || !isfinite(loss[i].hi) || (i && (!bounded_exp(&unpaired[i]) || (paired_ok && !bounded_exp(&paired[i]))))) {
            unbounded_reason(v, names[0], i, unpaired[i].est, paired_ok ? var + i * v[0].R : NULL, &unpaired[i],
                             paired_ok ? &paired[i] : NULL, why, sizeof why);
            json_object_set_new(row, "unbounded_reason", json_string(why));
        }
        if (paired_ok) {   // where the paired interval's seed noise comes from (scale/sequential.h places seeds by it)
            json_object_set_new(row, "rung_var", doubles(var + i * v[0].R, v[0].R));
            set_number(row, "next_rung_flops", next_x[i]);
            set_number(row, "next_rung_var", next_var[i]);
        }
        json_array_append_new(rows, row);
    }
    if (!st) *report = json_pack("{s:f, s:b, s:b, s:f, s:I, s:o}", "target_flops", C, "shared_linf", shared_linf, "paired", paired_ok,
                                 "alpha", COMPARE_ALPHA, "family", (json_int_t)(n - 1), "variants", rows);
    else json_decref(rows);
    free(pval); free(padj); free(better); free(var); free(lm_less); free(next_var); free(next_x); free(loss);
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
    for (size_t i = 1; i < n && !st; i++)   // names may differ for one validation set (exports name columns freely)
        if (strcmp(v[i].loss, v[0].loss))
            fprintf(stderr, "compare: note: %s's loss is %s, the baseline %s's is %s: the comparison assumes they measure "
                    "the same validation set\n", names[i], v[i].loss, names[0], v[0].loss);
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

// Interval [lo, hi] as the table prints it, into buf: "[lo, hi]" with prec decimals, or where an end is
// unbounded (not finite; for a multiplier a lower end of 0 too) "> lo", "< hi" or "unbounded".
static void interval_text(char *buf, size_t size, double lo, double hi, bool multiplier, int prec) {
    bool open_lo = !isfinite(lo) || (multiplier && !(lo > 0)), open_hi = !isfinite(hi);
    if (open_lo && open_hi) snprintf(buf, size, "unbounded");
    else if (open_hi) snprintf(buf, size, "> %.*f", prec, lo);
    else if (open_lo) snprintf(buf, size, "< %.*f", prec, hi);
    else snprintf(buf, size, "[%6.*f, %6.*f]", prec, lo, prec, hi);
}

// A number of row e, NAN where it is null (not finite) or missing.
static double row_number(json_t *e, const char *key) {
    json_t *x = json_object_get(e, key);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

// Row i's unbounded_reason, "" when its intervals are bounded.
static const char *unbounded_reason_of(json_t *rows, size_t i) {
    const char *why = json_string_value(json_object_get(json_array_get(rows, i), "unbounded_reason"));
    return why ? why : "";
}

// Each variant's multiplier with the ladders refitted without their largest rung, its shift's p (largest_rung_shift),
// and the variants whose shift the seeds' noise does not explain.
static void print_largest_rung_shift(FILE *out, json_t *rows, double alpha) {
    size_t flagged = 0;
    if (json_array_size(rows) < 2) return;
    for (size_t i = 1; i < json_array_size(rows); i++)   // all or nothing: a line that stops short would mislead
        if (!isfinite(row_number(json_array_get(rows, i), "largest_rung_shift_p"))) return;
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        double m = row_number(e, "multiplier_without_largest"), p = row_number(e, "largest_rung_shift_p");
        fprintf(out, "%s %s ", i == 1 ? "without each ladder's largest rung:" : ",", json_string_value(json_object_get(e, "name")));
        if (isfinite(m)) fprintf(out, "%.3fx", m);
        else fprintf(out, "unbounded");
        fprintf(out, " (shift p %s%.3f)", p < 0.001 ? "<" : "", p < 0.001 ? 0.001 : p);
        flagged += p <= alpha;
    }
    fprintf(out, "\n");
    if (!flagged) return;
    fprintf(out, " ");
    for (size_t i = 1, k = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        if (row_number(e, "largest_rung_shift_p") <= alpha) fprintf(out, "%s %s", k++ ? "," : "", json_string_value(json_object_get(e, "name")));
    }
    fprintf(out, ": the largest rung moves the multiplier more than the seeds' noise explains (p <= %.2f): the law's "
            "form, not the seeds, limits the comparison there, and its intervals, which hold the seeds' noise only, are too "
            "narrow; a rung nearer the target says more than seeds\n", alpha);
}

void compare_print(FILE *out, json_t *r) {
    json_t *rows = json_object_get(r, "variants");
    bool paired = json_is_true(json_object_get(r, "paired"));
    // A sequential comparison tests each p at its own level (printed under the table): the p column is the raw p.
    const char *rule = json_string_value(json_object_get(r, "verdict_rule")), *p_key = rule ? "p_value" : "p_holm";
    size_t family = (size_t)json_integer_value(json_object_get(r, "family"));
    fprintf(out, "at %.3g training FLOPs (95%% seed-jackknife t intervals%s):\n", json_number_value(json_object_get(r, "target_flops")),
            json_is_true(json_object_get(r, "shared_linf")) ? ", Linf shared" : "");
    fprintf(out, "%-18s %-24s %24s %10s %17s %17s %9s %9s  %s\n", "variant", "largest rung", "projected loss", "multiplier",
            "paired 95%", "unpaired 95%", rule ? "p" : "p (Holm)", "KV B/tok", "verdict");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
#define N(k) (json_is_null(json_object_get(e, k)) ? INFINITY : json_number_value(json_object_get(e, k)))
        char p[16] = "", li[40], pi[40] = "-", ui[40], kv[16] = "-";
        if (!json_is_null(json_object_get(e, "kv_bytes_per_token"))) snprintf(kv, sizeof kv, "%.0f", N("kv_bytes_per_token"));
        if (i) snprintf(p, sizeof p, N(p_key) < 0.001 ? "<0.001" : "%.3f", N(p_key));
        interval_text(li, sizeof li, row_number(e, "loss_lo"), row_number(e, "loss_hi"), false, 4);
        if (paired) interval_text(pi, sizeof pi, row_number(e, "paired_lo"), row_number(e, "paired_hi"), true, 3);
        interval_text(ui, sizeof ui, row_number(e, "multiplier_lo"), row_number(e, "multiplier_hi"), true, 3);
        fprintf(out, "%-18s %-24s %7.4f %16s %9.3fx %17s %17s %9s %9s  %s\n", json_string_value(json_object_get(e, "name")),
                json_string_value(json_object_get(e, "largest_rung")), N("loss"), li, N("multiplier"), pi, ui, p, kv,
                json_string_value(json_object_get(e, "verdict")));
#undef N
    }
    if (rule) fprintf(out, "verdicts: %s\n", rule);
    else fprintf(out, "verdicts: %s seed jackknife t test, p-values Holm-adjusted over %zu variant%s against the baseline "
                 "(family-wise error <= %.0f%%)%s\n", paired ? "paired" : "unpaired", family, family == 1 ? "" : "s",
                 100 * json_number_value(json_object_get(r, "alpha")),
                 paired ? "" : "; no pairing: the ladders differ in rungs or seeds");
    for (size_t i = 0; i < json_array_size(rows); i++) {   // why intervals are unbounded: each reason once, with its ladders
        const char *why = unbounded_reason_of(rows, i);
        bool said = false;
        for (size_t j = 0; *why && j < i; j++) said = said || !strcmp(why, unbounded_reason_of(rows, j));
        if (!*why || said) continue;
        fprintf(out, "  %s", json_string_value(json_object_get(json_array_get(rows, i), "name")));
        for (size_t j = i + 1; j < json_array_size(rows); j++)
            if (!strcmp(why, unbounded_reason_of(rows, j))) fprintf(out, ", %s", json_string_value(json_object_get(json_array_get(rows, j), "name")));
        fprintf(out, ": %s\n", why);
    }
    print_largest_rung_shift(out, rows, json_number_value(json_object_get(r, "alpha")));
}
