// sextant compare SPEC... : one ladder per variant (the first is the baseline), compared at a target compute;
// with --until-decided, seeds are added until the comparison decides (scale/sequential.h). A curve ladder
// directory (`sextant import`) stands in for a spec anywhere, without --run or --until-decided.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "report/plots.h"
#include "scale/compare.h"
#include "scale/ladder_seeds.h"
#include "runs/import.h"
#include "scale/sequential.h"
#include "scale/spending.h"

#define MAX_VARIANTS 32   // the baseline and up to 31 variants (the speedrun study compares 14)

int cmd_compare(int argc, char **argv) {
    static const flags_command cmd = {
        "compare BASELINE VARIANT... [flags]   (up to 31 variants; each a ladder spec, or a curve ladder directory from "
        "`sextant import`)",
        "Fits final loss vs compute per ladder and compares the variants with the baseline at a target\n"
        "compute: projected loss, compute multiplier (with paired and unpaired 95% seed-jackknife t\n"
        "intervals), KV-cache bytes, verdict (paired t test of the loss gain, Holm-corrected over the variants).",
        2, MAX_VARIANTS, "give a baseline ladder spec and at least one variant"};
    double target, width, precision, budget_h, budget_flops;
    bool shared, run, until, seeds_only;
    long jobs, seeds;
    const char *svg, *out, *spending;
    const flag_def flags[] = {
        {"target-flops", FLAG_DOUBLE, &target, "0", "compute at which to compare (default 10x the baseline's largest rung)"},
        {"shared-linf", FLAG_BOOL, &shared, "false", "pin every variant's Linf to the baseline's"},
        {"run", FLAG_BOOL, &run, "false", "train the ladders first (skipping finished runs)"},
        {"jobs", FLAG_INT, &jobs, "1", "with --run or --until-decided: runs trained at once (one pool over all ladders, largest first)"},
        {"seeds", FLAG_INT, &seeds, "0", "seeds per rung of every ladder (default: each spec's, or those an earlier "
                                          "--until-decided recorded in the ladder's directory)"},
        {"until-decided", FLAG_BOOL, &until, "false", "train the ladders, then add seeds (for the variant nearest a "
                                                       "decision, at the rungs where they narrow its interval most per "
                                                       "FLOP) until the verdicts decide at group-sequential levels, --width "
                                                       "or --precision is reached or the budget is spent"},
        {"seeds-only", FLAG_BOOL, &seeds_only, "false", "with --until-decided: never add a larger rung (by default one is "
                                                          "added where it narrows an interval more than seeds for its FLOPs)"},
        {"width", FLAG_DOUBLE, &width, "0", "with --until-decided: also stop when every undecided paired interval is narrower"},
        {"precision", FLAG_DOUBLE, &precision, "0", "with --until-decided: stop only when every paired interval is within "
                                                     "+-this fraction of its multiplier (0.15: +-15%), decided or not"},
        {"budget", FLAG_DOUBLE, &budget_h, "0", "with --until-decided: wall-clock hours the command may take (training the ladders first included)"},
        {"budget-flops", FLAG_DOUBLE, &budget_flops, "0", "with --until-decided: training FLOPs the command may spend (the ladders' own seeds included)"},
        {"spending", FLAG_STR, &spending, "pocock", "with --until-decided: the alpha spending that keeps the family-wise "
                                                     "error at 5% over the looks: pocock (an early look can decide) or obf "
                                                     "(O'Brien-Fleming: nearly all of it at the budget's end)"},
        {"plot", FLAG_STR, &svg, "", "write an SVG of loss vs compute with the fits"},
        {"out", FLAG_STR, &out, "", "write the report as JSON"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && (jobs < 1 || seeds < 0 || seeds > 1000 || width < 0 || budget_h < 0 || budget_flops < 0 || target < 0))
        st = sx_fail(SX_ERR_ARG, "--jobs must be >= 1, --seeds in 0..1000, --width, --target-flops and the budgets >= 0");
    if (!st && !(precision >= 0 && precision < 1)) st = sx_fail(SX_ERR_ARG, "--precision must be a fraction in [0, 1), not %g", precision);
    if (!st && precision > 0 && width > 0) st = sx_fail(SX_ERR_ARG, "--width and --precision are two stops for the same thing: give one");
    bool obf = !strcmp(spending, "obf");
    if (!st && !obf && strcmp(spending, "pocock")) st = sx_fail(SX_ERR_ARG, "--spending must be pocock or obf, not '%s'", spending);
    const char *unused = NULL;
    if (!st && !until && (unused = flags_first_given(&a, "width,precision,budget,budget-flops,spending,seeds-only")))
        st = sx_fail(SX_ERR_ARG, "--%s is a setting of --until-decided", unused);
    if (!st && !until && !run && flags_given(&a, "jobs")) st = sx_fail(SX_ERR_ARG, "--jobs is for training: give --run or --until-decided");
    if (!st && until && !(budget_h > 0) && !(budget_flops > 0))
        st = sx_fail(SX_ERR_ARG, "--until-decided needs a budget: --budget HOURS or --budget-flops FLOPS");
    ladder_spec specs[MAX_VARIANTS];
    char dirs[MAX_VARIANTS][128];
    const char *dp[MAX_VARIANTS];
    bool curves = false;   // some variant is a curve ladder: nothing to train, the compute default comes from the data
    for (int i = 0; i < a.npos && !st; i++) {
        if (import_is_ladder_dir(a.pos[i])) {   // named by its directory's last component
            const char *base = strrchr(a.pos[i], '/');
            memset(&specs[i], 0, sizeof specs[i]);
            snprintf(specs[i].name, sizeof specs[i].name, "%s", base && base[1] ? base + 1 : a.pos[i]);
            dp[i] = a.pos[i];
            curves = true;
            continue;
        }
        st = ladder_open(a.pos[i], NULL, &specs[i], dirs[i], sizeof dirs[i]);
        dp[i] = dirs[i];
        if (seeds > 0) {   // every rung exactly this many
            specs[i].n_seeds = (size_t)seeds;
            memset(specs[i].rung_seeds, 0, sizeof specs[i].rung_seeds);
        }
    }
    if (!st && curves && (run || until))
        st = sx_fail(SX_ERR_ARG, "--run and --until-decided train ladders: a curve ladder directory has nothing to train");
    if (st) return cli_report("compare", st);
    const char *exe = "/proc/self/exe";   // this binary, even if a rebuild replaces its file meanwhile (cmd_ladder.c)
    if (run && !until) st = ladder_execute(specs, dp, (size_t)a.npos, exe, (int)jobs, -1);   // one pool over all ladders (until: inside its budget)
    if (!st && !(target > 0) && !curves) {
        ladder_run *plan;
        size_t nr;
        if (!(st = ladder_plan(&specs[0], &plan, &nr))) {
            target = 10 * plan[0].flops;
            free(plan);
        }
    }
    json_t *report = NULL;
    sequential_options so = {.width = width, .precision = precision, .budget_flops = budget_flops, .budget_hours = budget_h, .exe = exe, .jobs = (int)jobs,
                            .spend = obf ? spending_obf : spending_pocock, .spending = obf ? "O'Brien-Fleming-type" : "Pocock-type",
                            .seeds_only = seeds_only};
    if (!st) st = until ? sequential_compare(specs, dp, (size_t)a.npos, target, shared, &so, &report)
                        : compare_ladders(specs, dp, (size_t)a.npos, target, shared, &report);
    if (!st) compare_print(stdout, report);
    if (!st && until) sequential_print(stdout, report);
    const char *added = !st && !until && !curves ? sequential_seeds_added(specs, (size_t)a.npos) : NULL;
    if (added)
        printf("note: %s holds seeds (or a rung) --until-decided added as it tested look by look; these fixed-sample verdicts do not "
               "count those looks (its own report's group-sequential verdicts do)\n", added);
    if (!st && *svg) st = plots_compare(svg, report);
    if (!st && *out) st = fs_write_json(out, report, JSON_INDENT(1));
    json_decref(report);
    return cli_report("compare", st);
}
