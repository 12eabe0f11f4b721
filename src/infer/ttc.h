// ttc: test-time-compute strategies and their scaling analysis. Parallel selectors over a pool of N
// samples of one problem (majority vote, best-of-N by verifier score, verifier-weighted vote), their
// expected accuracy at k < N by random subsets, beam search against the process verifier, the unbiased
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

// Beam search against a process verifier (Snell et al. §5.2): N beams, width M (N/M kept per round, each
// expanded M ways by sampling one step, i.e. up to '\n' or end of text), step scores aggregated with agg,
// completed beams set aside until N are complete or max_rounds pass; the answer is the verifier-weighted vote
// over the completed ones. Counts policy tokens generated and policy + verifier FLOPs.
typedef struct {
    size_t n_beams, width, max_rounds, max_step_tokens;
    double temperature;
    step_agg agg;
} beam_config;
typedef struct {
    bool has_answer, correct;
    long answer;
    size_t tokens;        // policy tokens generated
    double flops;         // policy + verifier decode FLOPs
    size_t completed;
} beam_result;
sx_status ttc_beam_search(decoder *policy, const verifier *prm, const arith_problem *p, const beam_config *c, rng_state *rng,
                          beam_result *out);

// Compute-optimal selection: acc[q·S + s] = accuracy of strategy s on problem q at one budget, bin[q] the
// problem's difficulty bin (0..n_bins). Two folds (even / odd problem index): in each bin pick the strategy
// best on one fold, score it on the other; returns the mean accuracy over all problems and writes the
// strategy chosen per bin on the whole set to choice (n_bins, may be NULL).
double ttc_compute_optimal(const double *acc, const size_t *bin, size_t n_problems, size_t n_strategies,
                           size_t n_bins, size_t *choice);
// Bins by quantile of a per-problem difficulty estimate d (higher = easier): bin 0 the hardest.
void ttc_bin_quantiles(const double *d, size_t n, size_t n_bins, size_t *bin);

#endif
