// task_arith: the multi-step integer arithmetic task for test-time-compute experiments. A problem is an
// expression over +, −, × of small non-negative integers (× binds tighter; then left to right); a solution
// rewrites it one reduction per line until a single integer remains, e.g. for "12+3*4-5":
//   12+12-5 / 24-5 / 19   (one per line). Only a leading minus can appear (a negative running value).
// Difficulty: the number of operations and the operand digits (operands of × are single digits). Exact
// checkers: the final answer (last line) and every step (the line is exactly the next reduction of the line
// before it, as the solver wrote it). Text is byte-tokenized: vocabulary 257, end-of-text 256.
// Not responsible for models or sampling.
#ifndef SEXTANT_INFER_TASK_ARITH_H
#define SEXTANT_INFER_TASK_ARITH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"

#define ARITH_VOCAB 257
#define ARITH_EOT 256
#define ARITH_MAX_OPS 12
#define ARITH_EXPR_MAX 96

typedef struct {
    char expr[ARITH_EXPR_MAX];
    long answer;
    int n_ops, digits;       // difficulty: operations, max operand digits
} arith_problem;

// A random problem with exactly n_ops operations and operands below 10^digits (1 <= digits <= 3).
void arith_generate(rng_state *r, int n_ops, int digits, arith_problem *p);
// A split: n problems from seed; "train" draws n_ops in 1..train_max_ops, "test" in 1..test_max_ops (the
// test split's harder problems lie beyond training). digits uniform in 1..max_digits. Overwrites p (n).
void arith_split(uint64_t seed, size_t n, int min_ops, int max_ops, int max_digits, arith_problem *p);
// Value of an expression in the task's grammar; false if it does not parse.
bool arith_eval(const char *expr, long *value);
// One reduction step: writes the rewritten expression to out; false if expr is a single number or invalid.
bool arith_reduce(const char *expr, char *out, size_t cap);
// The reference solution: every rewritten line, each followed by '\n'. Returns its length.
size_t arith_solution(const arith_problem *p, char *out, size_t cap);
// Final answer of a solution text: its last complete line when it is an integer. False when none.
bool arith_final_answer(const char *solution, long *answer);
bool arith_check_final(const arith_problem *p, const char *solution);
// Per-step labels of a solution (complete lines only): ok[i] = line i is exactly arith_reduce of line i−1
// (line −1 = the problem). Writes at most max_steps labels; returns the number of complete lines.
size_t arith_check_steps(const arith_problem *p, const char *solution, bool *ok, size_t max_steps);
// Byte tokens: prompt = EOT, expr bytes, '\n'. Returns the count written (at most cap).
size_t arith_prompt_tokens(const arith_problem *p, int32_t *out, size_t cap);
// Text of generated tokens (bytes < 256; stops at the first EOT), NUL-terminated in out (cap bytes).
void arith_detokenize(const int32_t *tok, size_t n, char *out, size_t cap);

#endif
