#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/lines.h"
#include "scale/compare.h"
#include "scale/ladder_seeds.h"
#include "scale/look_record.h"
#include "scale/sequential.h"
#include "scale/spending.h"

#define MAX_SEEDS 1000   // the ladder spec's limit
// Seeds every rung gets before the noise places seeds. Placed by a variance known to 2 degrees of freedom (3
// seeds), a rung whose noise was underestimated by chance got no more seeds and kept the underestimate into
// the test: 9 of 100 synthetic pairs with no difference were decided; from 5 seeds, 3 of 100.
#define PLACE_MIN_SEEDS 5
// A round placed by the noise that would narrow no interval still wanting seeds by this much (relative, its
// standard error) is not trained: near the budget's end the FLOPs left can buy only seeds where they hardly matter.
#define NARROW_MIN 0.005
// A round at most multiplies a rung's seeds by this. The seeds a goal needs are sized on a variance estimated
// from the seeds so far, whose relative error is about sqrt(2/(S-1)) (71% at 5 seeds). Replays of the KV study
// (README) from 32-50 stored seeds per rung in shuffled orders, at its budget: uncapped, a round asked for up
// to 187 seeds from 5 per rung, and 4 of 6 orders reached +-15% (two of them only by spending the whole
// budget); at most doubling, 9 of 10, in a median of 74% of the budget.
#define ROUND_GROWTH 2

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

// The main run of run i of plan s (itself, or the run a cooldown branch starts from; SIZE_MAX for an LR-sweep
// run), and that one's rung.
static size_t main_run(const ladder_spec *s, const ladder_run *runs, size_t i, size_t *rung) {
    if (runs[i].branch == LADDER_SWEEP) return SIZE_MAX;
    size_t m = runs[i].branch < 0 ? i : (i - ladder_rung_start(s, s->n_rungs)) / s->n_branches, r = 0;
    while (ladder_rung_start(s, r + 1) <= m) r++;
    *rung = r;
    return m;
}

// FLOPs run i of plan s trains (main run m: main_run's) when it is not DONE under dir (NULL: 0 either way): a
// branch costs what it trains beyond its branch point.
static double run_cost(const ladder_spec *s, const ladder_run *runs, size_t i, size_t m, const char *dir) {
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/DONE", dir, runs[i].dir);
        if (access(path, F_OK) == 0) return 0;
    }
    return runs[i].flops - (runs[i].branch < 0 ? 0 : runs[m].flops * s->branches[runs[i].branch].from);
}

// FLOPs of training the runs next's plan holds beyond now's (main runs of a seed beyond now's count at
// their rung, and their cooldown branches) that are not DONE under dir (NULL: all of them).
static sx_status added_flops(const ladder_spec *now, const ladder_spec *next, const char *dir, double *flops) {
    ladder_run *runs;
    size_t n, r = 0;
    sx_status st = ladder_plan(next, &runs, &n);
    if (st) return st;
    *flops = 0;
    for (size_t i = 0; i < n; i++) {
        size_t m = main_run(next, runs, i, &r);
        if (m != SIZE_MAX && runs[m].seed > ladder_rung_seeds(now, r)) *flops += run_cost(next, runs, i, m, dir);
    }
    free(runs);
    return SX_OK;
}

// FLOPs of the runs of spec's plan not DONE under dir.
static sx_status pending_flops(const ladder_spec *spec, const char *dir, double *flops) {
    ladder_run *runs;
    size_t n, r;
    sx_status st = ladder_plan(spec, &runs, &n);
    if (st) return st;
    *flops = 0;
    for (size_t i = 0; i < n; i++) {
        size_t m = main_run(spec, runs, i, &r);
        *flops += run_cost(spec, runs, i, m == SIZE_MAX ? i : m, dir);
    }
    free(runs);
    return SX_OK;
}

sx_status sequential_round_flops(const ladder_spec *spec, const char *dir, double *flops) {
    ladder_spec next = *spec;
    for (size_t r = 0; r < spec->n_rungs; r++) next.rung_seeds[r] = ladder_rung_seeds(spec, r) + 1;
    return added_flops(spec, &next, dir, flops);
}

// Seconds per training FLOP logged by the baseline's largest run (its steps' tokens over their tok_per_s),
// or NAN when its metrics do not say.
static double logged_seconds_per_flop(const ladder_spec *spec, const char *dir) {
    ladder_run *runs;
    size_t n;
    if (ladder_plan(spec, &runs, &n)) return NAN;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s/metrics.jsonl", dir, runs[0].dir);
    free(runs);
    line_reader r;
    line_reader_init(&r, fopen(path, "r"));   // a run without metrics gives no lines, so no estimate
    double seconds = 0, tokens = 0, flops = 0;
    while (line_reader_next(&r)) {
        json_t *j = json_loads(r.line, 0, NULL);
        double t = num(j, "tokens"), rate = num(j, "tok_per_s"), fl = num(j, "flops");
        if (t > tokens && rate > 0 && fl > 0) { seconds += (t - tokens) / rate; tokens = t; flops = fl; }
        json_decref(j);
    }
    line_reader_close(&r);
    return flops > 0 ? seconds / flops : NAN;
}

// The two-sided level-a quantile plus the 80%-power one, of the t distribution on df degrees of freedom.
static double power_quantile(double a, double df) { return gsl_cdf_tdist_Pinv(1 - a / 2, df) + gsl_cdf_tdist_Pinv(0.8, df); }

// Seeds N at which an interval on df (N - 1)/(S - 1) degrees of freedom first meets its goal, where N in [lo, hi]
// brackets the root: too_few(N) holds below it and not above (the t quantile falls as N grows). Bisection to
// 1e-9 relative; the bracket's upper end.
typedef struct { double S, df, se, a, effect, half; } seeds_goal;

static double bisect_seeds(double lo, double hi, bool (*too_few)(const seeds_goal *g, double n), const seeds_goal *g) {
    for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (too_few(g, mid)) lo = mid; else hi = mid;
    }
    return hi;
}

static double df_at(const seeds_goal *g, double n) { return g->df * (n - 1) / (g->S - 1); }

// 80% power at level a needs N = S (se q(df(N)) / effect)^2.
static bool power_too_few(const seeds_goal *g, double n) {
    double q = power_quantile(g->a, df_at(g, n));
    return g->S * (g->se * q / g->effect) * (g->se * q / g->effect) > n;
}

double sequential_power_seeds(double effect, double se, double df, size_t seeds, double a) {
    if (!(effect > 0 && se > 0)) return NAN;
    double S = (double)seeds, z = gsl_cdf_ugaussian_Pinv(1 - a / 2) + gsl_cdf_ugaussian_Pinv(0.8);
    double need = S * (se * z / effect) * (se * z / effect);   // the normal estimate: a lower bound
    if (!(seeds > 1 && df > 0 && isfinite(df))) return need;
    // At N seeds the interval has df (N - 1)/(S - 1) degrees of freedom: N = S (se q(df(N)) / effect)^2 has one
    // root, as the right side falls with N, between the normal estimate and the right side there.
    // The bracket starts no lower than where the interval would have one degree of freedom: below that the
    // t quantile runs to gsl's limits (its inverse fails to converge, and gsl aborts), and an effect that
    // large is decided within the seeds there anyway.
    seeds_goal g = {.S = S, .df = df, .se = se, .a = a, .effect = effect};
    double lo = fmax(need, 1 + (S - 1) / df), hi = S * pow(se * power_quantile(a, df_at(&g, lo)) / effect, 2);
    return hi <= lo ? lo : bisect_seeds(lo, hi, power_too_few, &g);
}

// The paired interval's ln half-width at N seeds is still above the goal's.
static bool half_too_few(const seeds_goal *g, double n) {
    return gsl_cdf_tdist_Pinv(1 - COMPARE_ALPHA / 2, df_at(g, n)) * g->se * sqrt(g->S / n) > g->half;
}

// Seeds per rung (in all) for the paired interval exp(ln m +- t se sqrt(S/N)) to have ln half-width at most h.
static double half_width_seeds(double se, double df, size_t seeds, double h) {
    // At a quantile q held fixed, q se sqrt(S/N) = h at N = S (q se / h)^2.
    double S = (double)seeds, z = gsl_cdf_ugaussian_Pinv(1 - COMPARE_ALPHA / 2);
    if (!(seeds > 1 && df > 0 && isfinite(df))) return S * (z * se / h) * (z * se / h);
    double lo = S * (z * se / h) * (z * se / h), q = gsl_cdf_tdist_Pinv(1 - COMPARE_ALPHA / 2, df), hi = S * (q * se / h) * (q * se / h);
    if (hi <= S) return hi;   // narrow enough already
    // The root lies past S, where the interval is still too wide, and below the N of today's quantile.
    seeds_goal g = {.S = S, .df = df, .se = se, .half = h};
    return bisect_seeds(fmax(lo, S), hi, half_too_few, &g);
}

