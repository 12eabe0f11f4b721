#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "infer/verifier.h"

sx_status verifier_write_docs(shard_writer *w, const arith_problem *p, const char *solution, bool process,
                              size_t *docs) {
    bool ok[VERIFIER_MAX_STEPS];
    size_t steps = arith_check_steps(p, solution, ok, VERIFIER_MAX_STEPS), n_docs = 0;
    if (steps > VERIFIER_MAX_STEPS) steps = VERIFIER_MAX_STEPS;
    int32_t prompt[ARITH_EXPR_MAX + 2];
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2);
    size_t len = strlen(solution);
    uint32_t *buf = sx_alloc((np + len + 1) * sizeof *buf, "verifier buf");
    if (!buf) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < np; i++) buf[i] = (uint32_t)prompt[i];
    sx_status st = SX_OK;
    bool all_ok = true;
    size_t line = 0, n = np;
    for (size_t i = 0; i < len && !st && line < steps; i++) {
        buf[n++] = (unsigned char)solution[i];
        if (solution[i] != '\n') continue;
        all_ok = all_ok && ok[line++];
        bool last = line == steps;
        if (!process && !last) continue;
        bool good = process ? all_ok : arith_check_final(p, solution);
        buf[n] = good ? VERIFIER_GOOD : VERIFIER_BAD;
        st = shard_writer_append(w, buf, n + 1);
        n_docs++;
    }
    free(buf);
    if (docs) *docs = n_docs;
    return st;
}

double verifier_head(const float *logits) {
    double g = logits[VERIFIER_GOOD], b = logits[VERIFIER_BAD], m = fmax(g, b);
    return exp(g - m) / (exp(g - m) + exp(b - m));
}

// The oracle's score after each row: the sequence's tokens up to the row's position (rows of one sequence come
// in position order, so a row sits before as many positions as later rows of its sequence).
static sx_status oracle_scores(const verifier *v, size_t n, const int *seq, double *score) {
    int32_t *hist = sx_alloc(v->d->max_ctx * sizeof *hist, "verifier oracle tokens");
    if (!hist) return sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t r = 0; r < n; r++) {
        size_t later = 0, len = kvcache_len(&v->d->cache, seq[r]);
        for (size_t q = r + 1; q < n; q++) later += seq[q] == seq[r];
        for (size_t i = 0; i < len - later; i++) hist[i] = kvcache_token(&v->d->cache, seq[r], i);
        score[r] = v->oracle(v->oracle_ctx, hist, len - later);
    }
    free(hist);
    return SX_OK;
}

int verifier_new_seq(const verifier *v) { return v->trunk ? trunk_new_seq(v->trunk) : kvcache_new_seq(&v->d->cache); }
int verifier_fork(const verifier *v, int src) { return v->trunk ? trunk_fork(v->trunk, src) : kvcache_fork(&v->d->cache, src); }
void verifier_release(const verifier *v, int seq) {
    if (v->trunk) trunk_release(v->trunk, seq);
    else kvcache_release(&v->d->cache, seq);
}

sx_status verifier_forward(const verifier *v, size_t n, const int *seq, const int32_t *tok, double *score) {
    decoder *d = v->d;
    size_t V = d->m->cfg.vocab, H = v->head ? v->head->hidden : 0, C = v->head ? trunk_feature_dim(v->trunk) : 0;
    SX_CHECK(!v->head || (v->trunk && v->trunk->d == d), "a value-head verifier reads its decoder through a trunk reader");
    if (v->head && (v->head->in != C || v->head->trunk_params != model_param_count(d->m)))
        return sx_fail(SX_ERR_MISMATCH, "value head was trained on a trunk of %zu features and %zu parameters, not this "
                       "one (%zu features, %zu parameters): pass the policy it was trained with", v->head->in,
                       v->head->trunk_params, C, model_param_count(d->m));
    float *out = sx_alloc((n ? n : 1) * (v->head ? C : V) * sizeof *out, "verifier rows");
    double *z = sx_alloc((H ? H : 1) * sizeof *z, "verifier head scratch");
    sx_status st = out && z ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = v->head ? trunk_forward(v->trunk, n, seq, tok, out) : decoder_forward(d, n, seq, tok, out);
    for (size_t r = 0; r < n && !st; r++)
        score[r] = v->head ? value_head_prob(v->head, out + r * C, z) : verifier_head(out + r * V);
    if (!st && v->oracle) st = oracle_scores(v, n, seq, score);
    if (!st && v->head) d->flops += (double)n * value_head_flops(v->head);
    free(out);
    free(z);
    return st;
}

sx_status verifier_score(const verifier *v, const arith_problem *p, const char *const *solutions, size_t n, double *scores,
                         size_t *n_steps) {
    decoder *d = v->d;
    size_t rows = 0;
    int32_t prompt[ARITH_EXPR_MAX + 2];
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2);
    for (size_t i = 0; i < n; i++) rows += strlen(solutions[i]);
    int *seq = sx_alloc((rows + np + 1) * sizeof *seq, "verifier seq"),
           *kids = sx_alloc((n + 1) * sizeof *kids, "verifier kids");
    for (size_t i = 0; kids && i < n; i++) kids[i] = -1;
    int32_t *tok = sx_alloc((rows + 1) * sizeof *tok, "verifier tok");
    double *sc = sx_alloc((rows + np + 1) * sizeof *sc, "verifier scores");
    int root = verifier_new_seq(v);
    sx_status st = seq && kids && tok && sc && root >= 0 ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < np && !st; i++) seq[i] = root;
    if (!st) st = verifier_forward(v, np, seq, prompt, sc);   // the prompt once; its scores are not used
    size_t r = 0, cap = d->max_ctx > np ? d->max_ctx - np : 0;
    for (size_t i = 0; i < n && !st; i++) {
        kids[i] = verifier_fork(v, root);
        if (kids[i] < 0) { st = sx_fail(SX_ERR_NOMEM, "out of memory"); break; }
        size_t len = strlen(solutions[i]);
        for (size_t j = 0; j < len && j < cap; j++, r++) seq[r] = kids[i], tok[r] = (unsigned char)solutions[i][j];
    }
    if (!st) st = verifier_forward(v, r, seq, tok, sc);
    r = 0;
    for (size_t i = 0; i < n && !st; i++) {
        size_t len = strlen(solutions[i]), k = 0;
        for (size_t j = 0; j < len && j < cap; j++, r++)
            if (solutions[i][j] == '\n' && k < VERIFIER_MAX_STEPS) scores[i * VERIFIER_MAX_STEPS + k++] = sc[r];
        n_steps[i] = k;
    }
    for (size_t i = 0; i < n && kids; i++)
        if (kids[i] >= 0) verifier_release(v, kids[i]);
    if (root >= 0) verifier_release(v, root);
    free(seq);
    free(kids);
    free(tok);
    free(sc);
    return st;
}

double verifier_aggregate(const double *s, size_t n, step_agg agg) {
    if (n == 0) return 0.5;
    if (agg == AGG_LAST) return s[n - 1];
    double v = agg == AGG_MIN ? INFINITY : 1.0;
    for (size_t i = 0; i < n; i++) v = agg == AGG_MIN ? fmin(v, s[i]) : v * s[i];
    return v;
}

sx_status step_agg_parse(const char *name, step_agg *out) {
    static const char *names[] = {"last", "min", "prod"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, names[i])) { *out = (step_agg)i; return SX_OK; }
    return sx_fail(SX_ERR_ARG, "unknown step aggregation '%s' (last, min, prod)", name);
}
