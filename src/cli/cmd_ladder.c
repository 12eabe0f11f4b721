// sextant ladder run|status SPEC: trains a scaling ladder described by a spec file (scale/ladder.h).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "dist/dist.h"
#include "scale/ladder.h"
#include "scale/ladder_seeds.h"

int cmd_ladder(int argc, char **argv) {
    static const flags_command cmd = {
        "ladder run|status|plan SPEC [flags]",
        "Trains every rung (and seed, and cooldown branch) of a ladder spec into its own run directory,\n"
        "skipping finished runs and resuming interrupted ones. The spec format is documented in\n"
        "docs/FORMATS.md (Ladder spec) and examples/*.ladder.",
        0, 2, NULL};
    const char *out;
    long jobs, rung;
    const flag_def flags[] = {
        {"out", FLAG_STR, &out, "", "output directory (default runs/<name>)"},
        {"jobs", FLAG_INT, &jobs, "1", "runs trained at once (threads are split between them)"},
        {"rung", FLAG_INT, &rung, "-1", "train only run number K of the plan (one process per run under a batch system)"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && a.npos >= 1 && strcmp(a.pos[0], "run") && strcmp(a.pos[0], "status") && strcmp(a.pos[0], "plan"))
        st = sx_fail(SX_ERR_ARG, "unknown action '%s': sextant ladder run|status|plan SPEC", a.pos[0]);
    if (!st && a.npos != 2) st = sx_fail(SX_ERR_ARG, "usage: sextant ladder run|status|plan SPEC");
    if (!st && jobs < 1) st = sx_fail(SX_ERR_ARG, "--jobs must be at least 1");
    const char *unused = NULL;
    if (!st && strcmp(a.pos[0], "run") && (unused = flags_first_given(&a, "jobs,rung")))
        st = sx_fail(SX_ERR_ARG, "--%s is a setting of `ladder run`, not of `ladder %s`", unused, a.pos[0]);
    if (!st && !strcmp(a.pos[0], "plan") && flags_given(&a, "out"))
        st = sx_fail(SX_ERR_ARG, "`ladder plan` only reads the spec: --out names the runs' directory of run and status");
    ladder_spec spec;
    char dir[1100];
    if (!st) st = ladder_open(a.pos[1], out, &spec, dir, sizeof dir);
    if (st) return cli_report("ladder", st);
    if (!strcmp(a.pos[0], "status")) return cli_report("ladder", ladder_print_status(&spec, dir));
    if (!strcmp(a.pos[0], "plan")) {
        ladder_run *runs;
        size_t nr;
        if ((st = ladder_plan(&spec, &runs, &nr))) return cli_report("ladder", st);
        for (size_t i = 0; i < nr; i++)
            printf("%3zu %-18s %-26s steps %-6ld batch %-3zu lr %.3g  %.3g FLOPs  %s\n", i, runs[i].dir, runs[i].descriptor,
                   runs[i].steps, runs[i].batch, runs[i].lr, runs[i].flops, runs[i].schedule);
        free(runs);
        return 0;
    }
    // The trainers run this process's own binary: /proc/self/exe names it even after a rebuild has replaced
    // the file at its path, which made runs started meanwhile fail.
    const char *exe = "/proc/self/exe";
    if (access(exe, X_OK)) return cli_report("ladder", sx_fail(SX_ERR_IO, "cannot find the sextant binary (%s)", exe));
    if ((st = dist_init())) return cli_report("ladder", st);   // under mpirun: the runs are spread over the ranks
    int rc = cli_report("ladder", ladder_execute(&spec, (const char *const[]){dir}, 1, exe, (int)jobs, rung));
    dist_finalize();   // waits for the other ranks' runs
    return rc;
}
