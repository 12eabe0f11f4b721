#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/lines.h"
#include "scale/compare.h"
#include "scale/ladder_seeds.h"
#include "scale/sequential.h"

#define MAX_SEEDS 1000   // the ladder spec's limit
#define PLACE_MIN_SEEDS 3   // seeds a rung needs before its noise places seeds: two give one degree of freedom

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

// FLOPs of training the runs next's plan holds beyond now's (main runs of a seed beyond now's count at
// their rung, and their cooldown branches) that are not DONE under dir; a branch costs what it trains beyond
// its branch point.
static sx_status added_flops(const ladder_spec *now, const ladder_spec *next, const char *dir, double *flops) {
    ladder_run *runs;
    size_t n;
    sx_status st = ladder_plan(next, &runs, &n);
    if (st) return st;
    size_t mains = ladder_rung_start(next, next->n_rungs), nb = next->n_branches;
    *flops = 0;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].branch == LADDER_SWEEP) continue;
        size_t m = runs[i].branch < 0 ? i : (i - mains) / nb, r = 0;   // its main run, and that one's rung
        while (ladder_rung_start(next, r + 1) <= m) r++;
        if (runs[m].seed <= ladder_rung_seeds(now, r)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/DONE", dir, runs[i].dir);
        if (access(path, F_OK) == 0) continue;
        *flops += runs[i].flops - (runs[i].branch < 0 ? 0 : runs[m].flops * next->branches[runs[i].branch].from);
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
typedef struct { double S, df, se, a, effect, multiplier, width; } seeds_goal;

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

// The paired interval's width in multiplier units at ln half-width h about multiplier m.
static double width_at(double m, double h) { return 2 * m * sinh(h); }

// The paired interval at N seeds is still wider than the goal.
static bool width_too_few(const seeds_goal *g, double n) {
    double t = gsl_cdf_tdist_Pinv(1 - COMPARE_ALPHA / 2, df_at(g, n));
    return width_at(g->multiplier, t * g->se * sqrt(g->S / n)) > g->width;
}

double sequential_width_seeds(double multiplier, double se, double df, size_t seeds, double width) {
    if (!(multiplier > 0 && isfinite(multiplier) && se > 0 && width > 0)) return NAN;
    // At a quantile q held fixed, width_at(m, q se sqrt(S/N)) = width at N = S (q se / asinh(width / 2m))^2.
    double S = (double)seeds, a = asinh(width / (2 * multiplier)), z = gsl_cdf_ugaussian_Pinv(1 - COMPARE_ALPHA / 2);
    if (!(seeds > 1 && df > 0 && isfinite(df))) return S * (z * se / a) * (z * se / a);
    double lo = S * (z * se / a) * (z * se / a), q = gsl_cdf_tdist_Pinv(1 - COMPARE_ALPHA / 2, df), hi = S * (q * se / a) * (q * se / a);
    if (hi <= S) return hi;   // narrow enough already
    // The root lies past S, where the interval is still too wide, and below the N of today's quantile.
    seeds_goal g = {.S = S, .df = df, .se = se, .multiplier = multiplier, .width = width};
    return bisect_seeds(fmax(lo, S), hi, width_too_few, &g);
}

// Seeds per rung in all (from S now) that would bring variant e to a decision with 80% power at level a
// (sequential_power_seeds), or its paired interval under width when that is sooner (sequential_width_seeds);
// both take the t quantiles on the degrees of freedom the interval would have there. NAN when no estimate is
// possible.
static double seeds_needed(json_t *e, size_t S, double a, double width) {
    double m = num(e, "multiplier"), lo = num(e, "paired_lo"), hi = num(e, "paired_hi");
    if (!(lo > 0 && hi >= lo && isfinite(hi) && m > 0 && isfinite(m))) return NAN;
    double se = num(e, "paired_se"), df = num(e, "paired_df"), need = sequential_power_seeds(fabs(log(m)), se, df, S, a);
    if (!isfinite(need)) need = INFINITY;
    if (width > 0 && hi - lo > 0) need = fmin(need, sequential_width_seeds(m, se, df, S, width));
    return isfinite(need) ? need : NAN;
}

// Seeds per rung, beyond S, that seeds_needed says; NAN when no estimate is possible.
static double more_seeds(json_t *e, size_t S, double a, double width) {
    double need = seeds_needed(e, S, a, width);
    if (!isfinite(need)) return NAN;
    double more = ceil(need - 1e-9) - (double)S;
    return more < 1 ? 1 : more;
}

// Why to stop after this report (NULL: go on), given the options.
static const char *stop_reason(json_t *report, double width) {
    json_t *rows = json_object_get(report, "variants");
    bool all_decided = true, all_narrow = width > 0;
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        if (json_is_true(json_object_get(e, "decided"))) continue;
        all_decided = false;
        double w = num(e, "paired_hi") - num(e, "paired_lo");
        if (!(w <= width)) all_narrow = false;
    }
    return all_decided ? "decided" : all_narrow ? "width" : NULL;
}

