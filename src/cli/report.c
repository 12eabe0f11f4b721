#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "laws/curvefit.h"

void cli_say_fitting(const char *cmd, const import_ladder *l) {
    size_t points = 0, thinned;
    long longest = 0;
    for (size_t i = 0; i < l->n_runs; i++) {
        points += l->runs[i].n_points;
        if (l->runs[i].total_steps > longest) longest = l->runs[i].total_steps;
    }
    curvefit_options o;
    curvefit_options_default(&o);
    size_t fitted = curvefit_points(l, NULL, &o, &thinned);
    char thin[200] = "";
    if (thinned)
        snprintf(thin, sizeof thin, "; the %zu runs with more than %d from %.0f%% of their length on are thinned to at most "
                 "%d for the laws, %zu points in all", thinned, CURVEFIT_MAX_POINTS, 100 * o.min_frac, CURVEFIT_MAX_POINTS,
                 fitted);
    fprintf(stderr, "sextant %s: fitting %zu runs, %zu evaluations (the candidates for N one size back, the law, and the law on the runs' first halves; "
            "runs of up to %ld steps%s%s)\n", cmd, l->n_runs, points, longest, thin,
            fitted > 30000 ? ": this can take minutes" : "");
}

void cli_note_by_run(const char *why) {
    if (!strcmp(why, "one size")) return;   // a schedule ladder: its forecasts are at that size
    fflush(stdout);   // after the lines it qualifies, when both go to one pipe
    fprintf(stderr, "note: N was chosen and the band's extrapolation term measured leaving one run out (%s), not one "
            "size back: that error is within the training sizes, and a forecast above them can miss by more than its "
            "band says\n", why);
}

int cli_report(const char *cmd, sx_status st) {
    if (st == SX_OK) return 0;
    fprintf(stderr, "sextant %s: %s\n", cmd, sx_last_error());
    return st == SX_ERR_ARG ? 2 : 1;
}
