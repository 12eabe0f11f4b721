// value_data: see value_data.h.
#include <stdlib.h>
#include <string.h>
#include "infer/calibration.h"
#include "infer/value_data.h"
#include "infer/verifier.h"

void value_data_init(value_data *v, size_t width) {
    memset(v, 0, sizeof *v);
    v->width = width;
}

void value_data_free(value_data *v) {
    free(v->x), free(v->label), free(v->outcome), free(v->last), free(v->split);
    memset(v, 0, sizeof *v);
}

static sx_status grow(value_data *v, size_t more) {
    if (v->n + more <= v->cap) return SX_OK;
    size_t cap = v->n + more > 2 * v->cap ? v->n + more : 2 * v->cap;
    float *x = sx_realloc(v->x, cap * v->width * sizeof *x, "value data x");
    if (x) v->x = x;
    float *l = sx_realloc(v->label, cap * sizeof *l, "value data labels");
    if (l) v->label = l;
    float *o = sx_realloc(v->outcome, cap * sizeof *o, "value data outcomes");
    if (o) v->outcome = o;
    bool *a = sx_realloc(v->last, cap * sizeof *a, "value data last");
    if (a) v->last = a;
    unsigned char *h = sx_realloc(v->split, cap * sizeof *h, "value data splits");
    if (h) v->split = h;
    if (!x || !l || !o || !a || !h) return sx_fail(SX_ERR_NOMEM, "out of memory for value-head examples");
    v->cap = cap;
    return SX_OK;
}

sx_status value_data_add(value_data *v, trunk_reader *trunk, const mc_policy *mp, const arith_problem *p, const char *solution,
                         value_split split, size_t r, rng_state *rng) {
    double labels[VERIFIER_MAX_STEPS];
    size_t steps = 0, C = v->width, len = strlen(solution);
    sx_status st = mc_step_labels(mc_policy_rollout, (void *)mp, p, solution, r, rng, labels, VERIFIER_MAX_STEPS, &steps,
                                  &v->rollouts);
    if (st || steps == 0) return st;
    int32_t *tok = sx_alloc((len + ARITH_EXPR_MAX + 2) * sizeof *tok, "value data tokens");
    int *seq = sx_alloc((len + ARITH_EXPR_MAX + 2) * sizeof *seq, "value data seqs");
    float *f = sx_alloc((len + ARITH_EXPR_MAX + 2) * C * sizeof *f, "value data features");
    int s = trunk_new_seq(trunk);
    st = tok && seq && f && s >= 0 ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = grow(v, steps);
    size_t n = arith_prompt_tokens(p, tok, ARITH_EXPR_MAX + 2), np = n;
    for (size_t i = 0; i < len && n < trunk->d->max_ctx; i++) tok[n++] = (unsigned char)solution[i];
    for (size_t i = 0; i < n; i++) seq[i] = s;
    if (!st) st = trunk_forward(trunk, n, seq, tok, f);
    bool outcome = arith_check_final(p, solution);
    for (size_t i = np, k = 0; i < n && k < steps && !st; i++) {
        if (tok[i] != '\n') continue;
        size_t row = v->n++;
        memcpy(v->x + row * C, f + i * C, C * sizeof *f);
        v->label[row] = (float)labels[k];
        v->outcome[row] = outcome ? 1.0f : 0.0f;
        v->split[row] = (unsigned char)split;
        v->last[row] = ++k == steps;
    }
    if (s >= 0) trunk_release(trunk, s);
    free(tok), free(seq), free(f);
    return st;
}

size_t value_data_select(const value_data *v, value_split split, bool last_only, bool outcome_target, float *x, float *y) {
    size_t m = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (v->split[i] != split || (last_only && !v->last[i])) continue;
        if (x) memcpy(x + m * v->width, v->x + i * v->width, v->width * sizeof *x);
        if (y) y[m] = outcome_target ? v->outcome[i] : v->label[i];
        m++;
    }
    return m;
}

// Scores of the held-out rows (last rows only or all) and their targets.
static size_t held_scores(const value_data *v, const value_head *h, bool last_only, bool outcome_target, double *score,
                          double *target, bool *positive) {
    double *z = sx_alloc(h->hidden * sizeof *z, "value data z");
    size_t m = 0;
    for (size_t i = 0; i < v->n && z; i++) {
        if (v->split[i] != VD_TEST || (last_only && !v->last[i])) continue;
        score[m] = value_head_prob(h, v->x + i * v->width, z);
        target[m] = outcome_target ? v->outcome[i] : v->label[i];
        if (positive) positive[m] = v->outcome[i] > 0.5f;
        m++;
    }
    free(z);
    return m;
}

sx_status value_data_fit(const value_data *v, bool outcome_head, size_t hidden, size_t trunk_params,
                         const value_train_config *tc, value_head *h, value_fit_report *rep) {
    memset(rep, 0, sizeof *rep);
    memset(h, 0, sizeof *h);
    size_t n = value_data_select(v, VD_TRAIN, outcome_head, outcome_head, NULL, NULL), C = v->width;
    size_t nv = value_data_select(v, VD_VALID, outcome_head, outcome_head, NULL, NULL);
    float *x = sx_alloc((n + nv + 1) * C * sizeof *x, "value fit x"), *y = sx_alloc((n + nv + 1) * sizeof *y, "value fit y");
    double *score = sx_alloc((v->n + 1) * sizeof *score, "value fit scores"), *target = sx_alloc((v->n + 1) * sizeof *target, "value fit targets");
    bool *pos = sx_alloc((v->n + 1) * sizeof *pos, "value fit positives");
    sx_status st = x && y && score && target && pos ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = value_head_init(h, C, hidden, trunk_params, tc->seed);
    if (!st) {
        value_data_select(v, VD_TRAIN, outcome_head, outcome_head, x, y);
        value_data_select(v, VD_VALID, outcome_head, outcome_head, x + n * C, y + n);
        rep->train_rows = n;
        value_head_standardize(h, x, n);
        value_split_set valid = {.x = x + n * C, .y = y + n, .n = nv};
        st = value_head_train(h, x, y, n, tc, nv ? &valid : NULL, &rep->train_loss, &rep->best_epoch);
    }
    if (!st) {
        size_t m = held_scores(v, h, true, true, score, target, pos);
        rep->held_samples = m;
        rep->auroc = calib_auroc(score, pos, m);
        rep->ece = calib_ece(score, target, m, 10);
        m = held_scores(v, h, false, false, score, target, NULL);
        rep->step_ece = calib_ece(score, target, m, 10);
    }
    free(x), free(y), free(score), free(target), free(pos);
    return st;
}
