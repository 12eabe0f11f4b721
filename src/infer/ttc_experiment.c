// ttc_experiment: see ttc_experiment.h.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "infer/calibration.h"
#include "infer/generate.h"
#include "infer/ttc_experiment.h"
#include "model/flops.h"
#include "train/checkpoint.h"

const ttc_strategy ttc_strategies[] = {
    {"majority", "major", SEL_MAJORITY, TTC_SCORE_NONE, TTC_BUDGET_SAMPLES, SEARCH_BEAM, 0},
    {"best_of_n_orm", "bon_orm", SEL_BEST_OF_N, TTC_SCORE_ORM, TTC_BUDGET_SAMPLES, SEARCH_BEAM, 0},
    {"weighted_orm", "w_orm", SEL_WEIGHTED, TTC_SCORE_ORM, TTC_BUDGET_SAMPLES, SEARCH_BEAM, 0},
    {"best_of_n_prm", "bon_prm", SEL_BEST_OF_N, TTC_SCORE_PRM, TTC_BUDGET_SAMPLES, SEARCH_BEAM, 0},
    {"weighted_prm", "w_prm", SEL_WEIGHTED, TTC_SCORE_PRM, TTC_BUDGET_SAMPLES, SEARCH_BEAM, 0},
    {"beam_prm", "beam", SEL_WEIGHTED, TTC_SCORE_PRM, TTC_BUDGET_SEARCH, SEARCH_BEAM, 0},
    {"lookahead2_prm", "look2", SEL_WEIGHTED, TTC_SCORE_PRM, TTC_BUDGET_SEARCH, SEARCH_BEAM, 2},
    {"dvts_prm", "dvts", SEL_WEIGHTED, TTC_SCORE_PRM, TTC_BUDGET_SEARCH, SEARCH_DVTS, 0},
};
const size_t ttc_n_strategies = sizeof ttc_strategies / sizeof *ttc_strategies;
_Static_assert(sizeof ttc_strategies / sizeof *ttc_strategies <= TTC_MAX_STRATEGIES, "raise TTC_MAX_STRATEGIES");

void ttc_sample_set_free(ttc_sample_set *s) {
    for (size_t i = 0; i < s->n && s->text; i++) free(s->text[i]);
    free(s->text), free(s->answer), free(s->has), free(s->correct);
    memset(s, 0, sizeof *s);
}

sx_status ttc_sample_problem(decoder *d, const arith_problem *p, size_t n, double temperature, rng_state *rng,
                             ttc_sample_set *out) {
    memset(out, 0, sizeof *out);
    int32_t prompt[ARITH_EXPR_MAX + 2], stop = ARITH_EOT;
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2);
    gen_config g = {.sampler = {.temperature = temperature, .top_p = 1}, .max_new = TTC_CTX - np - 1, .stop = &stop, .n_stop = 1};
    gen_stream *s = NULL;
    sx_status st = generate_samples(d, prompt, np, n, &g, rng, &s);
    out->n = n;
    out->text = sx_calloc_n(n, sizeof *out->text, "ttc sample texts");
    out->answer = sx_calloc_n(n, sizeof *out->answer, "ttc sample answers");
    out->has = sx_calloc_n(n, sizeof *out->has, "ttc sample flags");
    out->correct = sx_calloc_n(n, sizeof *out->correct, "ttc sample verdicts");
    if (!st && (!out->text || !out->answer || !out->has || !out->correct)) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        out->text[i] = sx_alloc(TTC_MAX_TEXT, "ttc sample text");
        if (!out->text[i]) { st = sx_fail(SX_ERR_NOMEM, "out of memory"); break; }
        arith_detokenize(s[i].tok, s[i].len, out->text[i], TTC_MAX_TEXT);
        char *nl = strrchr(out->text[i], '\n');   // keep complete lines only
        if (nl) nl[1] = 0; else out->text[i][0] = 0;
        out->has[i] = arith_final_answer(out->text[i], &out->answer[i]);
        out->correct[i] = out->has[i] && out->answer[i] == p->answer;
        out->tokens += s[i].len;
    }
    gen_streams_free(d, s, n);
    if (st) ttc_sample_set_free(out);
    return st;
}

size_t ttc_strategy_row(ttc_selector sel, ttc_scorer scorer) {
    size_t s = 0;
    while (s < ttc_n_strategies && !(ttc_strategies[s].selector == sel && ttc_strategies[s].scorer == scorer &&
                                     ttc_strategies[s].budget == TTC_BUDGET_SAMPLES))
        s++;
    SX_CHECK(s < ttc_n_strategies, "keep a samples row for every selector and scorer the experiment reads in ttc_strategies");
    return s;
}

