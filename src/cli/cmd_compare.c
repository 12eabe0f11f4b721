// sextant compare SPEC... : one ladder per variant (the first is the baseline), compared at a target compute.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "scale/compare.h"

#define MAX_VARIANTS 8

int cmd_compare(int argc, char **argv) {
    double target;
    bool shared, run;
    long jobs;
    const char *svg, *out;
    const flag_def flags[] = {
        {"target-flops", FLAG_DOUBLE, &target, "0", "compute at which to compare (default 10x the baseline's largest rung)"},
        {"shared-linf", FLAG_BOOL, &shared, "false", "pin every variant's Linf to the baseline's"},
        {"run", FLAG_BOOL, &run, "false", "train the ladders first (skipping finished runs)"},
        {"jobs", FLAG_INT, &jobs, "1", "with --run: runs trained at once"},
        {"plot", FLAG_STR, &svg, "", "write an SVG of loss vs compute with the fits"},
        {"out", FLAG_STR, &out, "", "write the report as JSON"},
    };
    size_t n = sizeof flags / sizeof *flags;
    const char *pos[MAX_VARIANTS];
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, pos, MAX_VARIANTS, &npos,
                            "compare BASELINE.ladder VARIANT.ladder... [flags]",
                            "Fits final loss vs compute per ladder and compares the variants with the baseline at a target\n"
                            "compute: projected loss, compute multiplier (with 95% intervals), KV-cache bytes, verdict.", &st))
        return 0;
    if (!st && npos < 2) st = sx_fail(SX_ERR_ARG, "give a baseline ladder spec and at least one variant");
    ladder_spec specs[MAX_VARIANTS];
    char dirs[MAX_VARIANTS][128];
    const char *dp[MAX_VARIANTS];
    for (int i = 0; i < npos && !st; i++) {
        st = ladder_spec_read(pos[i], &specs[i]);
        snprintf(dirs[i], sizeof dirs[i], "runs/%.100s", specs[i].name);
        dp[i] = dirs[i];
    }
    if (st) return cli_report("compare", st);
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = 0;
    for (int i = 0; i < npos && run && !st; i++) st = ladder_execute(&specs[i], dp[i], exe, (int)jobs, -1);
    if (!st && !(target > 0)) {
        ladder_run *plan;
        size_t nr;
        if (!(st = ladder_plan(&specs[0], &plan, &nr))) {
            target = 10 * plan[0].flops;
            free(plan);
        }
    }
    json_t *report = NULL;
    if (!st) st = compare_ladders(specs, dp, (size_t)npos, target, shared, &report);
    if (!st) compare_print(stdout, report);
    if (!st && *svg) st = compare_plot(svg, report);
    if (!st && *out && json_dump_file(report, out, JSON_INDENT(1))) st = sx_fail(SX_ERR_IO, "%s: cannot write", out);
    json_decref(report);
    return cli_report("compare", st);
}
