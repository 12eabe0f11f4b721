// ttc: test-time-compute strategies and their scaling analysis. Parallel selectors over a pool of N
// samples of one problem (majority vote, best-of-N by verifier score, verifier-weighted vote), their
// expected accuracy at k < N by random subsets, tree search against the process verifier (beam, lookahead, DVTS), the unbiased
// pass@k estimator, the coverage law fit c(k) ≈ exp(a·k^b), and compute-optimal strategy choice per
// difficulty bin with two-fold cross-validation. Not responsible for training models or for files.
#ifndef SEXTANT_INFER_TTC_H
#define SEXTANT_INFER_TTC_H
#include <stdbool.h>
#include <stddef.h>
#include "core/rng.h"
#include "infer/decode.h"
#include "infer/task_arith.h"
#include "infer/verifier.h"

// Unbiased pass@k from n samples with c correct: 1 − C(n−c, k)/C(n, k) (product form). k <= n.
double ttc_pass_at_k(size_t n, size_t c, size_t k);
// The same through log-gamma (for cross-checking).
double ttc_pass_at_k_lgamma(size_t n, size_t c, size_t k);
// Least squares of log(−log c) on log k over points with 0 < c < 1: c ≈ exp(a·k^b). Needs two such points.
sx_status ttc_fit_coverage(const double *k, const double *cov, size_t n, double *a, double *b);

// The selectors; the strategies that use them are named in one table (infer/ttc_experiment.h).
typedef enum { SEL_MAJORITY = 0, SEL_BEST_OF_N, SEL_WEIGHTED } ttc_selector;

// One problem's N samples: final answer (has_answer false when none parses), correctness, a verifier score.
typedef struct {
    size_t n;
    const long *answer;
    const bool *has_answer, *correct;
    const double *score;
} ttc_pool;

// The chosen sample among idx[0..k) (or −1 if none has an answer). Majority: the largest answer group, ties
// to the group seen first; best-of-N: the highest score (ties to the first); weighted: the answer with the
// largest score sum, represented by its first sample. Samples without an answer are never chosen.
long ttc_select(const ttc_pool *p, const size_t *idx, size_t k, ttc_selector s);
// Expected accuracy of a selector at budget k: the mean over `trials` random size-k subsets (one subset, the
// whole pool, when k == n).
double ttc_selector_accuracy(const ttc_pool *p, size_t k, ttc_selector s, size_t trials, rng_state *rng);

// Tree search against a process verifier, N = n_beams generations per problem:
// - beam search (Snell et al. §5.2): N first steps sampled; each round every active beam gets one more step
//   (sampled up to '\n' or end of text), is scored by the verifier (step scores aggregated with agg), and the
//   N/M best are kept and expanded M ways;
// - lookahead (lookahead = k > 0): as beam search, but a beam is ranked by the verifier's aggregated score at
//   the end of a k-step greedy rollout from it (the rollout is discarded; its cost is counted);
// - DVTS (diverse verifier tree search, search-and-learn): N/M independent subtrees; each keeps only its best
//   candidate per round and expands it M ways; a subtree stops when its best candidate has ended.
// Ended beams (end of text, a step without a newline, a full context, the last round) are set aside; the search
// stops once N are set aside or none is active. Answer: the verifier-weighted vote over the ended beams.
// Counts policy tokens generated (rollouts included) and policy + verifier FLOPs (both decoders' counts: a
// shared prefix is computed once, as the KV cache forks it).
typedef enum { SEARCH_BEAM = 0, SEARCH_DVTS } search_kind;
typedef struct {
    search_kind kind;
    size_t n_beams, width, max_rounds, max_step_tokens, lookahead;
    double temperature;
    step_agg agg;
} search_config;
typedef struct {
    bool has_answer, correct;
    long answer;
    size_t tokens;        // policy tokens generated
    double flops;         // policy + verifier decode FLOPs
    size_t completed;
} search_result;
sx_status ttc_search(decoder *policy, const verifier *prm, const arith_problem *p, const search_config *c, rng_state *rng,
                     search_result *out);

// Compute-optimal selection: acc[q·S + s] = accuracy of strategy s on problem q at one budget, bin[q] the
// problem's difficulty bin (0..n_bins). Two folds (even / odd problem index): in each bin pick the strategy
// best on one fold among the allowed ones (allowed (S) or NULL: all), score it on the other; returns the mean
// accuracy over all problems (NaN when none is allowed) and writes the strategy chosen per bin on the whole set
// to choice (n_bins, may be NULL).
double ttc_compute_optimal(const double *acc, const bool *allowed, const size_t *bin, size_t n_problems,
                           size_t n_strategies, size_t n_bins, size_t *choice);
// The same at a FLOP budget: the choices s (strategy-and-budget pairs) whose cost[s] (mean FLOPs per problem)
// is at most budget; allowed (S) is scratch.
double ttc_compute_optimal_at(const double *acc, const double *cost, double budget, const size_t *bin, size_t n_problems,
                              size_t n_choices, size_t n_bins, bool *allowed);
// Within one difficulty bin b: the cheapest of S choices (strategy-and-budget pairs) whose mean accuracy over
// the bin's problems reaches target. acc[q·S + s] and cost[q·S + s] per problem (cost NaN: s not measured).
// Returns the choice (S: none reaches target, or the bin is empty) and its bin means in *acc_out, *cost_out.
// Picked and judged on the same problems: the least cost to match target as measured, optimistic by the
// noise of the choices that tie with it.
size_t ttc_cheapest_reaching(const double *acc, const double *cost, const size_t *bin, size_t n_problems,
                             size_t n_choices, size_t b, double target, double *acc_out, double *cost_out);
// The most accurate of n choices (acc[i], cost[i]; cost NaN: not measured) costing at most budget; ties go to
// the cheaper. Returns n when none fits.
size_t ttc_best_within(const double *acc, const double *cost, size_t n, double budget);
// Bins by quantile of a per-problem difficulty estimate d (higher = easier): bin 0 the hardest.
void ttc_bin_quantiles(const double *d, size_t n, size_t n_bins, size_t *bin);

#endif
