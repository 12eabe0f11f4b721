// sextant train: flags -> train_options -> train_run. The flag table lives with the options
// (train/options.h), so that the ladder starts its runs from the same table. --forecast is wired here as
// the run's evaluation hook (scale/forecast.h), which keeps train/ below scale/; --eval-tasks as its model
// probe (infer/tasks.h), built once from --val (or --eval-tasks-val) with the task seed every run shares (so every run of a
// ladder, and a resumed run, is measured on the same items).
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "data/mixture.h"
#include "dist/dist.h"
#include "infer/tasks.h"
#include "scale/forecast.h"
#include "train/train.h"

#define TASK_SEED 1

static sx_status tasks_start(void *ctx, const model *m) { return task_suite_check(ctx, m); }
static sx_status tasks_measure(void *ctx, model *m, json_t *line) { return task_suite_measure(ctx, m, line); }

int cmd_train(int argc, char **argv) {
    static const flags_command cmd = {
        "train --model d4 --train SHARD --out DIR [flags]",
        "Trains a model; writes config.json, metrics.jsonl (one line per step) and checkpoint.sxt to --out.",
        0, 0, NULL};
    train_options o;
    train_options_default(&o);
    flag_def flags[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(&o, flags);
    flags_args a;
    if (flags_start(&cmd, flags, n, argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && !*o.train_data) st = sx_fail(SX_ERR_ARG, "--train is required (a token shard or synthetic:V)");
    // --forecast: the forecast is read and its hash checked once, here; the check runs as the evaluation hook
    // from that copy (an edit of the file while the run trains changes nothing), and the run length defaults
    // to the forecast's.
    forecast_watch watch = {0};
    if (!st && *o.forecast) st = forecast_watch_open(&watch, o.forecast);
    if (!st && *o.forecast) {
        if (o.steps <= 0 && o.tokens <= 0) o.steps = forecast_watch_steps(&watch);
        o.eval_hook = &watch.hook;
    }
    task_suite tasks = {0};
    train_model_probe probe = {&tasks, tasks_start, tasks_measure};
    if (!st && *o.eval_tasks) {
        const char *text = *o.eval_tasks_val ? o.eval_tasks_val : o.val_data;
        if (mixture_is_spec(text))
            st = sx_fail(SX_ERR_ARG, "--eval-tasks: text tasks are built from one token shard, not the mixture %s: give "
                         "--eval-tasks-val SHARD (e.g. one source's validation shard)", text);
        if (!st) st = task_suite_open(&tasks, o.eval_tasks, text, "", (size_t)(o.eval_task_items > 0 ? o.eval_task_items : 0),
                                      TASK_SEED);
        o.task_probe = &probe;
    }
    if (o.resume_or_start) o.resume = true;
    if (!st) st = train_options_check(&o);
    if (!st) st = dist_init();   // under mpirun: joins the ranks (docs/DISTRIBUTED.md)
    if (st) {
        forecast_watch_close(&watch);
        task_suite_free(&tasks);
        return cli_report("train", st);
    }
    // Settings of data parallelism in one process (by value: a ladder's trainers are given every flag)
    train_options d;
    train_options_default(&d);
    if (dist_size() == 1 && (o.zero1 || o.bucket_mb != d.bucket_mb))
        fprintf(stderr, "sextant train: note: --%s applies under mpirun (docs/DISTRIBUTED.md); this is one process\n",
                o.zero1 ? "zero1" : "bucket-mb");
    o.echo = flags_to_json(flags, n);
    st = train_run(&o);
    json_decref(o.echo);
    forecast_watch_close(&watch);
    task_suite_free(&tasks);
    int rc = cli_report("train", st);   // before dist_finalize, which may abort the job
    dist_finalize();
    return rc;
}