sx_status ttc_open_model(const char *path, model *m) {
    sx_status st = checkpoint_open_model(path, m);
    if (!st && m->cfg.vocab != ARITH_VOCAB) {
        st = sx_fail(SX_ERR_MISMATCH, "%s: a model of %zu tokens; test-time compute runs on the arithmetic task's "
                     "byte-level models (vocabulary %d) from `sextant ttc train`", path, m->cfg.vocab, ARITH_VOCAB);
        model_free(m);
    }
    return st;
}

// A verifier from path: a value head (on the main policy's trunk, read through a decoder of its own) or a
// separate label-byte model checkpoint.
static sx_status open_verifier(const char *path, model *policy, model *own, value_head *h, trunk_reader *t, decoder *d,
                               verifier *v) {
    sx_status st;
    if (value_head_is_file(path)) {
        st = value_head_load(path, h);
        if (!st) st = decoder_init(d, policy, TTC_CTX);
        trunk_reader_init(t, d);
        *v = (verifier){.d = d, .head = h, .trunk = t};
    } else {
        st = ttc_open_model(path, own);
        if (!st) st = decoder_init(d, own, TTC_CTX);
        *v = (verifier){.d = d, .head = NULL};
    }
    return st;
}

// Everything the experiment holds open: the policies' and verifiers' models and decoders, and the buffers.
typedef struct {
    model m[TTC_MAX_POLICIES], orm_m, prm_m;
    decoder d[TTC_MAX_POLICIES], orm, prm;
    value_head orm_h, prm_h;
    trunk_reader orm_t, prm_t;
    verifier orm_v, prm_v;
    double *orm_all, *prm_all;   // (problems · N) every test sample's scores, for the verifiers' AUROC
    bool *correct_all;
    arith_problem *p;
    double *acc, *fl, *pass1, *pred, *orm_s, *prm_s, *steps, *acc_k;   // acc, fl: [q][k][strategy]
    size_t *nsteps, *bin_pred, *bin_oracle;
} work;

static void work_free(work *w, size_t npol) {
    for (size_t i = 0; i < npol; i++) decoder_free(&w->d[i]), model_free(&w->m[i]);
    decoder_free(&w->orm), decoder_free(&w->prm), model_free(&w->orm_m), model_free(&w->prm_m);
    value_head_free(&w->orm_h), value_head_free(&w->prm_h);
    trunk_reader_free(&w->orm_t), trunk_reader_free(&w->prm_t);
    free(w->orm_all), free(w->prm_all), free(w->correct_all);
    free(w->p), free(w->acc), free(w->fl), free(w->pass1), free(w->pred), free(w->orm_s), free(w->prm_s);
    free(w->steps), free(w->nsteps), free(w->bin_pred), free(w->bin_oracle), free(w->acc_k);
}

// FLOPs of a prompt of np positions fed once (model_flops_decode_token summed over its positions).
static double prompt_flops(const model_config *c, size_t np) {
    double f = 0;
    for (size_t pos = 1; pos <= np; pos++) f += model_flops_decode_token(c, pos);
    return f;
}

// The cost of k of N samples drawn after one shared prompt: the prompt once, then k samples' own share.
static double k_of_n(double total, double prompt, size_t k, size_t n) { return prompt + (total - prompt) * (double)k / (double)n; }

