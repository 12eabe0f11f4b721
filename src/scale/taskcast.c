// taskcast: task loss vs compute (the forecaster's per-fraction laws) chained with accuracy vs task loss
// (acclaw) into the hero's accuracy at every evaluated fraction, and the check of a run against it. See
// taskcast.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "laws/acclaw.h"
#include "runs/rundir.h"
#include "scale/taskcast.h"

#define TASKCAST_BOOT 200
#define TASKCAST_SEED 2027

static void free_tasks(rundir_tasks *rt, size_t n) {
    for (size_t i = 0; rt && i < n; i++) rundir_tasks_free(&rt[i]);
    free(rt);
}

// Every main run's (task loss, accuracy, items) at the ladder's fractions, grouped by rung (width).
static sx_status task_points(const ladder_spec *spec, const ladder_run *plan, size_t n_plan, const rundir_tasks *rt,
                             const char *name, double *loss, double *acc, double *items, size_t *group, size_t *n) {
    *n = 0;
    for (size_t i = 0; i < n_plan; i++) {
        if (plan[i].branch != -1) continue;
        const rundir_task *t = NULL;
        for (size_t k = 0; k < rt[i].n; k++)
            if (!strcmp(rt[i].tasks[k].name, name)) t = &rt[i].tasks[k];
        if (!t) return sx_fail(SX_ERR_FORMAT, "run %s logged no task %s (the first run did)", plan[i].dir, name);
        for (size_t f = 0; f < spec->n_eval; f++) {
            long k = rundir_task_at(t, (size_t)llround(spec->eval_at[f] * (double)plan[i].steps));
            if (k < 0 || !isfinite(t->loss[k])) continue;
            loss[*n] = t->loss[k];
            acc[*n] = t->acc[k];
            items[*n] = isfinite(t->items[k]) ? t->items[k] : 0;
            group[(*n)++] = plan[i].width;
        }
    }
    return SX_OK;
}

// Both steps for one task; *out = {"items", "loss_fit", "acc_law"}.
static sx_status fit_task(const ladder_spec *spec, const char *dir, const ladder_run *plan, size_t n_plan,
                          const rundir_tasks *rt, const char *name, json_t **out) {
    ladder_spec ts = *spec;
    if (snprintf(ts.metric, sizeof ts.metric, "task_%s_loss", name) >= (int)sizeof ts.metric)
        return sx_fail(SX_ERR_ARG, "task name '%s' is too long", name);
    json_t *loss_fit = NULL;
    sx_status st = forecast_fit_ladder(&ts, dir, &loss_fit);
    size_t cap = n_plan * spec->n_eval + 1, n = 0;
    double *loss = sx_alloc(cap * sizeof *loss, "taskcast loss"), *acc = sx_alloc(cap * sizeof *acc, "taskcast acc"),
           *items = sx_alloc(cap * sizeof *items, "taskcast items");
    size_t *group = sx_alloc(cap * sizeof *group, "taskcast group");
    if (!st && (!loss || !acc || !items || !group)) st = SX_ERR_NOMEM;
    if (!st) st = task_points(spec, plan, n_plan, rt, name, loss, acc, items, group, &n);
    acclaw_model m = {0};
    acclaw_data d = {.n = n, .loss = loss, .acc = acc, .items = items, .group = group};
    if (!st) st = acclaw_model_fit(&d, TASKCAST_BOOT, TASKCAST_SEED, &m);
    double mean_items = 0;
    for (size_t i = 0; i < n; i++) mean_items += items[i] / (double)n;
    if (!st) {
        *out = json_pack("{s:f, s:o, s:o}", "items", mean_items, "loss_fit", loss_fit, "acc_law", acclaw_model_to_json(&m));
        loss_fit = NULL;
        if (!*out) st = sx_fail(SX_ERR_NOMEM, "cannot build the fit of task %s", name);
    }
    json_decref(loss_fit);
    acclaw_model_free(&m);
    free(loss); free(acc); free(items); free(group);
    return st;
}

