// sweeps: the LR sweeps of an imported ladder -- runs alike in everything the laws read (group, parameter
// counts, tokens per step, length, schedule or LR trace shape, warmup, seed, role) but their peak LR. The laws
// read every run as trained at a tuned LR (law_nds.h: the LR's scale does not enter), so a sweep's worse runs
// pull a fit up and its diverged ones make forecast targets no law can reach; a lab's ladder keeps each
// sweep's best run. sweeps_count says how many there are and how many runs repeat another (import's notes);
// sweeps_keep_best cuts each to its best run: the lowest loss at the last evaluation among its runs evaluated
// to the sweep's last step (a run stopped earlier cannot be compared, and is dropped with the rest).
//
// Not responsible for: reading the tables (runs/import.h), tuning LR (`sextant lr-fit`).
#ifndef SEXTANT_RUNS_SWEEPS_H
#define SEXTANT_RUNS_SWEEPS_H
#include <stddef.h>
#include "core/status.h"
#include "runs/import.h"

typedef struct {
    size_t n_sweeps;         // sets of two or more alike runs with at least two peak LRs
    size_t n_runs_in_sweeps; // the runs in them
    size_t n_repeats;        // runs alike to an earlier one at its peak LR too (a run logged twice, or seeds unnamed)
    size_t n_dropped;        // sweeps_keep_best: the runs it removed
} sweeps_summary;

// Counts the sweeps of l.
sweeps_summary sweeps_count(const import_ladder *l);
// Keeps only each sweep's best run by loss column `loss` (freeing the others); *s says what it did.
// Errors: SX_ERR_NOMEM.
sx_status sweeps_keep_best(import_ladder *l, size_t loss, sweeps_summary *s);

#endif
