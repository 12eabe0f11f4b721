// rundir: run-directory reader (config.json, metrics.jsonl, DONE). See rundir.h.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/status.h"
#include "runs/rundir.h"
#include "core/lines.h"

#define RUNDIR_MAX_STEP 1e15   // far beyond any run, far below 2^64

void rundir_free(rundir_run *r) {
    json_decref(r->config);
    free(r->lr);
    free(r->train_loss);
    free(r->evals);
    memset(r, 0, sizeof *r);
}

static sx_status read_config(const char *dir, rundir_run *r) {
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_error_t err;
    r->config = json_load_file(path, 0, &err);
    if (!r->config) {
        FILE *f = fopen(path, "r");
        if (!f) return sx_fail(SX_ERR_IO, "cannot open %s (not a run directory?)", path);
        fclose(f);
        return sx_fail(SX_ERR_FORMAT, "%s:%d: %s", path, err.line, err.text);
    }
    const char *model = json_string_value(json_object_get(r->config, "model"));
    if (!model) return sx_fail(SX_ERR_FORMAT, "%s: missing string \"model\"", path);
    snprintf(r->model, sizeof r->model, "%s", model);
    static const struct { const char *key; size_t off; } ints[] = {
        {"n_params", offsetof(rundir_run, n_params)},
        {"n_params_nonembed", offsetof(rundir_run, n_params_nonembed)},
        {"total_steps", offsetof(rundir_run, total_steps)},
        {"total_tokens", offsetof(rundir_run, total_tokens)},
        {"batch_tokens", offsetof(rundir_run, batch_tokens)},
        {"seed", offsetof(rundir_run, seed)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        json_t *v = json_object_get(r->config, ints[i].key);
        if (!json_is_integer(v)) return sx_fail(SX_ERR_FORMAT, "%s: missing integer \"%s\"", path, ints[i].key);
        *(int64_t *)((char *)r + ints[i].off) = (int64_t)json_integer_value(v);
    }
    json_t *fpt = json_object_get(r->config, "flops_per_token");
    if (!json_is_number(fpt)) return sx_fail(SX_ERR_FORMAT, "%s: missing number \"flops_per_token\"", path);
    r->flops_per_token = json_number_value(fpt);
    return SX_OK;
}

// A numeric field of a metrics record; 0 if absent or not a number (see `have`).
static double num(json_t *o, const char *key, int *have) {
    json_t *v = json_object_get(o, key);
    if (have) *have = json_is_number(v);
    return json_is_number(v) ? json_number_value(v) : 0;
}

static sx_status read_metrics(const char *dir, const char *key, rundir_run *r) {
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open %s", path);
    sx_status st = SX_OK;
    line_reader in;
    line_reader_init(&in, f);
    size_t cap_steps = 0, cap_evals = 0;
    while (line_reader_next(&in)) {
        size_t lineno = in.no;
        json_error_t err;
        json_t *o = json_loads(in.line, JSON_DISABLE_EOF_CHECK, &err);
        if (o && json_object_get(o, "event")) { // e.g. a spike rollback: the re-logged steps that follow say it all
            json_decref(o);
            continue;
        }
        int have_step = 0, have_lr = 0;
        double stepd = o ? num(o, "step", &have_step) : 0, lr = o ? num(o, "lr", &have_lr) : 0;
        if (!o || !have_step || !have_lr || stepd < 1) {
            json_decref(o);
            if (!line_reader_complete(&in)) break; // a partial last line of a killed run
            // a complete line may still be the last one, cut before its newline was lost: check for EOF
            if (line_reader_at_end(&in)) break;
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: not a metrics record with \"step\" and \"lr\"", path, lineno);
            break;
        }
        // A step must be a whole number the trainer could have written: a cast of 1e30 or 2.5 would wrap or
        // truncate, and the contiguity check below would then index before the buffers.
        if (stepd != floor(stepd) || stepd > RUNDIR_MAX_STEP) {
            json_decref(o);
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: \"step\" %g is not a whole number in [1, %.0f]", path, lineno, stepd,
                         RUNDIR_MAX_STEP);
            break;
        }
        size_t step = (size_t)stepd;
        if (step <= r->n_steps) { // resumed run re-logging: drop what followed the resume point
            r->n_steps = step - 1;
            while (r->n_evals > 0 && r->evals[r->n_evals - 1].step >= step) r->n_evals--;
        }
        if (step != r->n_steps + 1) {
            json_decref(o);
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: step %zu follows step %zu (steps must be contiguous)", path,
                         lineno, step, r->n_steps);
            break;
        }
        if (r->n_steps == cap_steps) {
            cap_steps = cap_steps ? 2 * cap_steps : 1024;
            double *a = sx_realloc(r->lr, cap_steps * sizeof(double), "rundir a");
            if (a) r->lr = a;
            double *b = sx_realloc(r->train_loss, cap_steps * sizeof(double), "rundir b");
            if (b) r->train_loss = b;
            if (!a || !b) {
                json_decref(o);
                st = sx_fail(SX_ERR_NOMEM, "out of memory reading %s", path);
                break;
            }
        }
        r->lr[r->n_steps] = lr;
        r->train_loss[r->n_steps] = num(o, "train_loss", NULL);
        r->n_steps++;
        int have_val = 0;
        double val = num(o, key, &have_val);
        if (have_val && !(val > 0 && isfinite(val))) {
            json_decref(o);
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: \"%s\" %g at step %zu is not a positive finite number", path,
                         lineno, key, val, step);
            break;
        }
        if (have_val) {
            if (r->n_evals == cap_evals) {
                cap_evals = cap_evals ? 2 * cap_evals : 64;
                rundir_eval *e = sx_realloc(r->evals, cap_evals * sizeof *e, "rundir e");
                if (!e) {
                    json_decref(o);
                    st = sx_fail(SX_ERR_NOMEM, "out of memory reading %s", path);
                    break;
                }
                r->evals = e;
            }
            r->evals[r->n_evals++] = (rundir_eval){.step = step, .frac = num(o, "frac", NULL),
                                                   .tokens = num(o, "tokens", NULL),
                                                   .flops = num(o, "flops", NULL), .val_loss = val};
        }
        json_decref(o);
    }
    line_reader_close(&in);
    return st;
}