// One problem's samples of the main policy (pol_flops: what drawing them cost) scored by both verifiers,
// every strategy row at every budget into acc[q][k][strategy], their cost into r->flops and r->tokens.
static sx_status strategies_on_problem(const ttc_experiment_config *c, step_agg agg, ttc_experiment_result *r, work *w,
                                       size_t q, const ttc_sample_set *s, double pol_flops, rng_state *rng) {
    size_t N = (size_t)c->n, nk = r->nk, S = ttc_n_strategies, nq = (size_t)c->problems;
    ttc_pool pool = {.n = s->n, .answer = s->answer, .has_answer = s->has, .correct = s->correct};
    double of0 = w->orm.flops;
    sx_status st = verifier_score(&w->orm_v, &w->p[q], (const char *const *)s->text, s->n, w->steps, w->nsteps);
    double of = w->orm.flops - of0, pf0 = w->prm.flops;
    for (size_t j = 0; j < s->n && !st; j++) w->orm_s[j] = w->nsteps[j] ? w->steps[j * VERIFIER_MAX_STEPS + w->nsteps[j] - 1] : 0;
    if (!st) st = verifier_score(&w->prm_v, &w->p[q], (const char *const *)s->text, s->n, w->steps, w->nsteps);
    double pf = w->prm.flops - pf0;
    for (size_t j = 0; j < s->n && !st; j++) w->prm_s[j] = verifier_aggregate(w->steps + j * VERIFIER_MAX_STEPS, w->nsteps[j], agg);
    r->verifier_flops += (of + pf) / (double)N / 2.0;   // per sample and verifier
    size_t correct = 0;
    for (size_t j = 0; j < s->n; j++) {
        correct += s->correct[j];
        w->orm_all[q * N + j] = w->orm_s[j], w->prm_all[q * N + j] = w->prm_s[j], w->correct_all[q * N + j] = s->correct[j];
    }
    w->pass1[q] = (double)correct / (double)N;
    double m = 0;
    for (size_t j = 0; j < s->n; j++) m += w->orm_s[j];
    w->pred[q] = m / (double)N;
    const double *scores[] = {[TTC_SCORE_NONE] = NULL, [TTC_SCORE_ORM] = w->orm_s, [TTC_SCORE_PRM] = w->prm_s};
    size_t np = strlen(w->p[q].expr) + 2;   // arith_prompt_tokens: EOT, the expression, '\n'
    double pol_prompt = prompt_flops(&w->d[0].m->cfg, np);
    double ver_cost[] = {[TTC_SCORE_NONE] = 0, [TTC_SCORE_ORM] = of, [TTC_SCORE_PRM] = pf};
    double ver_prompt[] = {[TTC_SCORE_NONE] = 0, [TTC_SCORE_ORM] = prompt_flops(&w->orm.m->cfg, np),
                           [TTC_SCORE_PRM] = prompt_flops(&w->prm.m->cfg, np)};
    for (size_t ki = 0; ki < nk && !st; ki++) {
        double *a = w->acc + (q * nk + ki) * S;
        size_t k = r->ks[ki];
        for (size_t t = 0; t < S; t++) {
            a[t] = NAN;
            if (ttc_strategies[t].budget != TTC_BUDGET_SAMPLES) continue;
            ttc_scorer v = ttc_strategies[t].scorer;
            pool.score = scores[v];
            a[t] = ttc_selector_accuracy(&pool, k, ttc_strategies[t].selector, (size_t)c->trials, rng);
            w->fl[(q * nk + ki) * S + t] = k_of_n(pol_flops, pol_prompt, k, N) + (v ? k_of_n(ver_cost[v], ver_prompt[v], k, N) : 0);
            r->flops[t][ki] += w->fl[(q * nk + ki) * S + t] / (double)nq;
            r->tokens[t][ki] += (double)s->tokens * (double)k / (double)N / (double)nq;
        }
    }
    for (size_t t = 0; t < S && !st; t++) {
        if (ttc_strategies[t].budget != TTC_BUDGET_SEARCH) continue;
        for (size_t ki = 0; ki < nk && r->ks[ki] <= (size_t)c->search_max && !st; ki++) {
            search_config sc = {.kind = ttc_strategies[t].search, .n_beams = r->ks[ki], .width = (size_t)c->width,
                                .max_rounds = 2 * ARITH_MAX_OPS, .max_step_tokens = 48,
                                .lookahead = ttc_strategies[t].lookahead, .temperature = c->temperature, .agg = agg};
            search_result sr;
            st = ttc_search(&w->d[0], &w->prm_v, &w->p[q], &sc, rng, &sr);
            w->acc[(q * nk + ki) * S + t] = sr.correct;
            w->fl[(q * nk + ki) * S + t] = sr.flops;
            r->tokens[t][ki] += (double)sr.tokens / (double)nq;
            r->flops[t][ki] += sr.flops / (double)nq;
        }
    }
    return st;
}

