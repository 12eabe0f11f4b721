#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infer/task_arith.h"

typedef struct {
    long v[ARITH_MAX_OPS + 2];
    char op[ARITH_MAX_OPS + 1];
    int n;   // operands
} parsed;

// Grammar: ['-'] digits (op digits)*, op in + - *, at most ARITH_MAX_OPS + 1 operands of at most 9 digits.
static bool parse(const char *s, size_t len, parsed *p) {
    size_t i = 0;
    p->n = 0;
    bool neg = i < len && s[i] == '-';
    if (neg) i++;
    for (;;) {
        if (i >= len || !isdigit((unsigned char)s[i]) || p->n > ARITH_MAX_OPS) return false;
        long v = 0;
        size_t start = i;
        while (i < len && isdigit((unsigned char)s[i])) v = 10 * v + (s[i++] - '0');
        if (i - start > 9 || (i - start > 1 && s[start] == '0')) return false;
        p->v[p->n] = (p->n == 0 && neg) ? -v : v;
        p->n++;
        if (i == len) return true;
        if (s[i] != '+' && s[i] != '-' && s[i] != '*') return false;
        p->op[p->n - 1] = s[i++];
    }
}

static long apply(long a, char op, long b) { return op == '+' ? a + b : op == '-' ? a - b : a * b; }

static bool format(const parsed *p, char *out, size_t cap) {
    size_t n = 0;
    for (int i = 0; i < p->n; i++) {
        int w = i ? snprintf(out + n, cap - n, "%c%ld", p->op[i - 1], p->v[i]) : snprintf(out + n, cap - n, "%ld", p->v[0]);
        if (w < 0 || (size_t)w >= cap - n) return false;
        n += (size_t)w;
    }
    return true;
}

// Index of the operation reduced next: the first ×, else the first operation.
static int next_op(const parsed *p) {
    for (int i = 0; i + 1 < p->n; i++)
        if (p->op[i] == '*') return i;
    return 0;
}

static void reduce_parsed(parsed *p) {
    int k = next_op(p);
    p->v[k] = apply(p->v[k], p->op[k], p->v[k + 1]);
    for (int i = k + 1; i + 1 < p->n; i++) p->v[i] = p->v[i + 1];
    for (int i = k; i + 2 < p->n; i++) p->op[i] = p->op[i + 1];
    p->n--;
}

bool arith_reduce(const char *expr, char *out, size_t cap) {
    parsed p;
    if (!parse(expr, strlen(expr), &p) || p.n < 2) return false;
    reduce_parsed(&p);
    return format(&p, out, cap);
}

bool arith_eval(const char *expr, long *value) {
    parsed p;
    if (!parse(expr, strlen(expr), &p)) return false;
    while (p.n > 1) reduce_parsed(&p);
    *value = p.v[0];
    return true;
}

static long operand(rng_state *r, int digits) {
    long hi = 1;
    for (int d = 0; d < digits; d++) hi *= 10;
    return (long)rng_below(r, (uint64_t)hi);
}

void arith_generate(rng_state *r, int n_ops, int digits, arith_problem *prob) {
    parsed p = {.n = n_ops + 1};
    static const char ops[3] = {'+', '-', '*'};
    for (int i = 0; i < n_ops; i++) p.op[i] = ops[rng_below(r, 3)];
    for (int i = 0; i <= n_ops; i++) {
        bool mul = (i > 0 && p.op[i - 1] == '*') || (i < n_ops && p.op[i] == '*');
        p.v[i] = mul ? 1 + (long)rng_below(r, 9) : operand(r, 1 + (int)rng_below(r, (uint64_t)digits));
    }
    memset(prob, 0, sizeof *prob);
    format(&p, prob->expr, sizeof prob->expr);
    arith_eval(prob->expr, &prob->answer);
    prob->n_ops = n_ops;
    prob->digits = digits;
}

void arith_split(uint64_t seed, size_t n, int min_ops, int max_ops, int max_digits, arith_problem *p) {
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        int ops = min_ops + (int)rng_below(&r, (uint64_t)(max_ops - min_ops + 1));
        arith_generate(&r, ops, max_digits, &p[i]);
    }
}

size_t arith_solution(const arith_problem *prob, char *out, size_t cap) {
    char cur[ARITH_EXPR_MAX], next[ARITH_EXPR_MAX];
    size_t n = 0;
    snprintf(cur, sizeof cur, "%s", prob->expr);
    out[0] = 0;
    while (arith_reduce(cur, next, sizeof next)) {
        int w = snprintf(out + n, cap - n, "%s\n", next);
        if (w < 0 || (size_t)w >= cap - n) break;
        n += (size_t)w;
        memcpy(cur, next, sizeof cur);
    }
    return n;
}

bool arith_final_answer(const char *solution, long *answer) {
    const char *end = strrchr(solution, '\n');
    if (!end) return false;
    const char *start = end;
    while (start > solution && start[-1] != '\n') start--;
    parsed p;
    if (!parse(start, (size_t)(end - start), &p) || p.n != 1) return false;
    *answer = p.v[0];
    return true;
}

bool arith_check_final(const arith_problem *p, const char *solution) {
    long a;
    return arith_final_answer(solution, &a) && a == p->answer;
}

size_t arith_check_steps(const arith_problem *prob, const char *solution, bool *ok, size_t max_steps) {
    char prev[ARITH_EXPR_MAX], want[ARITH_EXPR_MAX];
    snprintf(prev, sizeof prev, "%s", prob->expr);
    size_t n = 0;
    for (const char *s = solution, *nl; (nl = strchr(s, '\n')); s = nl + 1, n++) {
        size_t len = (size_t)(nl - s);
        bool good = arith_reduce(prev, want, sizeof want) && strlen(want) == len && memcmp(want, s, len) == 0;
        if (n < max_steps) ok[n] = good;
        size_t keep = len < sizeof prev - 1 ? len : sizeof prev - 1;
        memcpy(prev, s, keep);
        prev[keep] = 0;
    }
    return n;
}

size_t arith_prompt_tokens(const arith_problem *p, int32_t *out, size_t cap) {
    size_t n = 0, len = strlen(p->expr);
    if (n < cap) out[n++] = ARITH_EOT;
    for (size_t i = 0; i < len && n < cap; i++) out[n++] = (unsigned char)p->expr[i];
    if (n < cap) out[n++] = '\n';
    return n;
}

void arith_detokenize(const int32_t *tok, size_t n, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && tok[i] != ARITH_EOT && k + 1 < cap; i++)
        if (tok[i] > 0 && tok[i] < 256) out[k++] = (char)tok[i];
    out[k] = 0;
}