// The interval 2 m sinh(h) wide in multiplier units has ln half-width h = asinh(width / 2m).
double sequential_width_seeds(double multiplier, double se, double df, size_t seeds, double width) {
    if (!(multiplier > 0 && isfinite(multiplier) && se > 0 && width > 0)) return NAN;
    return half_width_seeds(se, df, seeds, asinh(width / (2 * multiplier)));
}

// Within +-p of the multiplier on both sides: exp(h) - 1 <= p, the upper side the wider.
double sequential_precision_seeds(double se, double df, size_t seeds, double precision) {
    if (!(se > 0 && precision > 0)) return NAN;
    return half_width_seeds(se, df, seeds, log1p(precision));
}

// Row e's paired interval lies within +-p of its multiplier.
static bool precise(json_t *e, double p) {
    double m = num(e, "multiplier"), lo = num(e, "paired_lo"), hi = num(e, "paired_hi");
    return m > 0 && isfinite(m) && lo >= m * (1 - p) && hi <= m * (1 + p);
}

// Row e (a variant) still wants seeds: with --precision, until its interval is that precise, decided or not;
// else while it is undecided.
static bool wants_seeds(json_t *e, const sequential_options *o) {
    return o->precision > 0 ? !precise(e, o->precision) : !json_is_true(json_object_get(e, "decided"));
}

// Seeds per rung in all (from S now) that would bring variant e to a decision with 80% power at level a
// (sequential_power_seeds on the statistic the verdict tests: the loss gain, its standard error and degrees of
// freedom), or its paired interval under --width when that is sooner (sequential_width_seeds); with --precision,
// its interval within +-precision instead (sequential_precision_seeds). All take the t quantiles on the degrees of
// freedom there. NAN when no estimate is possible. (Power on the multiplier's own t once asked for 1 seed more
// near the floors, where the multiplier's interval excluded 1 by 5 standard errors and the gain's test was at p
// 0.08: a trail of one-seed rounds followed.)
static double seeds_needed(json_t *e, size_t S, double a, const sequential_options *o) {
    double m = num(e, "multiplier"), lo = num(e, "paired_lo"), hi = num(e, "paired_hi");
    bool interval = lo > 0 && hi >= lo && isfinite(hi) && m > 0 && isfinite(m);
    double se = num(e, "paired_se"), df = num(e, "paired_df");
    if (o->precision > 0) return interval && hi > lo ? sequential_precision_seeds(se, df, S, o->precision) : NAN;
    double need = sequential_power_seeds(fabs(num(e, "gain")), num(e, "gain_se"), num(e, "gain_df"), S, a);
    if (!isfinite(need)) need = INFINITY;
    if (o->width > 0 && interval && hi - lo > 0) need = fmin(need, sequential_width_seeds(m, se, df, S, o->width));
    return isfinite(need) ? need : NAN;
}

// Seeds per rung, beyond S, that seeds_needed says; NAN when no estimate is possible.
static double more_seeds(json_t *e, size_t S, double a, const sequential_options *o) {
    double need = seeds_needed(e, S, a, o);
    if (!isfinite(need)) return NAN;
    double more = ceil(need - 1e-9) - (double)S;
    return more < 1 ? 1 : more;
}

// Why to stop after this report (NULL: go on), given the options: with --precision only when every interval
// is that precise (a decision alone does not stop it).
static const char *stop_reason(json_t *report, const sequential_options *o) {
    json_t *rows = json_object_get(report, "variants");
    bool all_decided = true, all_narrow = o->width > 0, all_precise = true;
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        all_precise = all_precise && precise(e, o->precision);
        if (json_is_true(json_object_get(e, "decided"))) continue;
        all_decided = false;
        double w = num(e, "paired_hi") - num(e, "paired_lo");
        if (!(w <= o->width)) all_narrow = false;
    }
    if (o->precision > 0) return all_precise ? "precision" : NULL;
    return all_decided ? "decided" : all_narrow ? "width" : NULL;
}

// The ladders' state for placing seeds: each rung's width (the baseline's), its seeds (the most any ladder
// has), the FLOPs of one more seed there over all ladders, and how many seeds beyond its count have finished
// in every ladder already (an interrupted round leaves them: they cost nothing).
typedef struct {
    size_t R, width[LADDER_MAX_RUNGS], seeds[LADDER_MAX_RUNGS], done[LADDER_MAX_RUNGS];
    double cost[LADDER_MAX_RUNGS];
} rungs_state;

// FLOPs of the seed after the first `seeds` at rung r: nothing where it has finished already.
static double seed_cost(const rungs_state *g, size_t r, size_t seeds) {
    return seeds < g->seeds[r] + g->done[r] ? 0 : g->cost[r];
}

static sx_status rungs_read(const ladder_spec *specs, const char *const *dirs, size_t n, rungs_state *g) {
    ladder_run *runs;
    size_t nr;
    sx_status st = ladder_plan(&specs[0], &runs, &nr);
    if (st) return st;
    g->R = specs[0].n_rungs;
    for (size_t r = 0; r < g->R; r++) {
        g->width[r] = runs[ladder_rung_start(&specs[0], r)].width;
        g->seeds[r] = 0;
        for (size_t i = 0; i < n; i++)
            if (r < specs[i].n_rungs && ladder_rung_seeds(&specs[i], r) > g->seeds[r]) g->seeds[r] = ladder_rung_seeds(&specs[i], r);
    }
    free(runs);
    for (size_t r = 0; r < g->R && !st; r++) {
        g->cost[r] = 0;
        for (size_t i = 0; i < n && !st; i++) {
            ladder_spec next = specs[i];
            double c = 0;
            if (r < next.n_rungs) next.rung_seeds[r] = g->seeds[r] + 1;
            if (!(st = added_flops(&specs[i], &next, NULL, &c))) g->cost[r] += c;
        }
        for (g->done[r] = 0; !st && g->seeds[r] + g->done[r] < MAX_SEEDS; g->done[r]++) {   // finished seeds beyond the count
            double left = 0;
            for (size_t i = 0; i < n && !st && r < specs[i].n_rungs; i++) {
                ladder_spec now = specs[i], next = specs[i];
                now.rung_seeds[r] = g->seeds[r] + g->done[r];
                next.rung_seeds[r] = now.rung_seeds[r] + 1;
                double c = 0;
                if (!(st = added_flops(&now, &next, dirs[i], &c))) left += c;
            }
            if (left > 0) break;
        }
    }
    return st;
}

// The seed-noise variance of its ln multiplier per rung (the compare report's paired jackknife, rung_var) of
// each variant that wants seeds (wants_seeds): var (n, R) overwritten, rows of the baseline and of the other
// variants zero. False when the noise cannot place seeds: no pairing, a rung with fewer than PLACE_MIN_SEEDS
// seeds, a variance that is not finite, or no such variant with any noise at all.
static bool noise_of(json_t *report, const rungs_state *g, const sequential_options *o, double *var) {
    json_t *rows = json_object_get(report, "variants");
    double total = 0;
    for (size_t r = 0; r < g->R; r++)
        if (g->seeds[r] < PLACE_MIN_SEEDS) return false;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *rv = json_object_get(e, "rung_var");
        bool on = i > 0 && wants_seeds(e, o);
        if (on && json_array_size(rv) != g->R) return false;
        for (size_t r = 0; r < g->R; r++) {
            var[i * g->R + r] = on ? (json_is_number(json_array_get(rv, r)) ? json_number_value(json_array_get(rv, r)) : NAN) : 0;
            if (!isfinite(var[i * g->R + r])) return false;
            total += var[i * g->R + r];
        }
    }
    return total > 0;
}

// How much narrower (a fraction) variant i's interval gets with one more seed at rung r: the width goes as the
// square root of the variance, and rung r's share shrinks from v/S to v/(S+1).
static double seed_shrink(const double *var, size_t R, size_t i, size_t r, const size_t *seeds) {
    double total = 0;
    for (size_t k = 0; k < R; k++) total += var[i * R + k];
    if (!(total > 0)) return 0;
    return 1 - sqrt(fmax(0, total - var[i * R + r] / (double)(seeds[r] + 1)) / total);
}