// Another policy's samples of problem q (pol_flops: what drawing them cost, pol_prompt its prompt's share) voted
// with weights from the main policy's PRM: accuracy and cost at every budget into e->wprm, e->wprm_flops.
static sx_status prm_vote_on_problem(const ttc_experiment_config *c, step_agg agg, ttc_experiment_result *r, work *w,
                                     size_t q, const ttc_sample_set *s, double pol_flops, double pol_prompt,
                                     ttc_policy_result *e, rng_state *rng) {
    size_t N = (size_t)c->n, nq = (size_t)c->problems;
    double pf0 = w->prm.flops;
    sx_status st = verifier_score(&w->prm_v, &w->p[q], (const char *const *)s->text, s->n, w->steps, w->nsteps);
    double pf = w->prm.flops - pf0, pf_prompt = prompt_flops(&w->prm.m->cfg, strlen(w->p[q].expr) + 2);
    for (size_t j = 0; j < s->n && !st; j++) w->prm_s[j] = verifier_aggregate(w->steps + j * VERIFIER_MAX_STEPS, w->nsteps[j], agg);
    ttc_pool pool = {.n = s->n, .answer = s->answer, .has_answer = s->has, .correct = s->correct, .score = w->prm_s};
    for (size_t ki = 0; ki < r->nk && !st; ki++) {
        size_t k = r->ks[ki];
        e->wprm[ki] += ttc_selector_accuracy(&pool, k, SEL_WEIGHTED, (size_t)c->trials, rng) / (double)nq;
        e->wprm_flops[ki] += (k_of_n(pol_flops, pol_prompt, k, N) + k_of_n(pf, pf_prompt, k, N)) / (double)nq;
    }
    return st;
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// Compute-optimal choice of strategy and N at FLOP budgets (after aggregate's means and costs).
static void compute_optimal_flops(const ttc_experiment_config *c, ttc_experiment_result *r, const work *w) {
    size_t nq = (size_t)c->problems, nk = r->nk, S = ttc_n_strategies, nc = 0, bon = ttc_strategy_row(SEL_BEST_OF_N, TTC_SCORE_PRM);
    for (size_t ki = 0; ki < nk; ki++) r->opt_at_flops[ki] = r->match_flops[ki] = NAN;
    double *acc = sx_alloc((nq * S * nk + 1) * sizeof *acc, "ttc choices"), *cost = sx_alloc((S * nk + 1) * sizeof *cost, "ttc costs"),
           *sorted = sx_alloc((S * nk + 1) * sizeof *sorted, "ttc sorted costs");
    bool *allowed = sx_alloc((S * nk + 1) * sizeof *allowed, "ttc allowed");
    if (!acc || !cost || !sorted || !allowed) { free(acc), free(cost), free(sorted), free(allowed); return; }
    for (size_t s = 0; s < S; s++)   // the choices: every (strategy, N) measured
        for (size_t ki = 0; ki < nk; ki++)
            if (isfinite(r->mean[s][ki])) cost[nc] = sorted[nc] = r->flops[s][ki], nc++;
    for (size_t q = 0; q < nq; q++) {
        size_t j = 0;
        for (size_t s = 0; s < S; s++)
            for (size_t ki = 0; ki < nk; ki++)
                if (isfinite(r->mean[s][ki])) acc[q * nc + j++] = w->acc[(q * nk + ki) * S + s];
    }
    qsort(sorted, nc, sizeof *sorted, by_double);
    for (size_t ki = 0; ki < nk; ki++) {
        r->opt_at_flops[ki] = ttc_compute_optimal_at(acc, cost, r->flops[bon][ki], w->bin_oracle, nq, nc, (size_t)c->bins, allowed);
        for (size_t i = 0; i < nc && isnan(r->match_flops[ki]); i++)
            if (ttc_compute_optimal_at(acc, cost, sorted[i], w->bin_oracle, nq, nc, (size_t)c->bins, allowed) >= r->mean[bon][ki] - 1e-12)
                r->match_flops[ki] = sorted[i];
    }
    free(acc), free(cost), free(sorted), free(allowed);
}

// Per difficulty bucket (quantile bins of the policy's own pass rate), at every budget: best-of-N (PRM) and
// the cheapest (strategy, N) measured that reaches its accuracy on the bucket (after aggregate).
static sx_status buckets(const ttc_experiment_config *c, ttc_experiment_result *r, const work *w) {
    size_t nq = (size_t)c->problems, nk = r->nk, S = ttc_n_strategies, bon = ttc_strategy_row(SEL_BEST_OF_N, TTC_SCORE_PRM);
    size_t nc = 0, which[TTC_MAX_STRATEGIES * TTC_MAX_K];   // the choices: every (strategy, N) measured, as s * nk + ki
    for (size_t s = 0; s < S; s++)
        for (size_t ki = 0; ki < nk; ki++)
            if (isfinite(r->mean[s][ki])) which[nc++] = s * nk + ki;
    double *acc = sx_alloc((nq * nc + 1) * sizeof *acc, "ttc bucket accuracies"), *cost = sx_alloc((nq * nc + 1) * sizeof *cost, "ttc bucket FLOPs");
    if (!acc || !cost) { free(acc), free(cost); return sx_fail(SX_ERR_NOMEM, "ttc run: out of memory"); }
    for (size_t q = 0; q < nq; q++)
        for (size_t j = 0; j < nc; j++) {
            size_t at = (q * nk + which[j] % nk) * S + which[j] / nk;
            acc[q * nc + j] = w->acc[at], cost[q * nc + j] = w->fl[at];
        }
    r->nb = (size_t)c->bins;
    for (size_t b = 0; b < r->nb; b++) {
        ttc_bucket_result *u = &r->bucket[b];
        u->pass_lo = INFINITY, u->pass_hi = -INFINITY;
        for (size_t q = 0; q < nq; q++)
            if (w->bin_oracle[q] == b) u->problems++, u->pass_lo = fmin(u->pass_lo, w->pass1[q]), u->pass_hi = fmax(u->pass_hi, w->pass1[q]);
        for (size_t ki = 0; ki < nk; ki++) {
            u->bon_acc[ki] = u->bon_flops[ki] = 0;
            for (size_t q = 0; q < nq; q++)
                if (w->bin_oracle[q] == b)
                    u->bon_acc[ki] += w->acc[(q * nk + ki) * S + bon] / (double)u->problems,
                    u->bon_flops[ki] += w->fl[(q * nk + ki) * S + bon] / (double)u->problems;
            size_t pick = ttc_cheapest_reaching(acc, cost, w->bin_oracle, nq, nc, b, u->bon_acc[ki], &u->opt_acc[ki], &u->opt_flops[ki]);
            u->opt_strategy[ki] = pick < nc ? which[pick] / nk : S;
            u->opt_n[ki] = pick < nc ? r->ks[which[pick] % nk] : 0;
        }
    }
    free(acc), free(cost);
    return SX_OK;
}

// Equal FLOPs across the ladder: at the main policy's majority-vote cost at each N, each policy's most accurate
// choice within it (after aggregate and every policy's loop).
static void equal_flops(ttc_experiment_result *r) {
    size_t nk = r->nk, S = ttc_n_strategies, maj = ttc_strategy_row(SEL_MAJORITY, TTC_SCORE_NONE), wprm = ttc_strategy_row(SEL_WEIGHTED, TTC_SCORE_PRM);
    for (size_t i = 0; i < r->npol; i++) {
        const ttc_policy_result *p = &r->pol[i];
        double acc[TTC_MAX_STRATEGIES * TTC_MAX_K], cost[TTC_MAX_STRATEGIES * TTC_MAX_K];
        size_t row[TTC_MAX_STRATEGIES * TTC_MAX_K], nc = 0;   // the choices as s * nk + ki
        for (size_t s = 0; s < S; s++)
            for (size_t ki = 0; ki < nk; ki++) {
                if (i == 0) acc[nc] = r->mean[s][ki], cost[nc] = r->flops[s][ki];   // every strategy of the table
                else if (s == maj) acc[nc] = p->maj[ki], cost[nc] = p->flops[ki];
                else if (s == wprm) acc[nc] = p->wprm[ki], cost[nc] = p->wprm_flops[ki];
                else continue;
                row[nc++] = s * nk + ki;
            }
        for (size_t ki = 0; ki < nk; ki++) {
            size_t pick = ttc_best_within(acc, cost, nc, r->pol[0].flops[ki]);
            r->equal[ki][i] = pick < nc ? (ttc_equal_flops_cell){acc[pick], cost[pick], row[pick] / nk, r->ks[row[pick] % nk]}
                                        : (ttc_equal_flops_cell){NAN, NAN, S, 0};
        }
    }
}

// Mean accuracy per strategy and budget over the problems, and compute-optimal selection per budget.
static void aggregate(const ttc_experiment_config *c, ttc_experiment_result *r, work *w) {
    size_t nq = (size_t)c->problems, nk = r->nk, S = ttc_n_strategies;
    ttc_bin_quantiles(w->pred, nq, (size_t)c->bins, w->bin_pred);
    ttc_bin_quantiles(w->pass1, nq, (size_t)c->bins, w->bin_oracle);
    r->choices = json_object();
    for (size_t ki = 0; ki < nk; ki++) {
        size_t n_run = 0, map[TTC_MAX_STRATEGIES];
        for (size_t s = 0; s < S; s++) {
            r->mean[s][ki] = 0;
            for (size_t q = 0; q < nq; q++) r->mean[s][ki] += w->acc[(q * nk + ki) * S + s] / (double)nq;
            if (isfinite(r->mean[s][ki])) map[n_run++] = s;
            else r->flops[s][ki] = r->tokens[s][ki] = NAN;   // not run at this budget
        }
        for (size_t q = 0; q < nq; q++)
            for (size_t j = 0; j < n_run; j++) w->acc_k[q * n_run + j] = w->acc[(q * nk + ki) * S + map[j]];
        size_t choice[64];
        r->opt_pred[ki] = ttc_compute_optimal(w->acc_k, NULL, w->bin_pred, nq, n_run, (size_t)c->bins, choice);
        r->opt_oracle[ki] = ttc_compute_optimal(w->acc_k, NULL, w->bin_oracle, nq, n_run, (size_t)c->bins, NULL);
        json_t *row = json_array();
        for (long b = 0; b < c->bins; b++) json_array_append_new(row, json_string(ttc_strategies[map[choice[b]]].name));
        char key[32];
        snprintf(key, sizeof key, "%zu", r->ks[ki]);
        json_object_set_new(r->choices, key, row);
    }
}

sx_status ttc_experiment_run(const ttc_experiment_config *c, ttc_experiment_result *r) {
    memset(r, 0, sizeof *r);
    work w;
    memset(&w, 0, sizeof w);
    size_t nq = (size_t)c->problems, N = (size_t)c->n, S = ttc_n_strategies;
    r->problems = nq;
    step_agg agg;
    sx_status st = step_agg_parse(c->agg, &agg);
    if (st) return st;
    for (size_t k = 1; k <= N; k *= 2) r->ks[r->nk++] = k;
    // Policies: the main one first, then --extra.
    r->paths = sx_strdup(c->extra, "ttc policy paths");
    r->pol[r->npol++].path = c->policy;
    for (char *tok = r->paths ? strtok(r->paths, ",") : NULL; tok && r->npol < TTC_MAX_POLICIES; tok = strtok(NULL, ",")) r->pol[r->npol++].path = tok;
    for (size_t i = 0; i < r->npol && !st; i++) {
        st = ttc_open_model(r->pol[i].path, &w.m[i]);
        if (!st) st = decoder_init(&w.d[i], &w.m[i], TTC_CTX);
        r->pol[i].params = model_param_count(&w.m[i]);
    }
    if (!st) st = open_verifier(c->orm, &w.m[0], &w.orm_m, &w.orm_h, &w.orm_t, &w.orm, &w.orm_v);
    if (!st) st = open_verifier(c->prm, &w.m[0], &w.prm_m, &w.prm_h, &w.prm_t, &w.prm, &w.prm_v);
    w.orm_all = sx_calloc_n(nq * N, sizeof *w.orm_all, "ttc ORM scores"), w.prm_all = sx_calloc_n(nq * N, sizeof *w.prm_all, "ttc PRM scores");
    w.correct_all = sx_calloc_n(nq * N, sizeof *w.correct_all, "ttc verdicts");
    if (!st && (!w.orm_all || !w.prm_all || !w.correct_all)) st = sx_fail(SX_ERR_NOMEM, "ttc run: out of memory");
    w.p = sx_calloc_n(nq, sizeof *w.p, "ttc problems");
    w.acc = sx_calloc_n(nq * r->nk * S, sizeof *w.acc, "ttc accuracies");   // [q][k][strategy]
    w.fl = sx_calloc_n(nq * r->nk * S, sizeof *w.fl, "ttc FLOPs per problem");
    w.pass1 = sx_calloc_n(nq, sizeof *w.pass1, "ttc pass@1"), w.pred = sx_calloc_n(nq, sizeof *w.pred, "ttc predictions");
    w.orm_s = sx_calloc_n(N, sizeof *w.orm_s, "ttc ORM scores"), w.prm_s = sx_calloc_n(N, sizeof *w.prm_s, "ttc PRM scores");
    w.steps = sx_calloc_n(N * VERIFIER_MAX_STEPS, sizeof *w.steps, "ttc step scores");
    w.nsteps = sx_calloc_n(N, sizeof *w.nsteps, "ttc step counts");
    w.bin_pred = sx_calloc_n(nq, sizeof *w.bin_pred, "ttc binned predictions"), w.bin_oracle = sx_calloc_n(nq, sizeof *w.bin_oracle, "ttc binned oracle");
    w.acc_k = sx_calloc_n(nq * S, sizeof *w.acc_k, "ttc accuracy per k");
    if (!st && (!r->paths || !w.p || !w.acc || !w.fl || !w.pass1 || !w.pred || !w.orm_s || !w.prm_s || !w.steps || !w.nsteps ||
                !w.bin_pred || !w.bin_oracle || !w.acc_k))
        st = sx_fail(SX_ERR_NOMEM, "ttc run: out of memory");
    if (st) { work_free(&w, r->npol); return st; }
    arith_split((uint64_t)c->seed * 104729u + 17, nq, 1, (int)c->max_ops, (int)c->digits, w.p);
    rng_state rng;
    rng_seed(&rng, (uint64_t)c->seed);
    size_t maj = ttc_strategy_row(SEL_MAJORITY, TTC_SCORE_NONE), wprm = ttc_strategy_row(SEL_WEIGHTED, TTC_SCORE_PRM);
    for (size_t pi = 0; pi < r->npol && !st; pi++) {
        ttc_policy_result *e = &r->pol[pi];
        decoder *d = &w.d[pi];
        for (size_t q = 0; q < nq && !st; q++) {
            ttc_sample_set s;
            double f0 = d->flops;
            if ((st = ttc_sample_problem(d, &w.p[q], N, c->temperature, &rng, &s))) break;
            size_t correct = 0;
            for (size_t j = 0; j < s.n; j++) correct += s.correct[j];
            double pol_flops = d->flops - f0, per_sample_tokens = (double)s.tokens / (double)N;
            double pol_prompt = prompt_flops(&d->m->cfg, strlen(w.p[q].expr) + 2);
            if (pi == 0) st = strategies_on_problem(c, agg, r, &w, q, &s, pol_flops, &rng);
            else st = prm_vote_on_problem(c, agg, r, &w, q, &s, pol_flops, pol_prompt, e, &rng);
            ttc_pool pool = {.n = s.n, .answer = s.answer, .has_answer = s.has, .correct = s.correct};
            for (size_t ki = 0; ki < r->nk && !st; ki++) {
                e->cov[ki] += ttc_pass_at_k(s.n, correct, r->ks[ki]) / (double)nq;
                e->maj[ki] += (pi == 0 ? w.acc[(q * r->nk + ki) * S + maj]
                                       : ttc_selector_accuracy(&pool, r->ks[ki], SEL_MAJORITY, (size_t)c->trials, &rng)) / (double)nq;
                e->flops[ki] += k_of_n(pol_flops, pol_prompt, r->ks[ki], N) / (double)nq;
                e->tokens[ki] += per_sample_tokens * (double)r->ks[ki] / (double)nq;
            }
            ttc_sample_set_free(&s);
        }
        for (size_t ki = 0; pi == 0 && ki < r->nk && !st; ki++) {   // the main policy's PRM vote is a row of the table
            e->wprm[ki] = 0, e->wprm_flops[ki] = 0;
            for (size_t q = 0; q < nq; q++)
                e->wprm[ki] += w.acc[(q * r->nk + ki) * S + wprm] / (double)nq, e->wprm_flops[ki] += w.fl[(q * r->nk + ki) * S + wprm] / (double)nq;
        }
        double kd[TTC_MAX_K];
        for (size_t ki = 0; ki < r->nk; ki++) kd[ki] = (double)r->ks[ki];
        if (!st && ttc_fit_coverage(kd, e->cov, r->nk, &e->fit_a, &e->fit_b)) e->fit_a = e->fit_b = NAN;
    }
    if (!st) aggregate(c, r, &w);
    if (!st) compute_optimal_flops(c, r, &w);
    if (!st) st = buckets(c, r, &w);
    if (!st) equal_flops(r);
    if (!st) {
        r->orm_auroc = calib_auroc(w.orm_all, w.correct_all, nq * N);
        r->prm_auroc = calib_auroc(w.prm_all, w.correct_all, nq * N);
        r->orm_kind = w.orm_v.head ? "value head on the policy trunk" : "separate label-byte model";
        r->prm_kind = w.prm_v.head ? "value head on the policy trunk" : "separate label-byte model";
    }
    r->verifier_flops /= (double)nq;
    work_free(&w, r->npol);
    return st;
}

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *jarr(const double *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, jnum(v[i]));
    return a;
}