// The ladders' state for placing seeds: each rung's width (the baseline's), its seeds (the most any ladder
// has), and the FLOPs of one more seed there over all ladders.
typedef struct {
    size_t R, width[LADDER_MAX_RUNGS], seeds[LADDER_MAX_RUNGS];
    double cost[LADDER_MAX_RUNGS];
} rungs_state;

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
            if (!(st = added_flops(&specs[i], &next, dirs[i], &c))) g->cost[r] += c;
        }
    }
    return st;
}

// Each undecided variant's seed-noise variance of its ln multiplier per rung (the compare report's paired
// jackknife, rung_var): var (n, R) overwritten, rows of the baseline and of decided variants zero. False when
// the noise cannot place seeds: no pairing, a rung with fewer than PLACE_MIN_SEEDS seeds, a variance that is
// not finite, or no undecided variant with any noise at all.
static bool noise_of(json_t *report, const rungs_state *g, double *var) {
    json_t *rows = json_object_get(report, "variants");
    double total = 0;
    for (size_t r = 0; r < g->R; r++)
        if (g->seeds[r] < PLACE_MIN_SEEDS) return false;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *rv = json_object_get(e, "rung_var");
        bool on = i > 0 && !json_is_true(json_object_get(e, "decided"));
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

// The rung whose next seed narrows the variants' intervals most per FLOP (the sum over variants of
// seed_shrink over the rung's cost); *score receives that, per FLOP. variants: n rows of var.
static size_t best_rung(const double *var, size_t n, const size_t *seeds, const rungs_state *g, double *score) {
    size_t best = 0;
    *score = -1;
    for (size_t r = 0; r < g->R; r++) {
        double gain = 0;
        for (size_t i = 0; i < n; i++) gain += seed_shrink(var, g->R, i, r, seeds);
        double sc = gain / fmax(g->cost[r], 1);
        if (seeds[r] < MAX_SEEDS && sc > *score) { *score = sc; best = r; }
    }
    return best;
}

// One more seed at rung r in the model of the variances: rung r's share of every row goes from v/S to v/(S+1).
static void place_seed(double *var, size_t n, size_t R, size_t r, size_t *seeds) {
    for (size_t i = 0; i < n; i++) var[i * R + r] *= (double)seeds[r] / (double)(seeds[r] + 1);
    seeds[r]++;
}

// Places seeds for variant i (var0: noise_of's rows) one by one where they narrow its interval most per FLOP,
// until its width is down to the fraction ratio of now (0: no such stop) or the next seed would pass max_flops.
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
    while (now > ratio * ratio * total) {
        size_t r = best_rung(var, 1, seeds, g, &score);
        if (!(score > 0)) return ratio > 0 ? NAN : 1 - sqrt(fmax(now, 0) / total);
        if (*flops + g->cost[r] > max_flops) break;
        *flops += g->cost[r];
        now -= var[r] / (double)(seeds[r] + 1);
        place_seed(var, 1, g->R, r, seeds);
    }
    for (size_t r = 0; added && r < g->R; r++) added[r] = seeds[r] - g->seeds[r];
    return total > 0 ? 1 - sqrt(fmax(now, 0) / total) : 0;
}

// The fraction variant e's paired standard error must shrink to, to decide with 80% power at level a, or to
// reach width if that is sooner (at S seeds per rung now: sqrt(S / seeds_needed)); NAN when no estimate is
// possible.
static double narrow_ratio(json_t *e, size_t S, double a, double width) {
    double need = seeds_needed(e, S, a, width);
    return need > 0 ? fmin(sqrt((double)S / need), 1) : NAN;
}