// The rung, among those below their seed limit (most: per rung; NULL: MAX_SEEDS) whose next seed costs at most
// max_cost FLOPs, whose next seed narrows the variants' intervals most per FLOP (the sum over variants of
// seed_shrink over the rung's cost); *score receives that, per FLOP (-1: no rung). variants: n rows of var.
static size_t best_rung(const double *var, size_t n, const size_t *seeds, const size_t *most, const rungs_state *g,
                        double max_cost, double *score) {
    size_t best = 0;
    *score = -1;
    for (size_t r = 0; r < g->R; r++) {
        double gain = 0, cost = seed_cost(g, r, seeds[r]);
        for (size_t i = 0; i < n; i++) gain += seed_shrink(var, g->R, i, r, seeds);
        double sc = gain / fmax(cost, 1);
        if (seeds[r] < (most ? most[r] : MAX_SEEDS) && cost <= max_cost && sc > *score) { *score = sc; best = r; }
    }
    return best;
}

// One more seed at rung r in the model of the variances: rung r's share of every row goes from v/S to v/(S+1).
static void place_seed(double *var, size_t n, size_t R, size_t r, size_t *seeds) {
    for (size_t i = 0; i < n; i++) var[i * R + r] *= (double)seeds[r] / (double)(seeds[r] + 1);
    seeds[r]++;
}

// Places seeds for variant i (var0: noise_of's rows) one by one where they narrow its interval most per FLOP,
// among the seeds that still fit in max_flops, until its width is down to the fraction ratio of now (0: no such
// stop) or no seed fits.
// added (R, or NULL) overwritten with the seeds per rung; *flops receives their cost. Returns the narrowing
// reached (a fraction), or NAN where ratio > 0 is out of reach (no noise left to take, or MAX_SEEDS per rung).
static double place_for(const double *var0, size_t i, const rungs_state *g, double ratio, double max_flops, size_t *added,
                        double *flops) {
    double var[LADDER_MAX_RUNGS], total = 0, now, score;
    size_t seeds[LADDER_MAX_RUNGS];
    memcpy(var, var0 + i * g->R, g->R * sizeof *var);
    memcpy(seeds, g->seeds, g->R * sizeof *seeds);
    for (size_t r = 0; r < g->R; r++) total += var[r];
    now = total;
    *flops = 0;
    bool out_of_reach = false;
    while (now > ratio * ratio * total) {
        size_t r = best_rung(var, 1, seeds, NULL, g, max_flops - *flops, &score);
        if (score < 0) break;   // no seed fits
        if (!(score > 0)) { out_of_reach = ratio > 0; break; }
        *flops += seed_cost(g, r, seeds[r]);
        now -= var[r] / (double)(seeds[r] + 1);
        place_seed(var, 1, g->R, r, seeds);
    }
    for (size_t r = 0; added && r < g->R; r++) added[r] = seeds[r] - g->seeds[r];
    if (out_of_reach) return NAN;
    return total > 0 ? 1 - sqrt(fmax(now, 0) / total) : 0;
}

// The fraction variant e's paired standard error must shrink to, to decide with 80% power at level a, or to
// reach width if that is sooner (at S seeds per rung now: sqrt(S / seeds_needed)); NAN when no estimate is
// possible.
static double narrow_ratio(json_t *e, size_t S, double a, const sequential_options *o) {
    double need = seeds_needed(e, S, a, o);
    return need > 0 ? fmin(sqrt((double)S / need), 1) : NAN;
}

// Seeds against a larger rung, for every undecided variant: how much the report's hypothetical next rung
// narrows its interval (next_rung_var against the sum of rung_var; as many seeds as the largest rung, at
// next_rung_flops in every ladder, or flops in all when not NAN: a real rung's) against what the same FLOPs buy
// as seeds placed by the noise (var: noise_of's rows). Returns {"next_rung_flops" (the baseline's), "seeds", "flops" (the rung in all ladders), "rung_shrink",
// "seed_shrink": [per variant; null for the baseline, a variant that wants no seeds (wants_seeds) or no estimate],
// "bound": true when the rung narrows those variants' intervals more, summed over them: the noise is mostly the
// extrapolation's leverage on the rungs' seed noise, and a larger rung is the advice. Summed, not for any one:
// in replays of the KV study a rung that narrowed GQA-2's interval by 70% (seeds: 59%) and MQA's and MLA's by
// 0% (seeds: 54-55%) would have taken two thirds of the budget}.
static json_t *extrapolation(json_t *report, const rungs_state *g, const double *var, const sequential_options *o, double flops) {
    json_t *rows = json_object_get(report, "variants"), *rung = json_array(), *seeds = json_array();
    double by_rungs = 0, by_seeds_all = 0;
    if (isnan(flops)) {   // the hypothetical rung in every ladder
        flops = 0;
        for (size_t i = 0; i < json_array_size(rows); i++) flops += (double)g->seeds[0] * num(json_array_get(rows, i), "next_rung_flops");
    }
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *rv = json_object_get(e, "rung_var");
        double total = 0;
        for (size_t r = 0; r < json_array_size(rv); r++) total += json_number_value(json_array_get(rv, r));
        double ratio = num(e, "next_rung_var") / total, spent, by_seeds = var ? place_for(var, i, g, 0, flops, NULL, &spent) : NAN;
        bool on = i > 0 && wants_seeds(e, o) && total > 0 && isfinite(ratio) && isfinite(flops);
        double by_rung = 1 - sqrt(fmin(ratio, 1));
        json_array_append_new(rung, on ? json_real(by_rung) : json_null());
        json_array_append_new(seeds, on && isfinite(by_seeds) ? json_real(by_seeds) : json_null());
        if (on && isfinite(by_seeds)) { by_rungs += by_rung; by_seeds_all += by_seeds; }
    }
    bool bound = by_rungs > by_seeds_all;
    json_t *base = json_array_get(rows, 0);
    return json_pack("{s:f, s:I, s:f, s:o, s:o, s:b}", "next_rung_flops", num(base, "next_rung_flops"), "seeds",
                     (json_int_t)g->seeds[0], "flops", flops, "rung_shrink", rung, "seed_shrink", seeds, "bound", bound);
}

static json_t *sizes(const size_t *x, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((json_int_t)x[i]));
    return a;
}

// The looks so far, one per comparison (the first before any seed is added): each look's seeds per rung (0 at
// a rung added after it), and the stages: a rung added closes one (look_record.h).
typedef struct {
    size_t n, cap;
    size_t (*seeds)[LADDER_MAX_RUNGS];
    size_t ladders, n_stages, stage_first[LADDER_MAX_RUNGS];
    double *stage_t;   // (n_stages x ladders)
} look_log;

static sx_status look_add(look_log *L, const size_t *seeds) {
    if (L->n == L->cap) {
        size_t cap = L->cap ? 2 * L->cap : 16;
        void *p = realloc(L->seeds, cap * sizeof *L->seeds);
        if (!p) return SX_ERR_NOMEM;
        L->seeds = p;
        L->cap = cap;
    }
    memcpy(L->seeds[L->n++], seeds, sizeof *L->seeds);
    return SX_OK;
}

// Report row e's seed-noise variance per rung now (rung_var), or 1 per rung where the report has none (no
// pairing): the weights of its information fractions, v (R) overwritten. False when they sum to 0 (identical
// variants: nothing to test).
static bool rung_weights(json_t *e, size_t R, double *v) {
    json_t *rv = json_object_get(e, "rung_var");
    bool given = json_array_size(rv) == R;
    for (size_t r = 0; given && r < R; r++) {
        double x = json_number_value(json_array_get(rv, r));
        given = json_is_number(json_array_get(rv, r)) && isfinite(x) && x >= 0;
    }
    double total = 0;
    for (size_t r = 0; r < R; r++) total += v[r] = given ? json_number_value(json_array_get(rv, r)) : 1;
    return total > 0;
}

// The alpha that the stages of L before the current one leave to variant i's test at family-wise level alpha:
// each spent spend(t, what the ones before it left) by the information fraction t of its last look (none where
// it was not tested there). The stages split alpha as Bonferroni does: each is a group-sequential test of its
// own estimator (the ladders' rungs changed between them), so their errors add at most.
static double stage_alpha(const look_log *L, size_t i, double alpha, double (*spend)(double, double)) {
    for (size_t s = 0; s < L->n_stages; s++) {
        double t = L->stage_t[s * L->ladders + i];
        if (isfinite(t)) alpha -= spend(t, alpha);
    }
    return alpha;
}

