// compare: architecture or recipe variants judged by their ladders. Each variant's final losses across its
// rungs are fitted with L(C) = Linf + A·C^-alpha (optionally with the baseline's Linf shared by all), then
// at a target compute the report gives each variant's projected loss with a seed interval, its effective
// compute multiplier over the baseline ((L_base − Linf)/(L_var − Linf))^(1/alpha) (baseline's Linf and
// alpha) with two intervals, its KV-cache bytes per token, and a verdict.
//
// Intervals: a seed jackknife with t quantiles. Every ladder is refitted with each seed of each rung left out
// in turn; rung r's share of a statistic's variance is (S_r−1)/S_r · Σ_k (ℓ_k − mean ℓ)² (ℓ_k: the statistic
// with seed k of rung r left out), the shares add over rungs (their seeds are independent), and the interval
// is the statistic ± t_{0.975, df}·√variance, df by Welch–Satterthwaite, (Σ v_r)² / Σ v_r²/(S_r − 1): each share
// is known to S_r − 1 degrees of freedom. The multiplier's intervals are taken on its log:
//   unpaired: each ladder's seeds left out on their own, the two ladders' shares summed;
//   paired:   seed k of rung r left out of every ladder alike. Common random numbers: seed k of every ladder
//             trains on the same data order, evaluates the same windows and, where the tensors agree, starts
//             from the same weights, so the noise of seed k cancels in the difference. Needs equal numbers of
//             rungs and of seeds at each rung (rungs may differ from each other: `compare --until-decided`
//             adds seeds to chosen rungs).
// Why not the percentile bootstrap over seeds it replaces: at 3 seeds a rung has 10 distinct resamples and
// their spread is the plug-in one ((S−1)/S of the variance) with normal quantiles, so its 95% intervals held
// the truth 67–94% of the time and identical laws were "decided" 6–33% of the time (bench/compare_coverage;
// the jackknife t: 92.5–99% and 2–7.5%, at 2 seeds too, for normal seed noise).
// The verdict tests the projected loss gain at the target (baseline's loss minus the variant's: 0 exactly where
// the multiplier is 1, and finite where the multiplier is not, e.g. a variant projected below the baseline's
// floor) with the same jackknife t, paired (unpaired when pairing is impossible); the p-values of the
// variants against the one baseline are Holm-adjusted, so the family-wise error of all verdicts together is
// at most COMPARE_ALPHA. A rung with one seed leaves the noise unknown: unbounded intervals, no verdict; the
// report names the ladder and its rungs with one seed, and how to give them more.
// Where the paired noise comes from (for scale/sequential.h): the paired jackknife's per-rung shares of every
// variant's ln-multiplier variance; and the same with a hypothetical next rung (one ladder step x_0²/x_1 above
// the largest, as many seeds, each off the law as the largest rung's seed k is) says what a larger rung would do.
// Not responsible for training the ladders (scale/ladder.h) or adding seeds (scale/sequential.h).
#ifndef SEXTANT_SCALE_COMPARE_H
#define SEXTANT_SCALE_COMPARE_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"
#include "scale/ladder.h"

#define COMPARE_ALPHA 0.05

// specs[0] is the baseline; dirs[i] holds ladder i's runs, or is a curve ladder directory (runs/import.h:
// imported, or an own ladder written by `import --from-ladder`), whose groups are the rungs and whose runs
// of each group's longest length are its seeds (specs[i] then only names it). target_flops <= 0: 10x the
// baseline's largest rung. *report receives a new reference:
// {"target_flops", "shared_linf", "paired" (bool), "alpha", "family" (variants tested),
//  "variants": [{"name", "largest_rung", "seeds" (the fewest of any rung), "rung_seeds", "verdict", "decided"
//  (bool), "params", "rung_flops", "rung_loss", "loss", "loss_lo", "loss_hi", "multiplier", "multiplier_lo",
//  "multiplier_hi", "unpaired_df" (unpaired), "paired_lo", "paired_hi", "paired_se" (of the ln multiplier),
//  "paired_df", "gain", "gain_se", "gain_df" (the verdict's statistic: the baseline's projected loss less the
//  variant's, its jackknife standard error, paired where the comparison is, and degrees of freedom), "p_value" (of
//  the gain), "p_holm", "kv_bytes_per_token",
//  "active_params_largest", and when paired "rung_var" (per rung: its seeds' jackknife variance of the ln
//  multiplier), "next_rung_flops", "next_rung_var" (the total with the hypothetical next rung); "one_seed_rungs"
//  (the ladder's rungs with one seed: w32 for an own ladder, the group for a curve ladder, 1.. largest first in
//  memory) where there are any; "unbounded_reason" (why, in words) where an interval of the row is unbounded}]}
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
// The report as a table (an unbounded interval reads "unbounded", "> lo" or "< hi"), the verdicts' test, and
// each unbounded_reason once with the variants it holds for. A report with a "verdict_rule" (scale/sequential.h)
// prints that as the test, and its p column is the raw p (each is tested at its own level there).
void compare_print(FILE *out, json_t *report);

// Holm's step-down adjustment of m p-values: adj[i] = max over the j ranked at or before i (ascending p) of
// min(1, (m − rank_j)·p_j), rank 0-based. Rejecting where adj <= alpha controls the family-wise error at alpha.
// adj (m) overwritten; may alias p.
void compare_holm(const double *p, size_t m, double *adj);

#endif
