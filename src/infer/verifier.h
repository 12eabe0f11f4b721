// verifier: learned outcome (ORM) and process (PRM) verifiers for the arithmetic task. A verifier is a
// sextant transformer trained as a language model on documents "problem, solution prefix, label byte"
// (VERIFIER_GOOD / VERIFIER_BAD, bytes that never occur in task text); its scalar head is
// P(good) / (P(good) + P(bad)) read from the logits after a prefix. ORM documents: the whole solution,
// labelled by the final-answer checker. PRM documents: every prefix of complete lines, labelled "every step so
// far is correct" by the per-step checker. The checker only labels; scores come from the learned model.
// Scoring runs the verifier through infer/decode, so one pass over a solution yields every step's score,
// and the N solutions of one problem share the problem's prefill.
// Not responsible for training (train/train.c) or for the strategies that use the scores (infer/ttc).
#ifndef SEXTANT_INFER_VERIFIER_H
#define SEXTANT_INFER_VERIFIER_H
#include <stdbool.h>
#include "data/shard.h"
#include "infer/decode.h"
#include "infer/task_arith.h"

#define VERIFIER_GOOD 1
#define VERIFIER_BAD 2
#define VERIFIER_MAX_STEPS 32

typedef enum { AGG_LAST = 0, AGG_MIN, AGG_PROD } step_agg;

// Appends the training documents of one solution (text of complete lines) to w: one (ORM) or one per
// complete line (PRM). Returns the number of documents written in *docs (may be NULL).
sx_status verifier_write_docs(shard_writer *w, const arith_problem *p, const char *solution, bool process,
                              size_t *docs);
// Scores n solutions of one problem: overwrites scores[i·VERIFIER_MAX_STEPS + j] with the score after
// complete line j of solution i, and n_steps[i] with the number of scored lines (capped).
sx_status verifier_score(decoder *d, const arith_problem *p, const char *const *solutions, size_t n, double *scores,
                         size_t *n_steps);
// The score from the logits (V) after a prefix.
double verifier_head(const float *logits);
// One number per solution from its step scores (0.5 when there are none).
double verifier_aggregate(const double *s, size_t n, step_agg agg);
sx_status step_agg_parse(const char *name, step_agg *out);

#endif
