// sextant train: flags -> train_options -> train_run. The flag table lives with the options
// (train/options.h), so that the ladder starts its runs from the same table.
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "dist/dist.h"
#include "train/train.h"

int cmd_train(int argc, char **argv) {
    train_options o;
    train_options_default(&o);
    flag_def flags[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(&o, flags);
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, NULL, 0, &npos, "train --model d4 --train SHARD --out DIR [flags]",
                            "Trains a model; writes config.json, metrics.jsonl (one line per step) and checkpoint.sxt to --out.",
                            &st))
        return 0;
    if (!st && !*o.train_data) st = sx_fail(SX_ERR_ARG, "--train is required (a token shard or synthetic:V)");
    if (!st && *o.forecast && o.steps <= 0 && o.tokens <= 0) {
        // Verifying a forecast: the run length defaults to the forecast's.
        json_error_t err;
        json_t *fc = json_load_file(o.forecast, 0, &err);
        o.steps = fc ? (long)json_integer_value(json_object_get(json_object_get(fc, "hero"), "steps")) : 0;
        if (!fc) st = sx_fail(SX_ERR_FORMAT, "%s:%d: %s", o.forecast, err.line, err.text);
        json_decref(fc);
    }
    if (!st) st = train_options_check(&o);
    if (!st) st = dist_init();   // under mpirun: joins the ranks (docs/DISTRIBUTED.md)
    if (st) return cli_report("train", st);
    o.echo = flags_to_json(flags, n);
    st = train_run(&o);
    json_decref(o.echo);
    int rc = cli_report("train", st);   // before dist_finalize, which may abort the job
    dist_finalize();
    return rc;
}
