// tasks: downstream tasks built from data sextant already has, scored by likelihood as the standard harnesses
// score theirs (lm-evaluation-harness). One table of tasks, each a builder (its items, deterministic from a
// seed) and a scorer (accuracy and a task loss from a model, through the KV-cache decoder):
//   cloze   the last word of a held-out passage, LAMBADA-style: correct when greedy decoding reproduces every
//           token of the word given the passage; loss = the word's negative log-likelihood (nats, all its tokens)
//   choice  4-way multiple choice of a held-out passage's true continuation against continuations from other
//           documents, HellaSwag-style: the highest log-likelihood per byte of text wins; loss = the true
//           continuation's NLL per token
//   choice_pmi  the choice items scored by pointwise mutual information with the passage: log-likelihood
//           minus that after the end-of-text token alone (as GPT-3 scored ARC); the same loss
//   arith   the arithmetic task (infer/task_arith) for byte-level models trained on it (`sextant ttc train`):
//           correct when the greedy solution's final answer is exact; loss = the reference solution's NLL per
//           token (teacher-forced)
// docs/TASKS.md has the construction of each. A task suite (the tasks of `--eval-tasks`, built once) measures a
// model into metrics fields task_<name>_acc, task_<name>_loss, task_<name>_n. Scoring reads the model's
// parameters only and draws no random numbers, so a training run that measures tasks trains exactly as one
// that does not. Not responsible for training, for fitting accuracy laws (scale/), or for printing.
#ifndef SEXTANT_INFER_TASKS_H
#define SEXTANT_INFER_TASKS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "data/shard.h"
#include "infer/decode.h"
#include "infer/task_arith.h"
#include "tok/bpe.h"

#define TASK_CLOZE_CTX 64        // tokens of a cloze passage, its last word included
#define TASK_CLOZE_MIN_LETTERS 4 // the last word has at least this many letters
#define TASK_CHOICE_CTX 48       // tokens of a choice item's passage
#define TASK_CHOICE_MIN 12       // tokens of a continuation, extended to the end of its last word ...
#define TASK_CHOICE_MAX 20       // ... when that takes at most this many tokens in all
#define TASK_CHOICES 4
#define TASK_ARITH_MAX_OPS 4     // arith problems: 1..4 operations, operands of at most 2 digits (ttc train's
#define TASK_ARITH_DIGITS 2      // defaults)
#define TASK_MAX 8               // tasks in one suite

// Held-out text: a validation shard and the vocabulary it was written with (word boundaries, byte lengths).
typedef struct {
    const shard_file *shard;
    const bpe_vocab *vocab;
} task_text;

// A task's items. Item i has a context tok[ctx_off[i] .. + ctx_len[i]) and n_cand candidate continuations
// (candidate c at cand_off[i·n_cand + c], cand_len tokens, cand_bytes bytes of text), answer[i] the true one.
// For choice items tok[ctx_off[i] − 1] is the end-of-text token (choice_pmi's null context).
typedef struct {
    size_t n, n_cand;
    int32_t *tok;
    size_t *ctx_off, *ctx_len, *cand_off, *cand_len, *answer;
    double *cand_bytes;
    arith_problem *problems;   // (n) arith only, else NULL
} task_items;

typedef struct {
    size_t n, correct;
    double loss;               // mean over items of the task's loss
} task_score;

typedef struct {
    const char *name, *about;
    const char *loss_unit;     // what task_score.loss measures
    double chance;             // accuracy of a uniform guess
    bool text;                 // built from held-out text (else from the seed alone, for byte-level models)
    size_t ctx;                // decoder positions the scorer needs
    // Overwrites *out with n items drawn with seed (src is ignored when !text).
    sx_status (*build)(const task_text *src, uint64_t seed, size_t n, task_items *out);
    sx_status (*score)(decoder *d, const task_items *it, task_score *out);
} task_def;

extern const task_def task_table[];
extern const size_t task_count;
// The task called name, or NULL.
const task_def *task_find(const char *name);
void task_items_free(task_items *it);

// Log-likelihood of every candidate of item i given its context: ll[c] = Σ log p(token), and greedy[c] =
// whether each of its tokens is the argmax at its position (ties to the lower id). Overwrites ll, greedy
// (n_cand each). The brute-force reference for the scorers (tests) and their common step.
sx_status task_candidates_ll(decoder *d, const task_items *it, size_t i, double *ll, bool *greedy);

// arith's generation: the greedy solution of p from its prompt until end-of-text or the decoder's context
// (TTC_CTX) but one position, as text (TTC_MAX_TEXT bytes, end-of-text excluded), and whether the answer on its
// last complete line is exact (as `ttc` checks its samples).
sx_status task_arith_solve(decoder *d, const arith_problem *p, char *text, bool *correct);

// The Wilson score interval for correct successes in n trials at normal quantile z (1.96: 95%).
void task_wilson(size_t correct, size_t n, double z, double *lo, double *hi);

// The tasks one run measures, built once.
typedef struct {
    size_t n;
    const task_def *def[TASK_MAX];
    task_items items[TASK_MAX];
    size_t vocab;              // the model vocabulary the items are in
} task_suite;

// SX_ERR_ARG (naming the task) unless names is a comma-separated list of known tasks that one suite can
// measure: what task_suite_open checks before it reads any file, for checking a spec when it is read.
sx_status task_names_check(const char *names);
// Builds the comma-separated tasks in names with n_items items each from seed. Text tasks read val_path and
// its vocabulary (vocab_path, or the .sxv beside the shard that the shard's header names). SX_ERR_ARG for an
// unknown task or a text task without a shard; the shard's and vocabulary's own errors otherwise.
sx_status task_suite_open(task_suite *s, const char *names, const char *val_path, const char *vocab_path,
                          size_t n_items, uint64_t seed);
void task_suite_free(task_suite *s);
// SX_ERR_MISMATCH unless the model's vocabulary is the one the items are in.
sx_status task_suite_check(const task_suite *s, const model *m);
// Scores task k on m (out: its result).
sx_status task_suite_score(const task_suite *s, size_t k, model *m, task_score *out);
// Scores every task and adds task_<name>_acc, task_<name>_loss and task_<name>_n to line.
sx_status task_suite_measure(const task_suite *s, model *m, json_t *line);

#endif
