// sweeps: the LR sweeps of an imported ladder, counted or cut to their best runs. See sweeps.h.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "runs/sweeps.h"

// The LR traces of two runs with no schedule string have one shape: the same steps, LR in proportion to peak.
static int same_trace_shape(const import_run *a, const import_run *b) {
    if (a->n_trace != b->n_trace) return 0;
    for (size_t k = 0; k < a->n_trace; k++) {
        double x = a->trace_lr[k] / a->peak_lr, y = b->trace_lr[k] / b->peak_lr;
        if (a->trace_step[k] != b->trace_step[k] || fabs(x - y) > 1e-9 * fmax(fabs(x), fabs(y))) return 0;
    }
    return 1;
}

// Alike in everything the laws read but the peak LR.
static int alike(const import_run *a, const import_run *b) {
    return !strcmp(a->group, b->group) && a->n_params == b->n_params && a->n_nonembed == b->n_nonembed &&
           a->tokens_per_step == b->tokens_per_step && a->total_steps == b->total_steps &&
           a->warmup_steps == b->warmup_steps && a->seed == b->seed && a->heldout == b->heldout &&
           !strcmp(a->schedule, b->schedule) && (*a->schedule || same_trace_shape(a, b));
}

// set[i]: the first run alike to run i (itself when none before it); *sweep[i] (per set head): 1 when the set
// is a sweep (two or more runs, two or more peak LRs). Both malloc'd; NULL on out of memory.
static size_t *sets_of(const import_ladder *l, unsigned char **sweep) {
    size_t *set = sx_alloc((l->n_runs ? l->n_runs : 1) * sizeof *set, "sweeps set");
    *sweep = sx_calloc_n(l->n_runs ? l->n_runs : 1, 1, "sweeps sweep");
    if (!set || !*sweep) {
        free(set);
        free(*sweep);
        *sweep = NULL;
        return NULL;
    }
    for (size_t i = 0; i < l->n_runs; i++) {
        set[i] = i;
        for (size_t j = 0; j < i; j++)
            if (set[j] == j && alike(&l->runs[j], &l->runs[i])) {
                set[i] = j;
                if (l->runs[j].peak_lr != l->runs[i].peak_lr) (*sweep)[j] = 1;   // two LRs: a sweep
                break;
            }
    }
    return set;
}

static sweeps_summary summary_of(const import_ladder *l, const size_t *set, const unsigned char *sweep) {
    sweeps_summary s = {0};
    for (size_t i = 0; i < l->n_runs; i++) {
        s.n_sweeps += set[i] == i && sweep[i];
        s.n_runs_in_sweeps += sweep[set[i]];
        size_t k = set[i];
        while (k < i && !(set[k] == set[i] && l->runs[k].peak_lr == l->runs[i].peak_lr)) k++;
        s.n_repeats += k < i;
    }
    return s;
}

sweeps_summary sweeps_count(const import_ladder *l) {
    unsigned char *sweep;
    size_t *set = sets_of(l, &sweep);
    sweeps_summary s = set ? summary_of(l, set, sweep) : (sweeps_summary){0};
    free(set);
    free(sweep);
    return s;
}

// A trained run's last evaluation: its step, its loss in column `loss`.
static long last_eval(const import_run *r) { return r->step[r->n_points - 1]; }
static double last_loss(const import_run *r, size_t n_loss, size_t loss) { return r->loss[(r->n_points - 1) * n_loss + loss]; }

sx_status sweeps_keep_best(import_ladder *l, size_t loss, sweeps_summary *s) {
    unsigned char *sweep, *keep = sx_alloc(l->n_runs ? l->n_runs : 1, "sweeps keep");
    size_t *set = sets_of(l, &sweep);
    if (!set || !keep) {
        free(set);
        free(sweep);
        free(keep);
        return sx_fail(SX_ERR_NOMEM, "import: out of memory");
    }
    *s = summary_of(l, set, sweep);
    for (size_t i = 0; i < l->n_runs; i++) keep[i] = !sweep[set[i]];
    for (size_t h = 0; h < l->n_runs; h++) {
        if (set[h] != h || !sweep[h]) continue;
        long last = 0;
        for (size_t i = h; i < l->n_runs; i++)
            if (set[i] == h && last_eval(&l->runs[i]) > last) last = last_eval(&l->runs[i]);
        size_t best = SIZE_MAX;
        for (size_t i = h; i < l->n_runs; i++)
            if (set[i] == h && last_eval(&l->runs[i]) == last &&
                (best == SIZE_MAX || last_loss(&l->runs[i], l->n_loss, loss) < last_loss(&l->runs[best], l->n_loss, loss)))
                best = i;
        keep[best] = 1;
    }
    size_t before = l->n_runs;
    import_keep_runs(l, keep);
    s->n_dropped = before - l->n_runs;
    free(set);
    free(sweep);
    free(keep);
    return SX_OK;
}