// The nominal level of row e's (variant i's) test at the last look of L, at family-wise level alpha: the
// current stage's looks (those since the last rung was added) at the alpha stage_alpha leaves it. Its variance
// at look j is sum_r v_r S_r / S_r(j) (v: rung_weights, S the seeds now); the horizon is the variance that
// flops_left FLOPs of seeds placed by the same weights would reach (this look's own when final: it spends what
// is left); information fractions t_j = horizon / variance at look j; then the spending function
// (scale/spending.h). *t_last (NULL: not wanted) receives the last look's fraction (NAN where not computed).
// 0 where no horizon is known (flops_left NAN); NAN where there is nothing to test (no noise: identical variants).
static double look_level(json_t *e, size_t i, const rungs_state *g, const look_log *L, double flops_left, bool final,
                         double (*spend)(double, double), double alpha, double *t_last) {
    double v[LADDER_MAX_RUNGS], end = 0, level = 0;
    if (t_last) *t_last = NAN;
    if (!rung_weights(e, g->R, v)) return NAN;
    if (!final && !(flops_left >= 0)) return 0;
    alpha = stage_alpha(L, i, alpha, spend);
    size_t added[LADDER_MAX_RUNGS] = {0}, first = L->n_stages ? L->stage_first[L->n_stages - 1] : 0, k = L->n - first;
    double fl;
    if (!final) place_for(v, 0, g, 0, flops_left, added, &fl);
    for (size_t r = 0; r < g->R; r++) end += v[r] * (double)g->seeds[r] / (double)(g->seeds[r] + added[r]);
    double *t = malloc(3 * k * sizeof *t), *spent = t + k, *nominal = t + 2 * k;
    if (!t) return 0;
    for (size_t j = 0; j < k; j++) {
        double var = 0;
        for (size_t r = 0; r < g->R; r++) var += v[r] * (double)g->seeds[r] / (double)L->seeds[first + j][r];
        t[j] = fmin(1, end / var);
        spent[j] = j + 1 == k && final ? alpha : spend(t[j], alpha);
    }
    if (spending_levels(t, spent, k, nominal) == SX_OK) level = nominal[k - 1];
    if (t_last) *t_last = t[k - 1];
    free(t);
    return level;
}

static int by_p(const void *a, const void *b) {
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}

// This look's test: Holm's step-down over the variants not yet decided, m of them, each at its group-sequential
// level for family-wise alpha/m (look_level; Maurer & Bretz 2013: Holm with a group-sequential test per
// hypothesis, the levels of those left rising as others are rejected). v (report rows) updated.
static sx_status test_look(json_t *report, const rungs_state *g, const look_log *L, double flops_left, bool final,
                           const sequential_options *o, look_verdict *v) {
    json_t *rows = json_object_get(report, "variants");
    size_t nv = json_array_size(rows), m = 0, k = 0;
    double *order = malloc(2 * nv * sizeof *order);   // (p, row) pairs, ascending p
    if (!order) return SX_ERR_NOMEM;
    for (size_t i = 1; i < nv; i++) {
        if (v[i].look >= 0) continue;
        m++;
        double p = num(json_array_get(rows, i), "p_value");
        order[2 * k] = isfinite(p) ? p : 2;
        order[2 * k++ + 1] = (double)i;
    }
    qsort(order, k, 2 * sizeof *order, by_p);
    bool stepping = true;
    for (size_t q = 0; q < k; q++) {
        size_t i = (size_t)order[2 * q + 1];
        json_t *e = json_array_get(rows, i);
        v[i].level = look_level(e, i, g, L, flops_left, final, o->spend, COMPARE_ALPHA / (double)m, NULL);
        stepping = stepping && order[2 * q] <= v[i].level;
        if (!stepping) continue;   // Holm stops at the first not rejected; those after keep their level at alpha/m
        v[i].look = (int)L->n - 1;
        v[i].better = num(e, "loss") < num(json_array_get(rows, 0), "loss");
        m--;
    }
    free(order);
    return SX_OK;
}

// The report's verdicts made the sequential ones (a fixed-sample Holm verdict at a late look would not hold
// the family-wise error over the looks), with each row's "decided_look" and "sequential_level".
static void apply_verdicts(json_t *report, const look_verdict *v, const sequential_options *o, size_t looks) {
    json_t *rows = json_object_get(report, "variants");
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        json_object_set_new(e, "decided", json_boolean(v[i].look >= 0));
        json_object_set_new(e, "verdict", json_string(v[i].look < 0 ? "no significant difference" : v[i].better ? "better than the baseline"
                                                                                                               : "worse than the baseline"));
        json_object_set_new(e, "decided_look", v[i].look >= 0 ? json_integer(v[i].look) : json_null());
        json_object_set_new(e, "sequential_level", isfinite(v[i].level) ? json_real(v[i].level) : json_null());
    }
    char rule[400];
    snprintf(rule, sizeof rule, "paired seed jackknife t test at group-sequential levels (%s alpha spending over the %zu look%s of "
             "--until-decided, information against the budget; Holm over the variants: family-wise error <= %.0f%% over all looks)",
             o->spending, looks, looks == 1 ? "" : "s", 100 * COMPARE_ALPHA);
    json_object_set_new(report, "verdict_rule", json_string(rule));
}

// FLOPs of the round that brings every rung from g's seeds to target's (R; none fewer), in all ladders.
static double round_flops(const rungs_state *g, const size_t *target) {
    double cost = 0;
    for (size_t r = 0; r < g->R; r++)
        for (size_t s = g->seeds[r]; s < target[r]; s++) cost += seed_cost(g, r, s);
    return cost;
}

// The fewest seeds of any rung.
static size_t fewest_seeds(const rungs_state *g) {
    size_t fewest = MAX_SEEDS;
    for (size_t k = 0; k < g->R; k++) fewest = g->seeds[k] < fewest ? g->seeds[k] : fewest;
    return fewest;
}

// The Holm level of the first undecided variant: alpha over the variants still undecided.
static double undecided_level(json_t *report) {
    json_t *rows = json_object_get(report, "variants");
    size_t undecided = 0;
    for (size_t i = 1; i < json_array_size(rows); i++) undecided += !json_is_true(json_object_get(json_array_get(rows, i), "decided"));
    return COMPARE_ALPHA / (double)(undecided ? undecided : 1);
}

// The variant that wants seeds (wants_seeds) nearest its goal: the fewest FLOPs of seeds placed by its noise
// (var: noise_of's rows) to bring it to 80% power at the level its last test had (v; alpha over the undecided
// where it had none), or to the width when sooner, or with --precision to that precision; 0 when no variant has
// a goal within reach (every one's already met, or no estimate).
static size_t nearest(json_t *report, const rungs_state *g, const double *var, const look_verdict *v, const sequential_options *o) {
    json_t *rows = json_object_get(report, "variants");
    size_t best = 0;
    double least = INFINITY, a = undecided_level(report);
    for (size_t i = 1; i < json_array_size(rows); i++) {
        if (!wants_seeds(json_array_get(rows, i), o)) continue;
        double q = narrow_ratio(json_array_get(rows, i), fewest_seeds(g), v[i].level > 0 ? v[i].level : a, o), fl;
        if (!(q > 0 && q < 1) || !isfinite(place_for(var, i, g, q, INFINITY, NULL, &fl)) || !(fl < least)) continue;
        least = fl;
        best = i;
    }
    return best;
}

// Seeds for report row i (var: noise_of's rows) up to 80% power at the level its test would have at the look
// after them (or to the width when sooner), within flops_left, each rung's cut to its limit (most, per rung):
// add (R) overwritten. Returns whether a limit cut the round. That level depends on the
// information the round adds (a larger round spends more alpha at its look), so the round and its level are
// solved together: a few damped steps from the level of its last test.
static bool round_for(json_t *report, size_t i, const rungs_state *g, const double *var, const size_t *most, look_log *L,
                      double flops_left, const sequential_options *o, const look_verdict *v, size_t *add) {
    json_t *e = json_array_get(json_object_get(report, "variants"), i);
    double alpha = undecided_level(report), a = v[i].level > 0 ? v[i].level : alpha, fl;
    size_t next[LADDER_MAX_RUNGS];
    bool cut = false;
    for (int step = 0; step < 8; step++) {
        place_for(var, i, g, narrow_ratio(e, fewest_seeds(g), a, o), flops_left, add, &fl);
        cut = false;
        for (size_t r = 0; r < g->R; r++)
            if (g->seeds[r] + add[r] > most[r]) { add[r] = most[r] - g->seeds[r]; cut = true; }
        if (o->precision > 0) return cut;   // a precision does not depend on the level
        for (size_t r = 0; r < g->R; r++) next[r] = g->seeds[r] + add[r];
        if (look_add(L, next)) return cut;
        double level = look_level(e, i, g, L, flops_left, false, o->spend, alpha, NULL);
        L->n--;
        if (!(level > 0) || fabs(log(level / a)) < 0.05) return cut;
        a = sqrt(a * level);   // damped: a larger level makes a smaller round, which spends less
    }
    return cut;
}

