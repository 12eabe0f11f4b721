// mc_labels: per-step value labels for training a process verifier without human labels (Snell et al. 2024
// §5; Math-Shepherd): the label of step j of a solution is the fraction of R completions sampled by the
// policy from the prefix "problem, lines 0..j" whose final answer is correct, an unbiased estimate of the
// prefix's value under the policy. The last complete line needs no rollouts: its label is the solution's own
// outcome (exact). Rollouts come from a callback so that a toy policy with known values can test the labels.
// Not responsible for training on the labels (infer/value_head.h).
#ifndef SEXTANT_INFER_MC_LABELS_H
#define SEXTANT_INFER_MC_LABELS_H
#include <stddef.h>
#include "core/rng.h"
#include "infer/decode.h"
#include "infer/task_arith.h"

// Samples n completions of problem p after the solution prefix (complete lines) and writes how many end with
// the correct final answer.
typedef sx_status (*mc_rollout_fn)(void *ctx, const arith_problem *p, const char *prefix, size_t n, rng_state *rng,
                                   size_t *correct);

// Labels of the complete lines of solution: overwrites labels[0..*n_steps) (at most max_steps). Rollouts
// performed are added to *rollouts (may be NULL).
sx_status mc_step_labels(mc_rollout_fn roll, void *ctx, const arith_problem *p, const char *solution, size_t r,
                         rng_state *rng, double *labels, size_t max_steps, size_t *n_steps, size_t *rollouts);

// The policy as a rollout callback: ctx is an mc_policy.
typedef struct {
    decoder *d;
    double temperature;
    size_t max_tokens;      // per completion
} mc_policy;
sx_status mc_policy_rollout(void *ctx, const arith_problem *p, const char *prefix, size_t n, rng_state *rng,
                            size_t *correct);

#endif
