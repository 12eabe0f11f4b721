#include <stdio.h>
#include "cli/commands.h"

void cli_say_fitting(const char *cmd, const import_ladder *l) {
    size_t points = 0;
    long longest = 0;
    for (size_t i = 0; i < l->n_runs; i++) {
        points += l->runs[i].n_points;
        if (l->runs[i].total_steps > longest) longest = l->runs[i].total_steps;
    }
    fprintf(stderr, "sextant %s: fitting %zu runs, %zu evaluations (the candidates for N one size back, then the law; "
            "runs of up to %ld steps%s)\n", cmd, l->n_runs, points, longest,
            (double)points * (double)longest > 5e8 ? ": many points of long runs, this takes minutes" : "");
}

int cli_report(const char *cmd, sx_status st) {
    if (st == SX_OK) return 0;
    fprintf(stderr, "sextant %s: %s\n", cmd, sx_last_error());
    return st == SX_ERR_ARG ? 2 : 1;
}