// This round's seeds: target (R) overwritten with every rung's seed count after it (the same for every
// ladder, so seed k stays paired). Placed by the noise: for the undecided variant nearest a decision (nearest),
// up to its target or the FLOPs left (flops_left; NAN: unknown), so a round is as large as a decision needs and
// the looks are few, but no rung's seeds more than ROUND_GROWTH times over; then, to reach jobs runs over the n
// ladders and at least one seed, at the rung with the most narrowing summed over the undecided variants per
// FLOP; a round that would leave less than it costs takes the rest of the budget too, unless ROUND_GROWTH cut
// it (the next round will want the rest). When the noise cannot place them (noise_of): every rung up to
// PLACE_MIN_SEEDS, or as far as the FLOPs left go, while a rung has fewer; else one more at every rung.
// Returns the round's entry of the report's allocation (without its FLOPs), and says it on stderr.
static json_t *plan_round(json_t *report, const rungs_state *g, size_t n, const sequential_options *o, const look_verdict *v,
                          look_log *L, double flops_left, int round, size_t *target) {
    json_t *rows = json_object_get(report, "variants");
    size_t nv = json_array_size(rows);
    double *var = calloc(nv * g->R, sizeof *var), *before = calloc(nv * g->R, sizeof *before);
    bool placed = var && before && noise_of(report, g, o, var);
    size_t near = 0;
    memcpy(target, g->seeds, g->R * sizeof *target);
    json_t *shrink = json_array();
    if (!placed) {
        size_t fewest = fewest_seeds(g), up = PLACE_MIN_SEEDS;
        if (fewest < PLACE_MIN_SEEDS) {   // every rung up to PLACE_MIN_SEEDS in one round, or as far as the budget goes
            for (;; up--) {
                for (size_t r = 0; r < g->R; r++) target[r] = g->seeds[r] < up ? up : g->seeds[r];
                if (up == fewest + 1 || !(round_flops(g, target) > flops_left)) break;
            }
            fprintf(stderr, "until-decided: round %d brings every rung to %zu seeds or more (a rung has fewer than %d seeds, too "
                    "few to place seeds by its noise)\n", round, up, PLACE_MIN_SEEDS);
        } else {
            for (size_t r = 0; r < g->R; r++) target[r]++;
            fprintf(stderr, "until-decided: round %d adds a seed to every rung (no paired seed-noise estimate to place seeds "
                    "by)\n", round);
        }
    } else {
        memcpy(before, var, nv * g->R * sizeof *var);
        size_t want = (size_t)o->jobs > n ? ((size_t)o->jobs + n - 1) / n : 1, placed_n = 0, add[LADDER_MAX_RUNGS];
        size_t most[LADDER_MAX_RUNGS];
        for (size_t r = 0; r < g->R; r++) most[r] = ROUND_GROWTH * g->seeds[r] < MAX_SEEDS ? ROUND_GROWTH * g->seeds[r] : MAX_SEEDS;
        bool cut = false;   // the next round will need the FLOPs left
        if ((near = nearest(report, g, var, v, o))) {
            cut = round_for(report, near, g, var, most, L, isfinite(flops_left) ? flops_left : INFINITY, o, v, add);
            for (size_t r = 0; r < g->R; r++)
                for (size_t k = 0; k < add[r]; k++, placed_n++) place_seed(var, nv, g->R, r, target);
        }
        for (; placed_n < want; placed_n++) {
            double score;
            size_t r = best_rung(var, nv, target, most, g, INFINITY, &score);
            if (!(score > 0)) break;
            place_seed(var, nv, g->R, r, target);
        }
        double cost = round_flops(g, target);
        while (!cut && flops_left - cost < cost) {   // what would be left buys less than this round: it takes that too
            double score;
            size_t r = best_rung(var, nv, target, most, g, flops_left - cost, &score);
            if (!(score > 0)) break;
            cost += seed_cost(g, r, target[r]);
            place_seed(var, nv, g->R, r, target);
        }
        fprintf(stderr, "until-decided: round %d adds", round);
        for (size_t r = 0; r < g->R; r++)
            if (target[r] > g->seeds[r]) fprintf(stderr, " %zu seed%s to rung w%zu (now %zu)", target[r] - g->seeds[r],
                                                 target[r] - g->seeds[r] == 1 ? "" : "s", g->width[r], target[r]);
        if (near) fprintf(stderr, " (for %s, nearest %s)", json_string_value(json_object_get(json_array_get(rows, near), "name")),
                          o->precision > 0 ? "its precision" : "a decision");
        fprintf(stderr, "; estimated narrowing of the paired intervals:");
    }
    for (size_t i = 0; i < nv; i++) {   // the narrowing the model expects, per variant
        double b = 0, a = 0;
        for (size_t r = 0; placed && r < g->R; r++) { b += before[i * g->R + r]; a += var[i * g->R + r]; }
        bool on = placed && b > 0;
        json_array_append_new(shrink, on ? json_real(1 - sqrt(a / b)) : json_null());
        if (on) fprintf(stderr, " %s %.1f%%", json_string_value(json_object_get(json_array_get(rows, i), "name")), 100 * (1 - sqrt(a / b)));
    }
    if (placed) fprintf(stderr, "\n");
    size_t added[LADDER_MAX_RUNGS];
    for (size_t r = 0; r < g->R; r++) added[r] = target[r] - g->seeds[r];
    free(var);
    free(before);
    return json_pack("{s:i, s:s, s:o, s:o, s:o, s:o}", "round", round, "placed", placed ? "by noise" : "every rung", "widths",
                     sizes(g->width, g->R), "added", sizes(added, g->R), "shrink", shrink, "for",
                     near ? json_incref(json_object_get(json_array_get(rows, near), "name")) : json_null());
}

static size_t gcd(size_t a, size_t b) { return b ? gcd(b, a % b) : a; }

// The width of a rung one ladder step above the largest, for every ladder alike: a multiple of the baseline's
// widths' greatest common divisor (so that head and group sizes dividing every width divide it) above its largest,
// the one whose run's FLOPs lie nearest (in log) to x0^2/x1 (x: the runs' FLOPs at the two largest rungs: the
// step compare's hypothetical next rung takes) among those every ladder's model takes, up to 4x the largest
// width. 0 where there is none (fewer than 2 rungs, a ladder of budgets or of LADDER_MAX_RUNGS rungs, no width).
static size_t next_width(const ladder_spec *specs, size_t n) {
    ladder_run *runs;
    size_t nr, q = 0, best = 0;
    for (size_t i = 0; i < n; i++)
        if (specs[i].budgets[0] > 0 || specs[i].n_rungs >= LADDER_MAX_RUNGS || specs[i].n_rungs < 2) return 0;
    if (ladder_plan(&specs[0], &runs, &nr)) return 0;
    size_t w0 = runs[0].width;
    double want = log(runs[0].flops * runs[0].flops / runs[ladder_rung_start(&specs[0], 1)].flops), nearest = INFINITY;
    free(runs);
    for (size_t r = 0; r < specs[0].n_rungs; r++) q = gcd(q, specs[0].widths[r]);
    for (size_t w = (w0 / q + 1) * q; w <= 4 * w0; w += q) {
        double x = NAN;
        bool ok = true;
        for (size_t i = 0; i < n && ok; i++) {
            ladder_spec t = specs[i];
            ok = ladder_add_rung(&t, w, 1) == SX_OK && ladder_plan(&t, &runs, &nr) == SX_OK;
            if (ok && i == 0) x = log(runs[0].flops);
            if (ok) free(runs);
        }
        if (ok && fabs(x - want) < nearest) { nearest = fabs(x - want); best = w; }
        if (ok && x > want) break;   // wider only goes further
    }
    return best;
}