// Seeds against a larger rung, for every undecided variant: how much the report's hypothetical next rung
// narrows its interval (next_rung_var against the sum of rung_var; as many seeds as the largest rung, at
// next_rung_flops in every ladder) against what the same FLOPs buy as seeds placed by the noise (var: noise_of's
// rows). Returns {"next_rung_flops" (the baseline's), "seeds", "flops" (the rung in all ladders), "rung_shrink",
// "seed_shrink": [per variant; null for the baseline, a decided variant or no estimate], "bound": true when the
// rung narrows some undecided variant's interval more: the noise is mostly the extrapolation's leverage on
// the rungs' seed noise, and a larger rung is the advice}.
static json_t *extrapolation(json_t *report, const rungs_state *g, const double *var) {
    json_t *rows = json_object_get(report, "variants"), *rung = json_array(), *seeds = json_array();
    double flops = 0;
    bool bound = false;
    for (size_t i = 0; i < json_array_size(rows); i++) flops += (double)g->seeds[0] * num(json_array_get(rows, i), "next_rung_flops");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *rv = json_object_get(e, "rung_var");
        double total = 0;
        for (size_t r = 0; r < json_array_size(rv); r++) total += json_number_value(json_array_get(rv, r));
        double ratio = num(e, "next_rung_var") / total, spent, by_seeds = var ? place_for(var, i, g, 0, flops, NULL, &spent) : NAN;
        bool on = i > 0 && !json_is_true(json_object_get(e, "decided")) && total > 0 && isfinite(ratio) && isfinite(flops);
        double by_rung = 1 - sqrt(fmin(ratio, 1));
        json_array_append_new(rung, on ? json_real(by_rung) : json_null());
        json_array_append_new(seeds, on && isfinite(by_seeds) ? json_real(by_seeds) : json_null());
        bound = bound || (on && isfinite(by_seeds) && by_rung > by_seeds);
    }
    json_t *base = json_array_get(rows, 0);
    return json_pack("{s:f, s:I, s:f, s:o, s:o, s:b}", "next_rung_flops", num(base, "next_rung_flops"), "seeds",
                     (json_int_t)g->seeds[0], "flops", flops, "rung_shrink", rung, "seed_shrink", seeds, "bound", bound);
}

static json_t *sizes(const size_t *x, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((json_int_t)x[i]));
    return a;
}

