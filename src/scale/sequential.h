// sequential: `compare --until-decided`, a comparison that adds seeds until it decides. Each round compares
// the ladders (scale/compare.h: paired seed bootstrap, Holm over the variants) and stops when
//   decided: every variant's Holm-adjusted paired verdict names a winner or a loser;
//   width:   every variant still undecided has a paired 95% multiplier interval narrower than `width`;
//   budget:  the next round would pass the budget (training FLOPs, or wall-clock hours), or the ladders
//            reached the spec's limit of 1000 seeds;
// otherwise it adds seed S+1 to every rung of every ladder (all variants together, so seed k stays paired
// across them) and trains the new runs of all ladders in one pool of the ladder runner (largest first).
// Seeds are added to every rung rather than to chosen rungs: the ladder's plan has one seed count, and a
// balanced design keeps the pairing exact.
// When it stops undecided it estimates, per undecided variant, the seeds per rung needed for 80% power
// to decide at the estimated multiplier (interval width ∝ 1/√seeds, in log multiplier; at the Holm level of
// the first undecided variant), or to reach `width` when that is sooner.
// Not responsible for the statistics (scale/compare.h) or training (scale/ladder.h).
#ifndef SEXTANT_SCALE_SEQUENTIAL_H
#define SEXTANT_SCALE_SEQUENTIAL_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

typedef struct {
    double width;          // > 0: stop when every undecided paired interval is narrower (multiplier units)
    double budget_flops;   // > 0: training FLOPs the added runs may spend
    double budget_hours;   // > 0: wall-clock time the rounds may take; a round starts only if the time
                           // left covers its estimate: its FLOPs x the seconds per FLOP of the rounds
                           // before, or for the first round those the baseline's largest run logged
                           // (no estimate when it logged no throughput)
    const char *exe;       // the sextant binary the ladder runner starts (`exe train ...`)
    int jobs;              // runs trained at once
} sequential_options;

// specs[0] is the baseline; their n_seeds grow as seeds are added. *report receives the last compare
// report with "until_decided": {"stop": "decided"|"width"|"budget", "rounds", "seeds" (per rung, at the
// end), "flops_spent", "seconds", "more_seeds": [per variant: seeds per rung still needed, or null where
// decided, narrow enough, or no estimate is possible (multiplier estimate exactly 1 or unbounded)]}.
sx_status sequential_compare(ladder_spec *specs, const char *const *dirs, size_t n, double target_flops, bool shared_linf,
                             const sequential_options *o, json_t **report);
// Training FLOPs of adding seed S+1 (S = spec->n_seeds) to the ladder under dir: runs already finished cost
// nothing; a cooldown branch costs what it trains beyond its branch point.
sx_status sequential_round_flops(const ladder_spec *spec, const char *dir, double *flops);
// The stop reason and, when undecided, the power estimate: a few lines.
void sequential_print(FILE *out, json_t *report);

#endif