// FLOPs of training the front rung (plan rung 0: one just added) of every ladder, runs not DONE under dirs.
static sx_status front_rung_flops(const ladder_spec *specs, const char *const *dirs, size_t n, double *flops) {
    *flops = 0;
    for (size_t k = 0; k < n; k++) {
        ladder_run *runs;
        size_t nr, r = 0;
        sx_status st = ladder_plan(&specs[k], &runs, &nr);
        if (st) return st;
        for (size_t i = 0; i < nr; i++) {
            size_t m = main_run(&specs[k], runs, i, &r);
            if (m != SIZE_MAX && r == 0) *flops += run_cost(&specs[k], runs, i, m, dirs[k]);
        }
        free(runs);
    }
    return SX_OK;
}

// A larger rung for this round, where the interval is mostly the extrapolation's: with a width for it (next_width)
// and as many seeds as the largest rung has, in every ladder (grown: the specs with it), its FLOPs (*cost) within
// flops_left, and the comparison's hypothetical next rung narrowing the variants that want seeds more than seeds
// placed by the noise for those FLOPs, summed over them (extrapolation's "bound"). Returns the round's allocation
// entry (without its FLOPs) and says it on stderr; NULL for a round of seeds.
static json_t *plan_rung(json_t *report, const rungs_state *g, const ladder_spec *specs, const char *const *dirs, size_t n,
                         const sequential_options *o, double flops_left, int round, ladder_spec *grown, double *cost) {
    json_t *rows = json_object_get(report, "variants");
    size_t w = o->seeds_only || !json_is_true(json_object_get(report, "paired")) ? 0 : next_width(specs, n);
    for (size_t i = 0; w && i < n; i++) {
        grown[i] = specs[i];
        if (ladder_add_rung(&grown[i], w, g->seeds[0])) w = 0;
    }
    if (!w || front_rung_flops(grown, dirs, n, cost) || !(*cost <= flops_left)) return NULL;
    double *var = calloc(json_array_size(rows) * g->R, sizeof *var);
    json_t *x = var && noise_of(report, g, o, var) ? extrapolation(report, g, var, o, *cost) : NULL;
    free(var);
    if (!json_is_true(json_object_get(x, "bound"))) { json_decref(x); return NULL; }
    json_t *shrink = json_object_get(x, "rung_shrink"), *by_seeds = json_object_get(x, "seed_shrink");
    fprintf(stderr, "until-decided: round %d adds a rung, w%zu, with %zu seeds in every ladder (%.3g FLOPs); for those FLOPs",
            round, w, g->seeds[0], *cost);
    for (size_t i = 1; i < json_array_size(rows); i++)
        if (json_is_number(json_array_get(shrink, i)) && json_is_number(json_array_get(by_seeds, i)))
            fprintf(stderr, " %s: the rung narrows the paired interval by about %.0f%%, seeds by %.0f%%;",
                    json_string_value(json_object_get(json_array_get(rows, i), "name")), 100 * json_number_value(json_array_get(shrink, i)),
                    100 * json_number_value(json_array_get(by_seeds, i)));
    fprintf(stderr, " the looks after it test at the alpha the looks before left\n");
    size_t widths[LADDER_MAX_RUNGS], added[LADDER_MAX_RUNGS] = {g->seeds[0]};
    widths[0] = w;
    memcpy(widths + 1, g->width, g->R * sizeof *widths);
    json_t *entry = json_pack("{s:i, s:s, s:o, s:o, s:O, s:n, s:I}", "round", round, "placed", "new rung", "widths",
                              sizes(widths, g->R + 1), "added", sizes(added, g->R + 1), "shrink", shrink, "for", "new_width",
                              (json_int_t)w);
    json_decref(x);
    return entry;
}

// Whether round entry (plan_round's) was placed by the noise and narrows no variant that still wants seeds by
// NARROW_MIN or more: a round not worth its FLOPs.
static bool narrows_nothing(json_t *report, json_t *entry, const sequential_options *o) {
    json_t *rows = json_object_get(report, "variants"), *shrink = json_object_get(entry, "shrink");
    if (strcmp(json_string_value(json_object_get(entry, "placed")), "by noise")) return false;
    for (size_t i = 1; i < json_array_size(rows); i++)
        if (wants_seeds(json_array_get(rows, i), o) && json_number_value(json_array_get(shrink, i)) >= NARROW_MIN) return false;
    return true;
}

// FLOPs the budget leaves after spent FLOPs and the time since t0: NAN where only hours are given and no
// seconds per FLOP are known yet; INFINITY without a budget.
static double flops_left(const sequential_options *o, double spent, double t0, double spf) {
    double left = o->budget_flops > 0 ? o->budget_flops - spent : INFINITY;
    if (o->budget_hours > 0) left = spf > 0 ? fmin(left, (3600 * o->budget_hours - (now_s() - t0)) / spf) : NAN;
    return isnan(left) ? NAN : fmax(left, 0);
}

const char *sequential_seeds_added(const ladder_spec *specs, size_t n) {
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < specs[i].n_rungs; r++)
            if (specs[i].n_added_rungs || ladder_rung_seeds(&specs[i], r) > specs[i].n_seeds) return specs[i].name;
    return NULL;
}

// The looks so far and the verdicts (v, one per ladder) into the baseline's directory (scale/look_record.h).
static sx_status record_looks(const char *dir, const look_key *k, const look_log *L, bool final, look_verdict *v) {
    look_record rec = {.n_looks = L->n, .seeds = L->seeds, .last_final = final, .verdicts = v, .n_stages = L->n_stages,
                       .stage_t = L->stage_t};
    memcpy(rec.stage_first, L->stage_first, sizeof rec.stage_first);
    return look_record_write(dir, k, &rec);
}

// A new stage of L before the rung of grown (plan_rung's specs) trains: each undecided variant's information
// fraction at the last look (look_level's, at the FLOPs left then; NAN for the baseline and the decided) closes the
// stage, every look's seeds move one rung back (0 at the new rung), specs become grown, and each ladder's
// seeds.json and the looks (key: now with the rung) are written.
static sx_status start_stage(json_t *report, const rungs_state *g, look_log *L, double flops_left, const sequential_options *o,
                             look_verdict *v, const ladder_spec *grown, ladder_spec *specs, const char *const *dirs,
                             look_key *key) {
    size_t n = L->ladders;
    double *t = realloc(L->stage_t, (L->n_stages + 1) * n * sizeof *t);
    if (!t) return SX_ERR_NOMEM;
    L->stage_t = t;
    t += L->n_stages * n;
    for (size_t i = 0; i < n; i++) {
        t[i] = NAN;
        if (i > 0 && v[i].look < 0)
            look_level(json_array_get(json_object_get(report, "variants"), i), i, g, L, flops_left, false, o->spend, COMPARE_ALPHA, &t[i]);
    }
    L->stage_first[L->n_stages++] = L->n;
    for (size_t j = 0; j < L->n; j++) {
        memmove(L->seeds[j] + 1, L->seeds[j], (LADDER_MAX_RUNGS - 1) * sizeof *L->seeds[j]);
        L->seeds[j][0] = 0;
    }
    memcpy(specs, grown, n * sizeof *specs);
    size_t widths[LADDER_MAX_RUNGS];
    widths[0] = specs[0].widths[specs[0].n_rungs - 1];
    memcpy(widths + 1, g->width, g->R * sizeof *widths);
    look_key k = *key;
    k.widths = widths;
    k.R = g->R + 1;
    sx_status st = SX_OK;
    for (size_t i = 0; i < n && !st; i++) st = ladder_seeds_write(&specs[i], dirs[i]);
    return st ? st : record_looks(dirs[0], &k, L, false, v);
}