// This round's seeds: target (R) overwritten with every rung's seed count after it (the same for every
// ladder, so seed k stays paired), placed where the noise says (at least one seed, and enough for jobs runs
// over the n ladders), or one more at every rung when the noise cannot place them (noise_of). Returns the
// round's entry of the report's allocation (without its FLOPs), and says it on stderr.
static json_t *plan_round(json_t *report, const rungs_state *g, size_t n, int jobs, int round, size_t *target) {
    json_t *rows = json_object_get(report, "variants");
    size_t nv = json_array_size(rows);
    double *var = calloc(nv * g->R, sizeof *var), *before = calloc(nv * g->R, sizeof *before);
    bool placed = var && before && noise_of(report, g, var);
    memcpy(target, g->seeds, g->R * sizeof *target);
    json_t *shrink = json_array();
    if (!placed) {
        bool few = false;
        for (size_t r = 0; r < g->R; r++) few = few || target[r] < PLACE_MIN_SEEDS;
        for (size_t r = 0; r < g->R; r++) target[r]++;
        if (few) fprintf(stderr, "until-decided: round %d adds a seed to every rung (a rung has fewer than %d seeds, too few to "
                         "place seeds by its noise)\n", round, PLACE_MIN_SEEDS);
        else fprintf(stderr, "until-decided: round %d adds a seed to every rung (no paired seed-noise estimate to place seeds "
                     "by)\n", round);
    } else {
        memcpy(before, var, nv * g->R * sizeof *var);
        size_t want = (size_t)jobs > n ? ((size_t)jobs + n - 1) / n : 1;
        for (size_t k = 0; k < want; k++) {
            double score;
            size_t r = best_rung(var, nv, target, g, &score);
            if (!(score > 0)) break;
            place_seed(var, nv, g->R, r, target);
        }
        fprintf(stderr, "until-decided: round %d adds", round);
        for (size_t r = 0; r < g->R; r++)
            if (target[r] > g->seeds[r]) fprintf(stderr, " %zu seed%s to rung w%zu (now %zu)", target[r] - g->seeds[r],
                                                 target[r] - g->seeds[r] == 1 ? "" : "s", g->width[r], target[r]);
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
    return json_pack("{s:i, s:s, s:o, s:o, s:o}", "round", round, "placed", placed ? "by noise" : "every rung", "widths",
                     sizes(g->width, g->R), "added", sizes(added, g->R), "shrink", shrink);
}

sx_status sequential_compare(ladder_spec *specs, const char *const *dirs, size_t n, double C, bool shared_linf,
                             const sequential_options *o, json_t **report) {
    double t0 = now_s(), spent = 0, train_s = 0, logged_spf = logged_seconds_per_flop(&specs[0], dirs[0]);
    int rounds = 0;
    json_t *r = NULL, *allocation = json_array();
    const char *stop = NULL;
    sx_status st = SX_OK;
    rungs_state g;
    for (;;) {
        json_decref(r);
        r = NULL;
        if ((st = compare_ladders(specs, dirs, n, C, shared_linf, &r))) break;
        if ((st = rungs_read(specs, dirs, n, &g))) break;
        if ((stop = stop_reason(r, o->width))) break;
        size_t target[LADDER_MAX_RUNGS];
        json_t *entry = plan_round(r, &g, n, o->jobs, rounds + 1, target);
        double cost = 0;
        bool at_limit = false;
        for (size_t k = 0; k < g.R; k++) {
            cost += (double)(target[k] - g.seeds[k]) * g.cost[k];
            at_limit = at_limit || target[k] > MAX_SEEDS;
        }
        double left_s = 3600 * o->budget_hours - (now_s() - t0);
        double spf = spent > 0 ? train_s / spent : logged_spf;   // seconds per FLOP: measured here, else logged
        bool over_time = o->budget_hours > 0 && (left_s <= 0 || cost * spf > left_s);
        bool over_flops = o->budget_flops > 0 && spent + cost > o->budget_flops;
        if (over_time || over_flops || at_limit) {
            fprintf(stderr, "until-decided: round %d would cost %.3g FLOPs: over the budget, not trained\n", rounds + 1, cost);
            json_decref(entry);
            stop = "budget";
            break;
        }
        json_object_set_new(entry, "flops", json_real(cost));
        json_array_append_new(allocation, entry);
        fprintf(stderr, "until-decided: round %d trains %.3g FLOPs\n", rounds + 1, cost);
        double t1 = now_s();
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < g.R && k < specs[i].n_rungs; k++) specs[i].rung_seeds[k] = target[k];
        if ((st = ladder_execute(specs, dirs, n, o->exe, o->jobs, -1))) break;   // the round's runs in one pool
        for (size_t i = 0; i < n && !st; i++) st = ladder_seeds_write(&specs[i], dirs[i]);   // fit and compare find them
        if (st) break;
        train_s += now_s() - t1;
        spent += cost;
        rounds++;
    }
    if (st) { json_decref(r); json_decref(allocation); return st; }
    json_t *rows = json_object_get(r, "variants"), *more = json_array(), *more_rungs = json_array(), *more_flops = json_array();
    size_t undecided = 0, fewest = MAX_SEEDS;
    for (size_t k = 0; k < g.R; k++) fewest = g.seeds[k] < fewest ? g.seeds[k] : fewest;
    for (size_t i = 1; i < json_array_size(rows); i++) undecided += !json_is_true(json_object_get(json_array_get(rows, i), "decided"));
    double a = COMPARE_ALPHA / (double)(undecided ? undecided : 1);
    double *var = calloc(json_array_size(rows) * g.R, sizeof *var);
    bool noise = var && noise_of(r, &g, var);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        double w = num(e, "paired_hi") - num(e, "paired_lo"), k = NAN, fl = NAN;
        bool open = i > 0 && !json_is_true(json_object_get(e, "decided")) && !(o->width > 0 && w <= o->width);
        if (open) k = more_seeds(e, fewest, a, o->width);
        json_array_append_new(more, isfinite(k) ? json_integer((json_int_t)k) : json_null());
        size_t added[LADDER_MAX_RUNGS];
        double ratio = open ? narrow_ratio(e, fewest, a, o->width) : NAN;
        bool placed = noise && isfinite(ratio) && isfinite(place_for(var, i, &g, ratio, INFINITY, added, &fl));
        json_array_append_new(more_rungs, placed ? sizes(added, g.R) : json_null());
        json_array_append_new(more_flops, placed ? json_real(fl) : json_null());
    }
    json_t *x = json_is_true(json_object_get(r, "paired")) ? extrapolation(r, &g, noise ? var : NULL) : NULL;
    free(var);
    json_t *u = json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:o}", "stop", stop, "rounds", rounds, "seeds", (json_int_t)fewest,
                          "flops_spent", spent, "seconds", now_s() - t0, "width", o->width, "budget_flops", o->budget_flops,
                          "budget_hours", o->budget_hours, "more_seeds", more);
    json_object_set_new(u, "widths", sizes(g.width, g.R));
    json_object_set_new(u, "rung_seeds", sizes(g.seeds, g.R));
    json_object_set_new(u, "allocation", allocation);
    json_object_set_new(u, "more_seeds_rungs", more_rungs);
    json_object_set_new(u, "more_seeds_flops", more_flops);
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

