// verifier: learned outcome (ORM) and process (PRM) verifiers for the arithmetic task, of two kinds.
// (1) A value head (infer/value_head.h) on a trunk, normally the policy's own frozen trunk: the score after a
//     prefix is the head's sigmoid output on the trunk's features there (infer/trunk_features.h: its
//     final-normed hidden state and its own log-probabilities of the step's tokens).
// (2) A separate label-byte model: a sextant transformer trained as a language model on documents "problem,
//     solution prefix, label byte" (VERIFIER_GOOD / VERIFIER_BAD, bytes that never occur in task text); its
//     score is P(good) / (P(good) + P(bad)) read from the logits after a prefix. ORM documents: the whole
//     solution, labelled by the final-answer checker. PRM documents: every prefix of complete lines, labelled
//     "every step so far is correct" by the per-step checker.
// Scoring runs the trunk through infer/decode, so one pass over a solution yields every step's score, and
// the N solutions of one problem share the problem's prefill.
// Not responsible for training (train/train.c) or for the strategies that use the scores (infer/ttc).
#ifndef SEXTANT_INFER_VERIFIER_H
#define SEXTANT_INFER_VERIFIER_H
#include <stdbool.h>
#include "data/shard.h"
#include "infer/decode.h"
#include "infer/task_arith.h"
#include "infer/trunk_features.h"
#include "infer/value_head.h"

#define VERIFIER_GOOD 1
#define VERIFIER_BAD 2
#define VERIFIER_MAX_STEPS 32

typedef enum { AGG_LAST = 0, AGG_MIN, AGG_PROD } step_agg;

// Appends the training documents of one solution (text of complete lines) to w: one (ORM) or one per
// complete line (PRM). Returns the number of documents written in *docs (may be NULL).
sx_status verifier_write_docs(shard_writer *w, const arith_problem *p, const char *solution, bool process,
                              size_t *docs);
// A verifier: the trunk's decoder (borrowed; its cache holds the verifier's sequences) and the value head with
// the trunk reader that feeds it (both borrowed; trunk->d == d), or head and trunk NULL for a label-byte model.
// With oracle set, the score is oracle(ctx, tokens, n) of the sequence's tokens so far instead (an exact
// checker as the verifier: tests and upper-bound ablations; the decoder still runs, so costs are counted alike).
typedef struct {
    decoder *d;
    const value_head *head;
    trunk_reader *trunk;
    double (*oracle)(void *ctx, const int32_t *tok, size_t n);
    void *oracle_ctx;
} verifier;

// The verifier's sequences: a new one, a fork (rows shared, state copied), a release. −1: out of memory.
int verifier_new_seq(const verifier *v);
int verifier_fork(const verifier *v, int src);
void verifier_release(const verifier *v, int seq);
// Feeds n rows to the verifier's decoder (as decoder_forward) and overwrites score[r] with the verifier's
// score after row r. Head FLOPs are added to the decoder's count.
sx_status verifier_forward(const verifier *v, size_t n, const int *seq, const int32_t *tok, double *score);
// Scores n solutions of one problem: overwrites scores[i·VERIFIER_MAX_STEPS + j] with the score after
// complete line j of solution i, and n_steps[i] with the number of scored lines (capped).
sx_status verifier_score(const verifier *v, const arith_problem *p, const char *const *solutions, size_t n, double *scores,
                         size_t *n_steps);
// A label-byte model's score from its logits (V) after a prefix.
double verifier_head(const float *logits);
// One number per solution from its step scores (0.5 when there are none).
double verifier_aggregate(const double *s, size_t n, step_agg agg);
sx_status step_agg_parse(const char *name, step_agg *out);

#endif
