// ttc_experiment: the test-time-compute experiment on the arithmetic task (`sextant ttc run`). Samples N
// solutions per test problem from a policy, scores them with an outcome (ORM) and a process verifier (PRM),
// and measures every strategy of ttc_strategies at budgets N = 1, 2, 4, ...: coverage (pass@k) and its
// fitted law, the parallel selectors, tree search with the PRM, compute-optimal choice per difficulty bin,
// and further policies (model sizes) at equal FLOPs. Not responsible for flags, printing or plots (the
// CLI's), nor for the strategies' mechanics (infer/ttc.h).
#ifndef SEXTANT_INFER_TTC_EXPERIMENT_H
#define SEXTANT_INFER_TTC_EXPERIMENT_H
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "infer/ttc.h"

#define TTC_CTX 256            // context positions per sampled sequence
#define TTC_MAX_TEXT 1024      // bytes of one decoded solution
#define TTC_MAX_K 16           // budgets 1, 2, 4, ... 2^15
#define TTC_MAX_POLICIES 8
#define TTC_MAX_BINS 16

// ---- the strategy table: adding a strategy is one row here (and, for a new selector, one ttc_select case) ----
typedef enum { TTC_SCORE_NONE, TTC_SCORE_ORM, TTC_SCORE_PRM } ttc_scorer;
// SAMPLES: measured at every budget N over random subsets of the N samples; SEARCH: a tree search (infer/ttc.h)
// per budget N up to --search-max, with the PRM.
typedef enum { TTC_BUDGET_SAMPLES, TTC_BUDGET_SEARCH } ttc_budget_rule;
typedef struct {
    const char *name;          // key in ttc.json and the compute-optimal choices
    const char *column;        // the table's column heading (8 characters at most)
    ttc_selector selector;     // how the answer is chosen (tree search: the weighted vote over its ended beams)
    ttc_scorer scorer;         // which verifier's scores the selector sees
    ttc_budget_rule budget;
    search_kind search;        // SEARCH rows: beam search or DVTS
    size_t lookahead;          // SEARCH rows: k-step greedy rollouts ranking each beam (0: none)
} ttc_strategy;
extern const ttc_strategy ttc_strategies[];
extern const size_t ttc_n_strategies;
#define TTC_MAX_STRATEGIES 16
// The row of the selector over the samples with one verifier's scores (a SAMPLES row): majority vote, every
// policy's voting curve; best-of-N by the PRM, the baseline of the FLOP comparisons; the PRM-weighted vote.
// The row must exist (a programmer error otherwise).
size_t ttc_strategy_row(ttc_selector sel, ttc_scorer scorer);

// N samples of one problem: texts, final answers, correctness, tokens generated.
typedef struct {
    size_t n;
    char **text;
    long *answer;
    bool *has, *correct;
    size_t tokens;
} ttc_sample_set;
// Samples n solutions of p from the decoder (prompt prefilled once) at this temperature; keeps complete
// lines only. *out is overwritten (ttc_sample_set_free it).
sx_status ttc_sample_problem(decoder *d, const arith_problem *p, size_t n, double temperature, rng_state *rng,
                             ttc_sample_set *out);
void ttc_sample_set_free(ttc_sample_set *s);

typedef struct {
    const char *policy, *orm, *prm;   // checkpoints (orm, prm: a value head on the policy's trunk or a model)
    const char *extra;                // "" or comma-separated checkpoints of other policy sizes
    long problems, n, max_ops, digits, trials, search_max, width, bins, seed;
    double temperature;
    const char *agg;                  // the PRM's step aggregation: "last", "min" or "prod" (verifier.h)
} ttc_experiment_config;

// One policy's coverage and majority vote per budget, its inference cost, and the coverage law c = exp(a k^b);
// its samples' vote weighted by the main policy's PRM (wprm; its cost wprm_flops adds the verifier's passes).
typedef struct {
    const char *path;
    size_t params;
    double cov[TTC_MAX_K], maj[TTC_MAX_K], flops[TTC_MAX_K], tokens[TTC_MAX_K], fit_a, fit_b;
    double wprm[TTC_MAX_K], wprm_flops[TTC_MAX_K];
} ttc_policy_result;