void sequential_print(FILE *out, json_t *r) {
    json_t *u = json_object_get(r, "until_decided"), *rows = json_object_get(r, "variants"), *rs = json_object_get(u, "rung_seeds");
    const char *stop = json_string_value(json_object_get(u, "stop"));
    json_int_t seeds = json_integer_value(json_object_get(u, "seeds")), most = seeds;
    for (size_t k = 0; k < json_array_size(rs); k++)
        if (json_integer_value(json_array_get(rs, k)) > most) most = json_integer_value(json_array_get(rs, k));
    fprintf(out, "until-decided: stopped (%s) after %d round%s, ",
            !strcmp(stop, "decided") ? "every variant decided" : !strcmp(stop, "width") ? "every undecided interval narrower than --width"
                                                                                    : "budget spent",
            (int)json_integer_value(json_object_get(u, "rounds")), json_integer_value(json_object_get(u, "rounds")) == 1 ? "" : "s");
    if (most == seeds) fprintf(out, "%lld seeds per rung", (long long)seeds);
    else {
        fprintf(out, "seeds per rung ");
        print_rungs(out, json_object_get(u, "widths"), rs, "");
    }
    fprintf(out, ", %.3g FLOPs added, %.0f s\n", num(u, "flops_spent"), num(u, "seconds"));
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *k = json_array_get(json_object_get(u, "more_seeds"), i);
        json_t *placed = json_array_get(json_object_get(u, "more_seeds_rungs"), i);
        if (json_is_true(json_object_get(e, "decided"))) continue;
        const char *name = json_string_value(json_object_get(e, "name"));
        if (json_is_integer(k)) {
            fprintf(out, "  %s: undecided; about %lld more seeds per rung would be needed (%lld in all, for 80%% power at the "
                    "estimated %.3fx%s; the paired standard error falling as 1/sqrt(seeds), t quantiles on the degrees of "
                    "freedom it would have there)", name, (long long)json_integer_value(k), (long long)(seeds + json_integer_value(k)),
                    num(e, "multiplier"), num(u, "width") > 0 ? " or an interval narrower than --width, whichever is sooner" : "");
            if (json_is_array(placed)) {
                json_int_t total = 0;
                for (size_t q = 0; q < json_array_size(placed); q++) total += json_integer_value(json_array_get(placed, q));
                fprintf(out, "; or %lld seeds placed where they narrow it most per FLOP (", (long long)total);
                print_rungs(out, json_object_get(u, "widths"), placed, "+");
                fprintf(out, "; %.3g FLOPs)", json_number_value(json_array_get(json_object_get(u, "more_seeds_flops"), i)));
            }
            fprintf(out, "\n");
        } else if (!(num(u, "width") > 0 && num(e, "paired_hi") - num(e, "paired_lo") <= num(u, "width")))
            fprintf(out, "  %s: undecided; no estimate of the seeds needed (the estimated multiplier is %.3fx)\n", name,
                    num(e, "multiplier"));
    }
    json_t *x = json_object_get(u, "extrapolation"), *rung = json_object_get(x, "rung_shrink"), *seed = json_object_get(x, "seed_shrink");
    for (size_t i = 1; i < json_array_size(rows) && strcmp(stop, "decided"); i++) {
        if (!json_is_number(json_array_get(rung, i)) || !json_is_number(json_array_get(seed, i))) continue;
        double by_rung = json_number_value(json_array_get(rung, i)), by_seeds = json_number_value(json_array_get(seed, i));
        fprintf(out, "  %s: a rung one ladder step above the largest (%.3g FLOPs, %lld seeds, %.3g FLOPs in all the ladders) "
                "would narrow its interval by about %.0f%%, seeds for the same FLOPs by %.0f%%: %s\n",
                json_string_value(json_object_get(json_array_get(rows, i), "name")), num(x, "next_rung_flops"),
                (long long)json_integer_value(json_object_get(x, "seeds")), num(x, "flops"), 100 * by_rung, 100 * by_seeds,
                by_rung > by_seeds ? "the interval is mostly extrapolation; add a larger rung" : "seeds first");
    }
}