json_t *rundir_config_beside(const char *checkpoint) {
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s", checkpoint);
    char *slash = strrchr(cfg, '/');
    snprintf(slash ? slash + 1 : cfg, sizeof cfg - (size_t)(slash ? slash + 1 - cfg : 0), "config.json");
    return json_load_file(cfg, 0, NULL);
}

sx_status rundir_recorded_path_check(const char *path, const char *what, const char *flag) {
    if (access(path, F_OK) == 0) return SX_OK;
    if (path[0] == '/') return sx_fail(SX_ERR_ARG, "the run's %s %s (in its config.json) is gone: give %s", what, path, flag);
    return sx_fail(SX_ERR_ARG, "the run's %s %s is not there from this directory (config.json records it as the run "
                   "was started): give %s", what, path, flag);
}

sx_status rundir_read(const char *dir, rundir_run *out) { return rundir_read_set(dir, NULL, out); }


static sx_status read_run(const char *dir, const char *key, rundir_run *out) {
    memset(out, 0, sizeof *out);
    sx_status st = read_config(dir, out);
    if (st == SX_OK) st = read_metrics(dir, key, out);
    if (st != SX_OK) return st;
    char path[4096];
    snprintf(path, sizeof path, "%s/DONE", dir);
    out->done = access(path, F_OK) == 0;
    return SX_OK;
}

sx_status rundir_read_set(const char *dir, const char *val_set, rundir_run *out) {
    memset(out, 0, sizeof *out);
    char key[64] = "val_loss";
    if (val_set && *val_set && snprintf(key, sizeof key, "val_loss_%s", val_set) >= (int)sizeof key)
        return sx_fail(SX_ERR_ARG, "validation set name '%s' is too long", val_set);
    sx_status st = read_run(dir, key, out);
    if (st == SX_OK && val_set && *val_set && out->n_steps && !out->n_evals)
        st = sx_fail(SX_ERR_ARG, "%s/metrics.jsonl has no \"%s\": was the run trained on a mixture with a source "
                     "'%s' (train --train/--val X.mix)?", dir, key, val_set);
    return st;
}

sx_status rundir_read_key(const char *dir, const char *key, rundir_run *out) {
    sx_status st = read_run(dir, key, out);
    if (st == SX_OK && out->n_steps && !out->n_evals)
        st = sx_fail(SX_ERR_ARG, "%s/metrics.jsonl has no \"%s\" on any evaluation line", dir, key);
    return st;
}