sx_status taskcast_fit(const ladder_spec *spec, const char *dir, json_t **tasks) {
    *tasks = json_object();
    ladder_run *plan = NULL;
    size_t n_plan = 0;
    sx_status st = *tasks ? ladder_plan(spec, &plan, &n_plan) : SX_ERR_NOMEM;
    rundir_tasks *rt = st ? NULL : sx_calloc_n(n_plan ? n_plan : 1, sizeof *rt, "taskcast runs");
    if (!st && !rt) st = SX_ERR_NOMEM;
    for (size_t i = 0; i < n_plan && !st; i++) {
        if (plan[i].branch != -1) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, plan[i].dir);
        st = rundir_read_tasks(path, &rt[i]);
    }
    for (size_t k = 0; !st && n_plan && k < rt[0].n; k++) {
        const char *name = rt[0].tasks[k].name;
        json_t *t = NULL;
        sx_status ts = fit_task(spec, dir, plan, n_plan, rt, name, &t);
        if (ts == SX_ERR_NOMEM) st = ts;
        else if (ts) fprintf(stderr, "sextant fit: warning: task %s left out: %s\n", name, sx_last_error());
        else json_object_set_new(*tasks, name, t);
    }
    free_tasks(rt, n_plan);
    free(plan);
    if (st) { json_decref(*tasks); *tasks = NULL; }
    return st;
}

