// compare: architecture or recipe variants judged by their ladders. Each variant's final losses across its
// rungs are fitted with L(C) = Linf + A·C^-alpha (optionally with the baseline's Linf shared by all), then
// at a target compute the report gives each variant's projected loss with a seed-bootstrap interval, its
// effective compute multiplier over the baseline ((L_base − Linf)/(L_var − Linf))^(1/alpha) (baseline's
// Linf and alpha) with two intervals, its KV-cache bytes per token, and a verdict.
//
// Two bootstraps over seeds (COMPARE_BOOT replicates each; a replicate re-averages each rung over a
// resample of its seeds and refits every law):
//   unpaired: every ladder resamples its own seeds independently of the others;
//   paired:   one resample of seed indices per replicate (each rung its own, as unpaired), applied to every
//             variant alike. Common random numbers: seed k of every ladder trains on the same data order,
//             evaluates the same windows and, where the tensors agree, starts from the same weights, so the
//             noise of seed k cancels in the difference. Needs equal numbers of rungs and of seeds at each
//             rung (rungs may differ from each other: `compare --until-decided` adds seeds to chosen rungs).
// The verdict uses the paired bootstrap (the unpaired one when pairing is impossible): a variant's p-value
// is the smallest a at which its percentile interval at level 1 − a excludes 1, and the p-values of the
// variants against the one baseline are Holm-adjusted, so the family-wise error of all verdicts together
// is at most COMPARE_ALPHA. With one variant this is exactly "the paired 95% interval excludes 1".
// Where the paired noise comes from (for scale/sequential.h): a paired per-rung jackknife (seed k of rung r
// left out of every ladder alike, all refitted) gives each rung's share of the variance of every variant's
// ln multiplier; and the same with a hypothetical next rung (one ladder step x_0²/x_1 above the largest, as many
// seeds, each off the law as the largest rung's seed k is) says what a larger rung would do.
// Not responsible for training the ladders (scale/ladder.h) or adding seeds (scale/sequential.h).
#ifndef SEXTANT_SCALE_COMPARE_H
#define SEXTANT_SCALE_COMPARE_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

#define COMPARE_BOOT 200
#define COMPARE_ALPHA 0.05

// specs[0] is the baseline; dirs[i] holds ladder i's runs, or is a curve ladder directory (runs/import.h:
// imported, or an own ladder written by `import --from-ladder`), whose groups are the rungs and whose runs
// of each group's longest length are its seeds (specs[i] then only names it). target_flops <= 0: 10x the
// baseline's largest rung. *report receives a new reference:
// {"target_flops", "shared_linf", "bootstrap", "paired" (bool), "alpha", "family" (variants tested),
//  "variants": [{"name", "largest_rung", "seeds" (the fewest of any rung), "rung_seeds", "verdict", "decided"
//  (bool), "params", "rung_flops", "rung_loss", "loss", "loss_lo", "loss_hi", "multiplier", "multiplier_lo",
//  "multiplier_hi" (unpaired), "paired_lo", "paired_hi", "p_value", "p_holm", "kv_bytes_per_token",
//  "active_params_largest", and when paired "rung_var" (per rung: its seeds' jackknife variance of the ln
//  multiplier), "next_rung_flops", "next_rung_var" (the total with the hypothetical next rung)}]}
// (an unbounded or unavailable number is null). Rungs are in plan order, largest first.
sx_status compare_ladders(const ladder_spec *specs, const char *const *dirs, size_t n, double target_flops,
                          bool shared_linf, json_t **report);
// One ladder's final losses given in memory (what compare_ladders reads from run directories).
typedef struct {
    const char *name;
    size_t rungs;           // 3 .. LADDER_MAX_RUNGS
    const double *flops;    // (rungs) each rung's training FLOPs, largest first
    const size_t *seeds;    // (rungs) each rung's seeds, >= 1
    const double *final;    // (sum of seeds) every seed's final loss, rung after rung
} compare_ladder;
// compare_ladders on ladders given in memory (l[0] the baseline); the report's KV bytes and parameters are null.
sx_status compare_finals(const compare_ladder *l, size_t n, double target_flops, bool shared_linf, json_t **report);
void compare_print(FILE *out, json_t *report);

// Two-sided bootstrap p-value of "multiplier = 1" from replicates m (n >= 1; sorted in place): the smallest
// a in (0, 1] at which the percentile interval at level 1 − a (fit_quantile at a/2 and 1 − a/2) excludes 1,
// or 1 when even the median is 1.
double compare_boot_pvalue(double *m, size_t n);
// Holm's step-down adjustment of m p-values: adj[i] = max over the j ranked at or before i (ascending p) of
// min(1, (m − rank_j)·p_j), rank 0-based. Rejecting where adj <= alpha controls the family-wise error at alpha.
// adj (m) overwritten; may alias p.
void compare_holm(const double *p, size_t m, double *adj);

#endif