// ---- task evaluations ----

void rundir_tasks_free(rundir_tasks *t) {
    for (size_t i = 0; t->tasks && i < t->n; i++) {
        free(t->tasks[i].step);
        free(t->tasks[i].acc);
        free(t->tasks[i].loss);
        free(t->tasks[i].items);
    }
    free(t->tasks);
    memset(t, 0, sizeof *t);
}

long rundir_task_at(const rundir_task *t, size_t step) {
    for (size_t i = 0; i < t->n; i++)
        if (t->step[i] == step) return (long)i;
    return -1;
}

// The task called name[0..len), appended when new; NULL when out of memory.
static rundir_task *task_named(rundir_tasks *t, const char *name, size_t len) {
    for (size_t i = 0; i < t->n; i++)
        if (strlen(t->tasks[i].name) == len && !strncmp(t->tasks[i].name, name, len)) return &t->tasks[i];
    rundir_task *a = sx_realloc(t->tasks, (t->n + 1) * sizeof *a, "rundir tasks");
    if (!a) return NULL;
    t->tasks = a;
    rundir_task *k = &a[t->n++];
    memset(k, 0, sizeof *k);
    memcpy(k->name, name, len);
    return k;
}

static sx_status task_push(rundir_task *k, size_t step, double acc, double loss, double items) {
    sx_status st = sx_grow_columns((void *[]){&k->step, &k->acc, &k->loss, &k->items},
                                   (size_t[]){sizeof *k->step, sizeof *k->acc, sizeof *k->loss, sizeof *k->items}, 4,
                                   k->n + 1, "a run's task evaluations");
    if (st) return st;
    k->step[k->n] = step;
    k->acc[k->n] = acc;
    k->loss[k->n] = loss;
    k->items[k->n++] = items;
    return SX_OK;
}

// The task fields of one metrics record at `step`.
static sx_status tasks_of_record(json_t *o, size_t step, const char *path, size_t lineno, rundir_tasks *out) {
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        size_t len = strlen(key);
        if (len <= 9 || strncmp(key, "task_", 5) || strcmp(key + len - 4, "_acc")) continue;
        size_t nl = len - 9;
        if (nl >= sizeof out->tasks[0].name)
            return sx_fail(SX_ERR_FORMAT, "%s:%zu: the task name in \"%s\" is too long", path, lineno, key);
        double acc = json_number_value(v);
        if (!json_is_number(v) || !(acc >= 0 && acc <= 1))
            return sx_fail(SX_ERR_FORMAT, "%s:%zu: \"%s\" at step %zu is not an accuracy in [0, 1]", path, lineno, key, step);
        char k2[128];
        int have_loss, have_n;
        snprintf(k2, sizeof k2, "task_%.*s_loss", (int)nl, key + 5);
        double loss = num(o, k2, &have_loss);
        snprintf(k2, sizeof k2, "task_%.*s_n", (int)nl, key + 5);
        double items = num(o, k2, &have_n);
        rundir_task *t = task_named(out, key + 5, nl);
        sx_status st = t ? task_push(t, step, acc, have_loss ? loss : NAN, have_n ? items : NAN) : SX_ERR_NOMEM;
        if (st) return st;
    }
    return SX_OK;
}

sx_status rundir_read_tasks(const char *dir, rundir_tasks *out) {
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open %s", path);
    line_reader in;
    line_reader_init(&in, f);
    sx_status st = SX_OK;
    while (!st && line_reader_next(&in)) {
        json_t *o = json_loads(in.line, JSON_DISABLE_EOF_CHECK, NULL);
        int have_step = 0;
        double stepd = o ? num(o, "step", &have_step) : 0;
        if (o && have_step && !json_object_get(o, "event") && stepd >= 1 && stepd <= RUNDIR_MAX_STEP && stepd == floor(stepd)) {
            for (size_t k = 0; k < out->n; k++)   // a resumed run re-logging: drop what followed the resume point
                while (out->tasks[k].n && out->tasks[k].step[out->tasks[k].n - 1] >= (size_t)stepd) out->tasks[k].n--;
            st = tasks_of_record(o, (size_t)stepd, path, in.no, out);
        }
        json_decref(o);
    }
    line_reader_close(&in);
    return st;
}