// Before the first look: the looks and verdicts an earlier --until-decided recorded for these ladders go first
// in L and v, so this run's alpha spending counts them (its first look, on the same seeds as the last one
// recorded, adds no information and gets level 0). Where none applies but the ladders hold seeds an earlier run
// added, a note says those looks are not counted.
static sx_status continue_looks(const ladder_spec *specs, const char *const *dirs, const look_key *k, look_log *L, look_verdict *v) {
    look_record rec;
    const char *why;
    size_t n = k->n;
    sx_status st = look_record_read(dirs[0], k, &rec, &why);
    if (st) return st;
    for (size_t j = 0; j < rec.n_looks && !st; j++) st = look_add(L, rec.seeds[j]);
    if (!st && rec.n_looks) memcpy(v, rec.verdicts, n * sizeof *v);
    if (!st && rec.n_looks && rec.n_stages) {   // the record's stages become L's
        L->n_stages = rec.n_stages;
        memcpy(L->stage_first, rec.stage_first, sizeof L->stage_first);
        L->stage_t = rec.stage_t;
        rec.stage_t = NULL;
    }
    if (!st && rec.n_looks)
        fprintf(stderr, "until-decided: continuing the %zu look%s an earlier --until-decided made on these ladders (%s/%s): its "
                "verdicts stand and the alpha spending counts its looks\n", rec.n_looks, rec.n_looks == 1 ? "" : "s", dirs[0], LOOK_RECORD_FILE);
    if (!st && rec.last_final)
        fprintf(stderr, "until-decided: note: that run's last look was at its budget's end and spent all of the %.0f%%; its looks "
                "count here at the new budget's horizon, and a verdict this run adds can pass %.0f%% (a simulation of such an "
                "extension: 7.2%%, against 7.4%% starting afresh; tests/test_spending.c)\n", 100 * COMPARE_ALPHA, 100 * COMPARE_ALPHA);
    const char *earlier = rec.n_looks ? NULL : sequential_seeds_added(specs, n);
    if (earlier)
        fprintf(stderr, "until-decided: note: %s has seeds an earlier --until-decided added (seeds.json), but its looks are not "
                "counted (%s); this run's alpha spending counts its own looks only, so the error over both runs together can "
                "pass %.0f%%\n", earlier, why ? why : "no record of them in the baseline's " LOOK_RECORD_FILE, 100 * COMPARE_ALPHA);
    look_record_free(&rec);
    return st;
}

sx_status sequential_compare(ladder_spec *specs, const char *const *dirs, size_t n, double C, bool shared_linf,
                             const sequential_options *o, json_t **report) {
    double t0 = now_s(), spent = 0, train_s = 0, logged_spf = logged_seconds_per_flop(&specs[0], dirs[0]);
    int rounds = 0;
    json_t *r = NULL, *allocation = json_array();
    const char *stop = NULL;
    sx_status st = SX_OK;
    rungs_state g;
    look_log looks = {.ladders = n};
    json_t *rungs_added = json_array();
    ladder_spec *grown = malloc(n * sizeof *grown);   // the specs with a rung added
    sequential_options pocock = *o;   // spend NULL: the Pocock type
    if (!o->spend) {
        pocock.spend = spending_pocock;
        pocock.spending = "Pocock-type";
        o = &pocock;
    }
    look_verdict *v = malloc(n * sizeof *v);
    if (!v || !grown) st = SX_ERR_NOMEM;
    for (size_t i = 0; i < n && v; i++) v[i] = (look_verdict){.look = -1, .level = NAN};
    const char **names = malloc(n * sizeof *names);
    if (!names) st = SX_ERR_NOMEM;
    for (size_t i = 0; i < n && names; i++) names[i] = specs[i].name;
    size_t earlier_looks = 0;
    look_key key;
    // The ladders' own seeds not trained yet are trained first, and count against the budget as a round's runs
    // do: the budget bounds what the command trains and how long it takes.
    double first = 0;
    for (size_t i = 0; i < n && !st; i++) {
        double c = 0;
        st = pending_flops(&specs[i], dirs[i], &c);
        first += c;
    }
    if (!st && first > 0) {
        double t1 = now_s();
        st = ladder_execute(specs, dirs, n, o->exe, o->jobs, -1);
        train_s += now_s() - t1;
        spent += first;
    }
    while (!st) {
        json_decref(r);
        r = NULL;
        if ((st = compare_ladders(specs, dirs, n, C, shared_linf, &r))) break;
        if ((st = rungs_read(specs, dirs, n, &g))) break;
        key = (look_key){.names = names, .n = n, .widths = g.width, .R = g.R, .target_flops = C, .shared_linf = shared_linf};
        if (!rounds) {   // the first look: an earlier run's looks of this comparison go first
            if ((st = continue_looks(specs, dirs, &key, &looks, v))) break;
            earlier_looks = looks.n;
        }
        if ((st = look_add(&looks, g.seeds))) break;
        double spf = spent > 0 ? train_s / spent : logged_spf;   // seconds per FLOP: measured here, else logged
        double left = flops_left(o, spent, t0, spf);
        if ((st = test_look(r, &g, &looks, left, false, o, v)) || (st = record_looks(dirs[0], &key, &looks, false, v))) break;
        apply_verdicts(r, v, o, looks.n);
        if ((stop = stop_reason(r, o))) break;
        double cost;
        json_t *entry = plan_rung(r, &g, specs, dirs, n, o, left, rounds + 1, grown, &cost);
        if (entry) {   // a new stage, recorded before the rung trains (a rerun resumes it)
            if ((st = start_stage(r, &g, &looks, left, o, v, grown, specs, dirs, &key))) { json_decref(entry); break; }
            json_array_append_new(rungs_added, json_incref(json_object_get(entry, "new_width")));
        } else {
            size_t target[LADDER_MAX_RUNGS];
            entry = plan_round(r, &g, n, o, v, &looks, left, rounds + 1, target);
            cost = round_flops(&g, target);
            bool at_limit = false;
            for (size_t k = 0; k < g.R; k++) at_limit = at_limit || target[k] > MAX_SEEDS;
            double left_s = 3600 * o->budget_hours - (now_s() - t0);
            bool over_time = o->budget_hours > 0 && (left_s <= 0 || cost * spf > left_s);
            bool over_flops = o->budget_flops > 0 && spent + cost > o->budget_flops;
            bool useless = !(over_time || over_flops || at_limit) && narrows_nothing(r, entry, o);
            if (over_time || over_flops || at_limit || useless) {   // the last look: it spends what alpha is left
                if (useless)
                    fprintf(stderr, "until-decided: round %d would narrow no open interval by %.1f%% or more: not trained\n",
                            rounds + 1, 100 * NARROW_MIN);
                else fprintf(stderr, "until-decided: round %d would cost %.3g FLOPs: over the budget, not trained\n", rounds + 1, cost);
                json_decref(entry);
                if ((st = test_look(r, &g, &looks, 0, true, o, v)) || (st = record_looks(dirs[0], &key, &looks, true, v))) break;
                apply_verdicts(r, v, o, looks.n);
                stop = stop_reason(r, o);
                if (!stop) stop = useless ? "narrowing" : "budget";
                break;
            }
            fprintf(stderr, "until-decided: round %d trains %.3g FLOPs\n", rounds + 1, cost);
            for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < g.R && k < specs[i].n_rungs; k++) specs[i].rung_seeds[k] = target[k];
        }
        json_object_set_new(entry, "flops", json_real(cost));
        json_array_append_new(allocation, entry);
        double t1 = now_s();
        if ((st = ladder_execute(specs, dirs, n, o->exe, o->jobs, -1))) break;   // the round's runs in one pool
        for (size_t i = 0; i < n && !st; i++) st = ladder_seeds_write(&specs[i], dirs[i]);   // fit and compare find them
        if (st) break;
        train_s += now_s() - t1;
        spent += cost;
        rounds++;
    }
    free(looks.seeds);
    free(looks.stage_t);
    free(v);
    free(names);
    free(grown);
    if (st) { json_decref(r); json_decref(allocation); json_decref(rungs_added); return st; }
    json_t *rows = json_object_get(r, "variants"), *more = json_array(), *more_rungs = json_array(), *more_flops = json_array();
    json_t *more_level = json_array();
    size_t fewest = fewest_seeds(&g);
    double *var = calloc(json_array_size(rows) * g.R, sizeof *var);
    bool noise = var && noise_of(r, &g, o, var);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        double w = num(e, "paired_hi") - num(e, "paired_lo"), k = NAN, fl = NAN;
        double a = num(e, "sequential_level") > 0 ? num(e, "sequential_level") : undecided_level(r);   // as its next look would
        bool open = i > 0 && wants_seeds(e, o) && !(o->width > 0 && w <= o->width);
        if (open) k = more_seeds(e, fewest, a, o);
        json_array_append_new(more, isfinite(k) ? json_integer((json_int_t)k) : json_null());
        json_array_append_new(more_level, isfinite(k) ? json_real(a) : json_null());
        size_t added[LADDER_MAX_RUNGS], total = 0;
        double ratio = open ? narrow_ratio(e, fewest, a, o) : NAN;
        bool placed = noise && isfinite(ratio) && isfinite(place_for(var, i, &g, ratio, INFINITY, added, &fl));
        for (size_t q = 0; placed && q < g.R; q++) total += added[q];
        placed = placed && total > 0;   // none where the seeds now already give the power (a ratio of 1)
        json_array_append_new(more_rungs, placed ? sizes(added, g.R) : json_null());
        json_array_append_new(more_flops, placed ? json_real(fl) : json_null());
    }
    json_t *x = json_is_true(json_object_get(r, "paired")) ? extrapolation(r, &g, noise ? var : NULL, o, NAN) : NULL;
    free(var);
    json_t *u = json_pack("{s:s, s:i, s:i, s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:o}", "stop", stop, "rounds", rounds, "looks", (int)looks.n,
                          "spending", o->spending, "seeds", (json_int_t)fewest,
                          "flops_spent", spent, "seconds", now_s() - t0, "width", o->width, "budget_flops", o->budget_flops,
                          "budget_hours", o->budget_hours, "more_seeds", more);
    json_object_set_new(u, "precision", json_real(o->precision));
    json_object_set_new(u, "flops_first", json_real(first));
    json_object_set_new(u, "earlier_looks", json_integer((json_int_t)earlier_looks));
    json_object_set_new(u, "widths", sizes(g.width, g.R));
    json_object_set_new(u, "rung_seeds", sizes(g.seeds, g.R));
    json_object_set_new(u, "allocation", allocation);
    json_object_set_new(u, "rungs_added", rungs_added);
    json_object_set_new(u, "more_seeds_rungs", more_rungs);
    json_object_set_new(u, "more_seeds_flops", more_flops);
    json_object_set_new(u, "more_seeds_level", more_level);
    if (x) json_object_set_new(u, "extrapolation", x);
    json_object_set_new(r, "until_decided", u);
    *report = r;
    return SX_OK;
}

