#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/lines.h"
#include "scale/compare.h"
#include "scale/sequential.h"

#define MAX_SEEDS 1000   // the ladder spec's limit

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double num(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

sx_status sequential_round_flops(const ladder_spec *spec, const char *dir, double *flops) {
    ladder_spec next = *spec;
    next.n_seeds = spec->n_seeds + 1;
    ladder_run *runs;
    size_t n;
    sx_status st = ladder_plan(&next, &runs, &n);
    if (st) return st;
    size_t mains = next.n_rungs * next.n_seeds, nb = next.n_branches;
    *flops = 0;
    for (size_t i = 0; i < n; i++) {
        if (runs[i].seed != next.n_seeds) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s/DONE", dir, runs[i].dir);
        if (access(path, F_OK) == 0) continue;
        double parent = runs[i].branch < 0 ? 0 : runs[(i - mains) / nb].flops * next.branches[runs[i].branch].from;
        *flops += runs[i].flops - parent;
    }
    free(runs);
    return SX_OK;
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

// Seeds per rung, beyond S, that would bring variant e to a decision with 80% power at level a (or its
// paired interval under width when that is sooner), assuming the log-multiplier interval shrinks as
// 1/sqrt(seeds); NAN when no estimate is possible.
static double more_seeds(json_t *e, size_t S, double a, double width) {
    double m = num(e, "multiplier"), lo = num(e, "paired_lo"), hi = num(e, "paired_hi");
    if (!(lo > 0 && hi >= lo && isfinite(hi) && m > 0 && isfinite(m))) return NAN;
    double se = (log(hi) - log(lo)) / (2 * gsl_cdf_ugaussian_Pinv(1 - COMPARE_ALPHA / 2)), d = fabs(log(m));
    double need = INFINITY;
    if (d > 0 && se > 0) {
        double z = gsl_cdf_ugaussian_Pinv(1 - a / 2) + gsl_cdf_ugaussian_Pinv(0.8), target = d / z;
        need = (double)S * (se / target) * (se / target);
    }
    if (width > 0 && hi - lo > 0) need = fmin(need, (double)S * ((hi - lo) / width) * ((hi - lo) / width));
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

sx_status sequential_compare(ladder_spec *specs, const char *const *dirs, size_t n, double C, bool shared_linf,
                             const sequential_options *o, json_t **report) {
    double t0 = now_s(), spent = 0, train_s = 0, logged_spf = logged_seconds_per_flop(&specs[0], dirs[0]);
    int rounds = 0;
    json_t *r = NULL;
    const char *stop = NULL;
    sx_status st = SX_OK;
    for (;;) {
        json_decref(r);
        r = NULL;
        if ((st = compare_ladders(specs, dirs, n, C, shared_linf, &r))) break;
        if ((stop = stop_reason(r, o->width))) break;
        double cost = 0, c;
        for (size_t i = 0; i < n && !st; i++)
            if (!(st = sequential_round_flops(&specs[i], dirs[i], &c))) cost += c;
        if (st) break;
        double left_s = 3600 * o->budget_hours - (now_s() - t0);
        double spf = spent > 0 ? train_s / spent : logged_spf;   // seconds per FLOP: measured here, else logged
        bool over_time = o->budget_hours > 0 && (left_s <= 0 || cost * spf > left_s);
        bool over_flops = o->budget_flops > 0 && spent + cost > o->budget_flops;
        if (over_time || over_flops || specs[0].n_seeds >= MAX_SEEDS) { stop = "budget"; break; }
        fprintf(stderr, "until-decided: round %d adds seed %zu to every rung (%.3g FLOPs)\n", rounds + 1,
                specs[0].n_seeds + 1, cost);
        double t1 = now_s();
        for (size_t i = 0; i < n; i++) specs[i].n_seeds++;
        if ((st = ladder_execute(specs, dirs, n, o->exe, o->jobs, -1))) break;   // the round's runs in one pool
        train_s += now_s() - t1;
        spent += cost;
        rounds++;
    }
    if (st) { json_decref(r); return st; }
    json_t *rows = json_object_get(r, "variants"), *more = json_array();
    size_t undecided = 0;
    for (size_t i = 1; i < json_array_size(rows); i++) undecided += !json_is_true(json_object_get(json_array_get(rows, i), "decided"));
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i);
        double w = num(e, "paired_hi") - num(e, "paired_lo");
        double k = i == 0 || json_is_true(json_object_get(e, "decided")) || (o->width > 0 && w <= o->width) ? NAN
                   : more_seeds(e, specs[0].n_seeds, COMPARE_ALPHA / (double)(undecided ? undecided : 1), o->width);
        json_array_append_new(more, isfinite(k) ? json_integer((json_int_t)k) : json_null());
    }
    json_object_set_new(r, "until_decided", json_pack("{s:s, s:i, s:I, s:f, s:f, s:f, s:f, s:f, s:o}", "stop", stop, "rounds", rounds,
                                                      "seeds", (json_int_t)specs[0].n_seeds, "flops_spent", spent, "seconds",
                                                      now_s() - t0, "width", o->width, "budget_flops", o->budget_flops,
                                                      "budget_hours", o->budget_hours, "more_seeds", more));
    *report = r;
    return SX_OK;
}

void sequential_print(FILE *out, json_t *r) {
    json_t *u = json_object_get(r, "until_decided"), *rows = json_object_get(r, "variants");
    const char *stop = json_string_value(json_object_get(u, "stop"));
    json_int_t seeds = json_integer_value(json_object_get(u, "seeds"));
    fprintf(out, "until-decided: stopped (%s) after %d round%s, %lld seeds per rung, %.3g FLOPs added, %.0f s\n",
            !strcmp(stop, "decided") ? "every variant decided" : !strcmp(stop, "width") ? "every undecided interval narrower than --width"
                                                                                    : "budget spent",
            (int)json_integer_value(json_object_get(u, "rounds")), json_integer_value(json_object_get(u, "rounds")) == 1 ? "" : "s",
            (long long)seeds, num(u, "flops_spent"), num(u, "seconds"));
    for (size_t i = 1; i < json_array_size(rows); i++) {
        json_t *e = json_array_get(rows, i), *k = json_array_get(json_object_get(u, "more_seeds"), i);
        if (json_is_true(json_object_get(e, "decided"))) continue;
        const char *name = json_string_value(json_object_get(e, "name"));
        if (json_is_integer(k))
            fprintf(out, "  %s: undecided; about %lld more seeds per rung would be needed (%lld in all, 80%% power at the "
                    "estimated %.3fx, paired interval width shrinking as 1/sqrt(seeds))\n", name, (long long)json_integer_value(k),
                    (long long)(seeds + json_integer_value(k)), num(e, "multiplier"));
        else if (!(num(u, "width") > 0 && num(e, "paired_hi") - num(e, "paired_lo") <= num(u, "width")))
            fprintf(out, "  %s: undecided; no estimate of the seeds needed (the estimated multiplier is %.3fx)\n", name,
                    num(e, "multiplier"));
    }
}
