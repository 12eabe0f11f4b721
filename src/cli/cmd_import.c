// sextant import: loss curves from any trainer (CSV or JSONL runs and curves tables) -> a curve-ladder
// directory that fit, forecast and backtest read. The format is in runs/import.h and docs/FORECAST.md.
// With --from-ladder, sextant's own finished ladder is written in the same format (scale/ladder_curves.h).
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "runs/import.h"
#include "runs/sweeps.h"
#include "scale/ladder_curves.h"
#include "scale/ladder_seeds.h"

#define N_FIXED 7

// A finished sextant ladder (spec, run directories under dir or runs/<name>) as a curve ladder. out overwritten.
static sx_status read_own_ladder(const char *spec_path, const char *dir, import_ladder *out) {
    memset(out, 0, sizeof *out);
    ladder_spec spec;
    char d[1100];
    sx_status st = ladder_open(spec_path, dir, &spec, d, sizeof d);
    if (st) return st;
    ladder_data data;
    if (!(st = ladder_data_read(&spec, d, &data))) st = ladder_curves_from_data(&data, out);
    ladder_data_free(&data);
    return st;
}

int cmd_import(int argc, char **argv) {
    static const flags_command cmd = {
        "import --curves FILE [--runs FILE] --loss-col NAME[,NAME...] --out DIR [column flags]\n"
        "       sextant import --from-ladder SPEC [--from-runs DIR] --out DIR",
        "Reads loss curves trained anywhere into a curve ladder that `sextant fit`, `forecast` and `backtest`\n"
        "read like one of sextant's own. Each field is found in the column of its canonical name, or the one\n"
        "named by --FIELD-col; a run field no table holds can be set for every run with --FIELD. Bad input is\n"
        "refused with the file, row and column; nothing is written unless everything is read.",
        0, 0, NULL};
    const char *runs, *curves, *out, *loss, *from_ladder, *from_runs;
    bool best_lr;
    const char *col[IF_N_FIELDS] = {0}, *val[IF_N_FIELDS] = {0};
    char names[2 * IF_N_FIELDS][48], helps[2 * IF_N_FIELDS][160];
    flag_def flags[N_FIXED + 2 * IF_N_FIELDS] = {
        {"curves", FLAG_STR, &curves, "", "the curves table: one row per evaluation (.csv or .jsonl)"},
        {"runs", FLAG_STR, &runs, "", "the runs table: one row per run (default: run columns of the curves table)"},
        {"loss-col", FLAG_STR, &loss, "", "loss column(s), comma-separated (e.g. loss_c4_en,loss_wiki)"},
        {"out", FLAG_STR, &out, "", "the ladder directory to create"},
        {"from-ladder", FLAG_STR, &from_ladder, "", "instead of tables: a finished sextant ladder (its spec) in the same format"},
        {"from-runs", FLAG_STR, &from_runs, "", "with --from-ladder: the ladder's output directory (default runs/<name>)"},
        {"best-lr", FLAG_BOOL, &best_lr, "false", "keep only each LR sweep's best run (runs alike but for their peak LR: "
         "the lowest last loss of the first loss column)"},
    };
    size_t n = N_FIXED;
    for (int f = 0; f < IF_N_FIELDS; f++) { // --STEM-col for every field; --STEM for every run field
        snprintf(names[2 * f], sizeof names[0], "%s-col", import_field_flag(f));
        snprintf(helps[2 * f], sizeof helps[0], "column holding %s [%s]", import_field_name(f), import_field_name(f));
        flags[n++] = (flag_def){names[2 * f], FLAG_STR, &col[f], "", helps[2 * f]};
        if (f >= IF_STEP || f == IF_RUN) continue;
        snprintf(names[2 * f + 1], sizeof names[0], "%s", import_field_flag(f));
        snprintf(helps[2 * f + 1], sizeof helps[0], "%s of every run, where no column has it%s", import_field_name(f),
                 f == IF_SCHEDULE ? " (a sextant schedule, e.g. cosine:min=0.1)" : f == IF_WARMUP ? " (steps, or a fraction < 1)" : "");
        flags[n++] = (flag_def){names[2 * f + 1], FLAG_STR, &val[f], "", helps[2 * f + 1]};
    }
    flags_args a;
    if (flags_start(&cmd, flags, n, argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && !*out) st = sx_fail(SX_ERR_ARG, "give the ladder directory to create (--out DIR)");
    // The tables' flags say how to read them: with --from-ladder there are none to read.
    if (!st && *from_ladder) st = flags_only(&a, "from-ladder,from-runs,out", "--from-ladder (a sextant ladder, read as it is)");
    if (!st && !*from_ladder && flags_given(&a, "from-runs"))
        st = sx_fail(SX_ERR_ARG, "--from-runs is the runs directory of --from-ladder SPEC: give --from-ladder");
    if (st) return cli_report("import", st);
    import_options o = {.runs_path = runs, .curves_path = curves, .loss_cols = loss};
    for (int f = 0; f < IF_N_FIELDS; f++) {
        o.col[f] = col[f];
        o.value[f] = val[f];
    }
    import_ladder l;
    char source[2200];
    if (*from_ladder) {
        st = read_own_ladder(from_ladder, from_runs, &l);
        snprintf(source, sizeof source, "sextant ladder %s", from_ladder);
    } else {
        st = import_read_tables(&o, &l);
        snprintf(source, sizeof source, "%s%s%s", curves, *runs ? " + " : "", runs);
    }
    sweeps_summary sw = {0};
    if (!st && best_lr) st = sweeps_keep_best(&l, 0, &sw);
    else if (!st) sw = sweeps_count(&l);
    if (!st) st = import_write_dir(&l, out, source);
    if (!st) {
        size_t points = 0, groups = 0;
        for (size_t i = 0; i < l.n_runs; i++) {
            points += l.runs[i].n_points;
            size_t j = 0;
            while (j < i && strcmp(l.runs[j].group, l.runs[i].group)) j++;
            groups += j == i;
        }
        printf("imported %zu runs in %zu groups, %zu evaluations of %zu loss column(s) -> %s\n", l.n_runs, groups, points,
               l.n_loss, out);
        if (l.n_rows_skipped)
            printf("(%zu curve rows had no loss value and no lr, steps logged without an evaluation: skipped)\n", l.n_rows_skipped);
        if (*l.unused_values)
            printf("(%s not used: every run has that field in the tables, and a value from a flag fills only runs "
                   "without it)\n", l.unused_values);
        if (l.n_planned)
            printf("(%zu planned runs, with role heldout and no evaluations yet, kept in the runs table: forecast one with "
                   "forecast --ladder %s --run ID)\n", l.n_planned, out);
        if (l.n_rows_step0)
            printf("(%zu curve rows at step 0, before any update, left out: the laws start at step 1)\n", l.n_rows_step0);
        if (best_lr)
            printf("(kept the best run of each of %zu LR sweeps by its last %s: %zu of their %zu runs left out)\n", sw.n_sweeps,
                   l.loss_names[0], sw.n_dropped, sw.n_runs_in_sweeps);
        else if (sw.n_sweeps)
            printf("note: %zu LR sweeps, %zu runs alike but for their peak LR: the laws read every run as trained at a tuned "
                   "LR, so a sweep's worse runs pull the fit up (and a diverged target cannot be forecast); --best-lr keeps "
                   "each sweep's best run\n", sw.n_sweeps, sw.n_runs_in_sweeps);
        if (sw.n_repeats && !best_lr)
            printf("note: %zu runs repeat an earlier run's group, length, schedule, peak LR and seed (logged twice? give "
                   "repeated seeds their seed column): each is fitted as a run of its own\n", sw.n_repeats);
    }
    import_ladder_free(&l);
    return cli_report("import", st);
}