json_t *ttc_experiment_to_json(const ttc_experiment_config *c, const ttc_experiment_result *r) {
    size_t nk = r->nk;
    double kd[TTC_MAX_K];
    for (size_t ki = 0; ki < nk; ki++) kd[ki] = (double)r->ks[ki];
    json_t *strat = json_object(), *models = json_array();
    json_t *fl = json_object(), *tk = json_object();
    for (size_t s = 0; s < ttc_n_strategies; s++) {
        json_object_set_new(strat, ttc_strategies[s].name, jarr(r->mean[s], nk));
        json_object_set_new(fl, ttc_strategies[s].name, jarr(r->flops[s], nk));
        json_object_set_new(tk, ttc_strategies[s].name, jarr(r->tokens[s], nk));
    }
    json_object_set_new(strat, "compute_optimal_predicted_bins_cv", jarr(r->opt_pred, nk));
    json_object_set_new(strat, "compute_optimal_oracle_bins_cv", jarr(r->opt_oracle, nk));
    json_object_set_new(strat, "compute_optimal_at_best_of_n_flops", jarr(r->opt_at_flops, nk));
    json_object_set_new(strat, "flops_to_match_best_of_n", jarr(r->match_flops, nk));
    for (size_t i = 0; i < r->npol; i++) {
        const ttc_policy_result *p = &r->pol[i];
        json_array_append_new(models, json_pack("{s:s, s:I, s:o, s:o, s:o, s:o, s:{s:o, s:o}}", "checkpoint", p->path,
                                                "params", (json_int_t)p->params, "coverage", jarr(p->cov, nk),
                                                "majority", jarr(p->maj, nk), "flops_per_problem", jarr(p->flops, nk),
                                                "tokens_per_problem", jarr(p->tokens, nk), "coverage_fit", "a",
                                                jnum(p->fit_a), "b", jnum(p->fit_b)));
        json_object_set_new(json_array_get(models, i), "weighted_prm", jarr(p->wprm, nk));
        json_object_set_new(json_array_get(models, i), "weighted_prm_flops_per_problem", jarr(p->wprm_flops, nk));
    }
    json_t *bk = json_array(), *eq = json_array();
    for (size_t b = 0; b < r->nb; b++) {
        const ttc_bucket_result *u = &r->bucket[b];
        json_t *rows = json_array();
        for (size_t ki = 0; ki < nk && u->problems; ki++) {
            bool some = u->opt_strategy[ki] < ttc_n_strategies;
            json_array_append_new(rows, json_pack("{s:I, s:o, s:o, s:s?, s:I, s:o, s:o, s:o}", "n", (json_int_t)r->ks[ki],
                                                  "best_of_n_accuracy", jnum(u->bon_acc[ki]), "best_of_n_flops", jnum(u->bon_flops[ki]),
                                                  "optimal_strategy", some ? ttc_strategies[u->opt_strategy[ki]].name : NULL,
                                                  "optimal_n", (json_int_t)u->opt_n[ki], "optimal_accuracy", jnum(u->opt_acc[ki]),
                                                  "optimal_flops", jnum(u->opt_flops[ki]),
                                                  "saving", jnum(u->bon_acc[ki] > 0 ? u->bon_flops[ki] / u->opt_flops[ki] : NAN)));
        }
        json_array_append_new(bk, json_pack("{s:I, s:I, s:o, s:o, s:o}", "bucket", (json_int_t)b, "problems", (json_int_t)u->problems,
                                            "pass_rate_min", jnum(u->pass_lo), "pass_rate_max", jnum(u->pass_hi), "budgets", rows));
    }
    for (size_t ki = 0; ki < nk; ki++) {
        json_t *cells = json_array();
        for (size_t i = 0; i < r->npol; i++) {
            const ttc_equal_flops_cell *e = &r->equal[ki][i];
            json_array_append_new(cells, json_pack("{s:s, s:I, s:o, s:o, s:s?, s:I}", "checkpoint", r->pol[i].path,
                                                   "params", (json_int_t)r->pol[i].params, "accuracy", jnum(e->acc),
                                                   "flops", jnum(e->flops), "strategy",
                                                   e->strategy < ttc_n_strategies ? ttc_strategies[e->strategy].name : NULL, "n", (json_int_t)e->n));
        }
        json_array_append_new(eq, json_pack("{s:o, s:o}", "budget_flops", jnum(r->pol[0].flops[ki]), "policies", cells));
    }
    json_t *ver = json_pack("{s:{s:s, s:o}, s:{s:s, s:o}}", "orm", "kind", r->orm_kind ? r->orm_kind : "", "test_auroc",
                            jnum(r->orm_auroc), "prm", "kind", r->prm_kind ? r->prm_kind : "", "test_auroc", jnum(r->prm_auroc));
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:O, s:f, s:s, s:I, s:I}", "compute_optimal_per_bucket", bk,
                     "equal_flops", eq, "verifiers", ver, "budgets", jarr(kd, nk), "strategies", strat,
                     "flops_per_problem", fl, "tokens_per_problem", tk,
                     "models", models, "compute_optimal_choice_per_bin", r->choices, "verifier_flops_per_sample",
                     r->verifier_flops, "prm_aggregation", c->agg, "problems", (json_int_t)r->problems,
                     "max_ops", (json_int_t)c->max_ops);
}

void ttc_experiment_free(ttc_experiment_result *r) {
    json_decref(r->choices);
    free(r->paths);
    memset(r, 0, sizeof *r);
}