static double num_of(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

// One task's forecast: the task-loss forecast's points, each turned into an accuracy with its band.
static sx_status forecast_task(json_t *t, const hero_spec *hero, json_t **out) {
    json_t *lfc = NULL;
    acclaw_model m;
    sx_status st = acclaw_model_from_json(json_object_get(t, "acc_law"), &m);
    if (!st) st = forecast_make(json_object_get(t, "loss_fit"), hero, &lfc);
    double items = num_of(t, "items");
    json_t *pts = json_object_get(lfc, "points"), *rows = json_array();
    for (size_t i = 0; !st && i < json_array_size(pts); i++) {
        json_t *p = json_array_get(pts, i);
        double loss = num_of(p, "loss"), llo = num_of(p, "lo"), lhi = num_of(p, "hi"), acc, lo, hi;
        // the loss band is ±2 sigma (forecast.h)
        acclaw_predict(&m, loss, (lhi - llo) / (4 * loss), items, TASKCAST_SEED + i, &acc, &lo, &hi);
        json_array_append_new(rows, json_pack("{s:f, s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "frac", num_of(p, "frac"), "step",
                                              json_integer_value(json_object_get(p, "step")), "loss", loss, "loss_lo", llo,
                                              "loss_hi", lhi, "acc", acc, "lo", lo, "hi", hi));
    }
    if (!st) {
        json_t *law = json_object_get(t, "acc_law");
        *out = json_pack("{s:O, s:O, s:f, s:o}", "status", json_object_get(law, "status"), "form", json_object_get(law, "form"),
                         "items", items, "points", rows);
        rows = NULL;
        if (!*out) st = sx_fail(SX_ERR_NOMEM, "cannot build a task forecast");
    }
    json_decref(rows);
    json_decref(lfc);
    acclaw_model_free(&m);
    return st;
}

sx_status taskcast_forecast(json_t *fit_tasks, const hero_spec *hero, json_t **out) {
    *out = json_object();
    if (!*out) return sx_fail(SX_ERR_NOMEM, "out of memory for the task forecast (free memory or forecast fewer tasks)");
    const char *name;
    json_t *t;
    sx_status st = SX_OK;
    json_object_foreach(fit_tasks, name, t) {
        json_t *f = NULL;
        if ((st = forecast_task(t, hero, &f))) {
            st = sx_fail(st, "task %s: %s", name, sx_last_error());
            break;
        }
        json_object_set_new(*out, name, f);
    }
    if (st) { json_decref(*out); *out = NULL; }
    return st;
}

// One task's rows and summary against the run's evaluations of it (t NULL: the run did not log the task).
static json_t *check_task(json_t *f, const rundir_task *t) {
    json_t *pts = json_object_get(f, "points"), *rows = json_array();
    size_t n = 0, inside = 0;
    double sum = 0, worst = 0, half = 0, final = NAN;
    for (size_t i = 0; t && i < json_array_size(pts); i++) {
        json_t *p = json_array_get(pts, i);
        long k = rundir_task_at(t, (size_t)json_integer_value(json_object_get(p, "step")));
        if (k < 0) continue;
        double obs = t->acc[k], pred = num_of(p, "acc"), lo = num_of(p, "lo"), hi = num_of(p, "hi"), err = 100 * (pred - obs);
        bool in = obs >= lo && obs <= hi;
        n++;
        inside += in;
        sum += fabs(err);
        worst = fmax(worst, fabs(err));
        half += 50 * (hi - lo);
        if (fabs(num_of(p, "frac") - 1) < 1e-9) final = err;
        json_array_append_new(rows, json_pack("{s:f, s:O, s:f, s:f, s:f, s:f, s:f, s:b}", "frac", num_of(p, "frac"), "step",
                                              json_object_get(p, "step"), "observed", obs, "forecast", pred, "lo", lo, "hi", hi,
                                              "err_points", err, "inside", in));
    }
    return json_pack("{s:O, s:O, s:I, s:o, s:o, s:o, s:o, s:o, s:o}", "status", json_object_get(f, "status"), "form",
                     json_object_get(f, "form"), "points", (json_int_t)n, "mean_abs_err_points", n ? json_real(sum / (double)n) : json_null(),
                     "max_abs_err_points", n ? json_real(worst) : json_null(), "final_err_points",
                     isfinite(final) ? json_real(final) : json_null(), "inside_band_frac", n ? json_real((double)inside / (double)n) : json_null(),
                     "mean_band_halfwidth_points", n ? json_real(half / (double)n) : json_null(), "rows", rows);
}

static sx_status taskcast_check(json_t *forecast, const char *run_dir, json_t **report) {
    json_t *tasks = json_object_get(forecast, "tasks");
    *report = json_object();
    if (!*report) return sx_fail(SX_ERR_NOMEM, "out of memory for the task check's report (free memory and rerun)");
    if (!json_object_size(tasks)) return SX_OK;
    rundir_tasks rt;
    sx_status st = rundir_read_tasks(run_dir, &rt);
    const char *name;
    json_t *f;
    json_object_foreach(tasks, name, f) {
        if (st) break;
        const rundir_task *t = NULL;
        for (size_t k = 0; k < rt.n; k++)
            if (!strcmp(rt.tasks[k].name, name)) t = &rt.tasks[k];
        json_t *c = check_task(f, t);
        if (!c) { st = sx_fail(SX_ERR_NOMEM, "cannot build the check of task %s", name); break; }
        json_object_set_new(*report, name, c);
    }
    rundir_tasks_free(&rt);
    if (st) { json_decref(*report); *report = NULL; }
    return st;
}

static void taskcast_print_check(FILE *out, json_t *report) {
    const char *name;
    json_t *c;
    json_object_foreach(report, name, c) {
        json_t *rows = json_object_get(c, "rows");
        const char *status = json_string_value(json_object_get(c, "status"));
        if (!strcmp(status, "informative")) fprintf(out, "task %s (accuracy law %s):\n", name, json_string_value(json_object_get(c, "form")));
        else fprintf(out, "task %s (no accuracy law: %s at the ladder's scale):\n", name, status);
        if (!json_array_size(rows)) { fprintf(out, "  the run logged no evaluation of this task at the forecast's steps\n"); continue; }
        fprintf(out, "%6s %7s %9s %9s %15s %9s  %s\n", "frac", "step", "observed", "forecast", "band", "error", "in band");
        for (size_t i = 0; i < json_array_size(rows); i++) {
            json_t *e = json_array_get(rows, i);
            fprintf(out, "%6.3f %7lld %8.2f%% %8.2f%% [%5.1f, %5.1f]%% %+6.2f pt  %s\n", num_of(e, "frac"),
                    (long long)json_integer_value(json_object_get(e, "step")), 100 * num_of(e, "observed"), 100 * num_of(e, "forecast"),
                    100 * num_of(e, "lo"), 100 * num_of(e, "hi"), num_of(e, "err_points"),
                    json_is_true(json_object_get(e, "inside")) ? "yes" : "NO");
        }
        json_t *final = json_object_get(c, "final_err_points");
        char final_text[32] = "not reached yet";
        if (json_is_number(final)) snprintf(final_text, sizeof final_text, "%+.2f points", json_number_value(final));
        fprintf(out, "points %lld | mean |error| %.2f points | worst %.2f | final accuracy error: %s | inside band: %.0f%% | mean "
                "band half-width: ±%.2f points\n", (long long)json_integer_value(json_object_get(c, "points")),
                num_of(c, "mean_abs_err_points"), num_of(c, "max_abs_err_points"), final_text, 100 * num_of(c, "inside_band_frac"),
                num_of(c, "mean_band_halfwidth_points"));
    }
}

sx_status taskcast_check_into(json_t *forecast, const char *run_dir, json_t *report, FILE *out) {
    json_t *tasks = NULL;
    sx_status st = taskcast_check(forecast, run_dir, &tasks);
    if (!st && json_object_size(tasks)) {
        if (out) taskcast_print_check(out, tasks);
        json_object_set(report, "tasks", tasks);
    }
    json_decref(tasks);
    return st;
}