// One difficulty bucket (a quantile bin of the main policy's own pass rate over its N samples; 0 the hardest):
// at every budget, best-of-N (PRM)'s accuracy and FLOPs on the bucket's problems, and the cheapest (strategy,
// N) measured that reaches that accuracy there (ttc_cheapest_reaching; opt_strategy is a ttc_strategies row).
typedef struct {
    size_t problems;
    double pass_lo, pass_hi;
    double bon_acc[TTC_MAX_K], bon_flops[TTC_MAX_K], opt_acc[TTC_MAX_K], opt_flops[TTC_MAX_K];
    size_t opt_strategy[TTC_MAX_K], opt_n[TTC_MAX_K];
} ttc_bucket_result;

// Equal FLOPs across the policy ladder: at the budget the main policy's majority vote spends at N = ks[ki],
// each policy's most accurate choice within it (majority vote or PRM-weighted vote at any N; for the main
// policy also every strategy of the table). strategy: a ttc_strategies row (ttc_n_strategies: nothing fits).
typedef struct {
    double acc, flops;
    size_t strategy, n;
} ttc_equal_flops_cell;

typedef struct {
    size_t nk, ks[TTC_MAX_K];          // budgets
    double mean[TTC_MAX_STRATEGIES][TTC_MAX_K];   // main policy: mean accuracy per strategy row and budget (NaN: not run)
    double opt_pred[TTC_MAX_K], opt_oracle[TTC_MAX_K];  // compute-optimal per predicted / oracle difficulty bins
    // Compute-optimal over every (strategy, N) choice within the FLOPs best-of-N (PRM) spends at N, per bin of
    // the policy's own pass rate (two-fold CV); and the least FLOPs at which it matches best-of-N's accuracy
    // at N (NaN: never within the choices measured).
    double opt_at_flops[TTC_MAX_K], match_flops[TTC_MAX_K];
    // Mean per problem of every strategy at every budget, counted the same way for all: policy FLOPs (the
    // prompt once, then each sample or beam's own positions, as the KV cache shares the prefix) plus verifier
    // FLOPs (the same for its trunk) when the strategy reads a verifier; tokens the policy generated.
    double flops[TTC_MAX_STRATEGIES][TTC_MAX_K], tokens[TTC_MAX_STRATEGIES][TTC_MAX_K];
    double verifier_flops;             // per sample and verifier
    size_t nb;                         // difficulty buckets (--bins)
    ttc_bucket_result bucket[TTC_MAX_BINS];
    ttc_equal_flops_cell equal[TTC_MAX_K][TTC_MAX_POLICIES];
    size_t npol;
    ttc_policy_result pol[TTC_MAX_POLICIES];   // the main policy first
    json_t *choices;                   // {"N": [strategy per bin]}
    double orm_auroc, prm_auroc;       // every test sample's final score against its correctness
    const char *orm_kind, *prm_kind;   // value head or separate model (static strings)
    size_t problems;
    char *paths;                       // the copy of --extra that pol[1..].path point into
} ttc_experiment_result;

// Runs the experiment (SX_ERR_ARG for a bad aggregation; errors of the checkpoints); *r is overwritten
// (ttc_experiment_free it, also after an error).
sx_status ttc_experiment_run(const ttc_experiment_config *c, ttc_experiment_result *r);
// Opens a checkpoint for the arithmetic task (a policy or a verifier): SX_ERR_MISMATCH, naming the file, when
// it is not a byte-level model (vocabulary ARITH_VOCAB) as `sextant ttc train` writes.
sx_status ttc_open_model(const char *path, model *m);
// ttc.json's document (new reference).
json_t *ttc_experiment_to_json(const ttc_experiment_config *c, const ttc_experiment_result *r);
void ttc_experiment_free(ttc_experiment_result *r);

#endif