// "w48 +3, w8 +10": the rungs of a per-rung seed list (null: nothing) that are not zero.
static void print_rungs(FILE *out, json_t *widths, json_t *counts, const char *sign) {
    const char *sep = "";
    for (size_t r = 0; r < json_array_size(counts); r++) {
        json_int_t k = json_integer_value(json_array_get(counts, r));
        if (!k && *sign) continue;
        fprintf(out, "%sw%lld %s%lld", sep, (long long)json_integer_value(json_array_get(widths, r)), sign, (long long)k);
        sep = ", ";
    }
}

// "; about K more seeds per rung would be needed (...)" for report row i (more_seeds k, an integer), and where
// they go when placed by the noise; ends the line.
static void print_more(FILE *out, json_t *u, json_t *e, size_t i, json_int_t seeds) {
    json_int_t k = json_integer_value(json_array_get(json_object_get(u, "more_seeds"), i));
    json_t *placed = json_array_get(json_object_get(u, "more_seeds_rungs"), i);
    char goal[200];
    if (num(u, "precision") > 0) snprintf(goal, sizeof goal, "for its paired interval within +-%.3g%%", 100 * num(u, "precision"));
    else snprintf(goal, sizeof goal, "for 80%% power to decide the estimated loss gain (%.3fx) at level %.3g%s", num(e, "multiplier"),
                  json_number_value(json_array_get(json_object_get(u, "more_seeds_level"), i)),
                  num(u, "width") > 0 ? " or an interval narrower than --width, whichever is sooner" : "");
    fprintf(out, "; about %lld more seeds per rung would be needed (%lld in all, %s; the standard error falling as "
            "1/sqrt(seeds), t quantiles on the degrees of freedom it would have there)", (long long)k, (long long)(seeds + k), goal);
    if (json_is_array(placed)) {
        json_int_t total = 0;
        for (size_t q = 0; q < json_array_size(placed); q++) total += json_integer_value(json_array_get(placed, q));
        fprintf(out, "; or %lld seeds placed where they narrow it most per FLOP (", (long long)total);
        print_rungs(out, json_object_get(u, "widths"), placed, "+");
        fprintf(out, "; %.3g FLOPs)", json_number_value(json_array_get(json_object_get(u, "more_seeds_flops"), i)));
    }
    fprintf(out, "\n");
}

void sequential_print(FILE *out, json_t *r) {
    json_t *u = json_object_get(r, "until_decided"), *rows = json_object_get(r, "variants"), *rs = json_object_get(u, "rung_seeds");
    const char *stop = json_string_value(json_object_get(u, "stop"));
    json_int_t seeds = json_integer_value(json_object_get(u, "seeds")), most = seeds;
    double precision = num(u, "precision");
    for (size_t k = 0; k < json_array_size(rs); k++)
        if (json_integer_value(json_array_get(rs, k)) > most) most = json_integer_value(json_array_get(rs, k));
    char why_stop[96];
    if (!strcmp(stop, "precision")) snprintf(why_stop, sizeof why_stop, "every paired interval within +-%.3g%% of its estimate", 100 * precision);
    else snprintf(why_stop, sizeof why_stop, "%s", !strcmp(stop, "decided") ? "every variant decided"
                                                   : !strcmp(stop, "width") ? "every undecided interval narrower than --width"
                                                   : !strcmp(stop, "narrowing") ? "no round left that would narrow an interval"
                                                   : "budget spent");
    fprintf(out, "until-decided: stopped (%s) after %d round%s, ", why_stop, (int)json_integer_value(json_object_get(u, "rounds")),
            json_integer_value(json_object_get(u, "rounds")) == 1 ? "" : "s");
    if (most == seeds) fprintf(out, "%lld seeds per rung", (long long)seeds);
    else {
        fprintf(out, "seeds per rung ");
        print_rungs(out, json_object_get(u, "widths"), rs, "");
    }
    json_t *added = json_object_get(u, "rungs_added");
    for (size_t k = 0; k < json_array_size(added); k++)
        fprintf(out, "%s%lld", k ? ", w" : " (a rung added: w", (long long)json_integer_value(json_array_get(added, k)));
    double first = num(u, "flops_first");
    fprintf(out, "%s, %.3g FLOPs added", json_array_size(added) ? ")" : "", num(u, "flops_spent") - first);
    if (first > 0) fprintf(out, " after %.3g FLOPs of the ladders' own seeds", first);
    fprintf(out, ", %.0f s in all\n", num(u, "seconds"));
    json_int_t looks = json_integer_value(json_object_get(u, "looks"));
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *k = json_array_get(json_object_get(u, "more_seeds"), i);
        const char *name = json_string_value(json_object_get(e, "name"));
        if (json_is_true(json_object_get(e, "decided"))) {
            fprintf(out, "  %s: decided at look %lld of %lld (p %.3g at most its group-sequential level %.3g)", name,
                    (long long)json_integer_value(json_object_get(e, "decided_look")) + 1, (long long)looks, num(e, "p_value"),
                    num(e, "sequential_level"));
            if (json_is_integer(k)) print_more(out, u, e, i, seeds);
            else fprintf(out, "\n");
            continue;
        }
        fprintf(out, "  %s: undecided", name);
        if (isfinite(num(e, "sequential_level")))
            fprintf(out, " (p %.3g above its group-sequential level %.3g at the last look)", num(e, "p_value"), num(e, "sequential_level"));
        if (json_is_integer(k)) print_more(out, u, e, i, seeds);
        else if (precision > 0 && precise(e, precision)) fprintf(out, "; its paired interval is within +-%.3g%%\n", 100 * precision);
        else if (!(num(u, "width") > 0 && num(e, "paired_hi") - num(e, "paired_lo") <= num(u, "width")))
            fprintf(out, "; no estimate of the seeds needed (the estimated multiplier is %.3fx)\n", num(e, "multiplier"));
        else fprintf(out, "; its paired interval is narrower than --width\n");
    }
    json_t *x = json_object_get(u, "extrapolation"), *rung = json_object_get(x, "rung_shrink"), *seed = json_object_get(x, "seed_shrink");
    for (size_t i = 1; i < json_array_size(rows) && strcmp(stop, "decided"); i++) {
        if (!json_is_number(json_array_get(rung, i)) || !json_is_number(json_array_get(seed, i))) continue;
        double by_rung = json_number_value(json_array_get(rung, i)), by_seeds = json_number_value(json_array_get(seed, i));
        fprintf(out, "  %s: a rung one ladder step above the largest (%.3g FLOPs, %lld seeds, %.3g FLOPs in all the ladders) "
                "would narrow its interval by about %.0f%%, seeds for the same FLOPs by %.0f%%: %s\n",
                json_string_value(json_object_get(json_array_get(rows, i), "name")), num(x, "next_rung_flops"),
                (long long)json_integer_value(json_object_get(x, "seeds")), num(x, "flops"), 100 * by_rung, 100 * by_seeds,
                by_rung > by_seeds ? "the interval is mostly extrapolation; a larger rung buys more (added by the rounds where "
                                     "its FLOPs fit the budget and --seeds-only is not given)" : "seeds first");
    }
}
