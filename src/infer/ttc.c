#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "infer/generate.h"
#include "infer/ttc.h"

double ttc_pass_at_k(size_t n, size_t c, size_t k) {
    if (n - c < k) return 1.0;
    double miss = 1.0;
    for (size_t i = n - c + 1; i <= n; i++) miss *= 1.0 - (double)k / (double)i;
    return 1.0 - miss;
}

double ttc_pass_at_k_lgamma(size_t n, size_t c, size_t k) {
    if (n - c < k) return 1.0;
    double lm = lgamma((double)(n - c + 1)) - lgamma((double)(n - c - k + 1)) - lgamma((double)(n + 1)) +
                lgamma((double)(n - k + 1));
    return 1.0 - exp(lm);
}

sx_status ttc_fit_coverage(const double *k, const double *cov, size_t n, double *a, double *b) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(cov[i] > 0 && cov[i] < 1) || k[i] <= 0) continue;
        double x = log(k[i]), y = log(-log(cov[i]));
        sx += x, sy += y, sxx += x * x, sxy += x * y, m++;
    }
    double det = (double)m * sxx - sx * sx;
    if (m < 2 || fabs(det) < 1e-12) return sx_fail(SX_ERR_NUMERIC, "coverage fit needs two points with 0 < c < 1");
    *b = ((double)m * sxy - sx * sy) / det;
    *a = -exp((sy - *b * sx) / (double)m);
    return SX_OK;
}


long ttc_select(const ttc_pool *p, const size_t *idx, size_t k, ttc_selector s) {
    long best = -1;
    double best_v = -INFINITY;
    for (size_t i = 0; i < k; i++) {
        size_t a = idx[i];
        if (!p->has_answer[a]) continue;
        double v = 0;
        if (s == SEL_BEST_OF_N) {
            v = p->score[a];
        } else {
            bool seen = false;   // value the answer's group once, at its first sample
            for (size_t j = 0; j < i && !seen; j++) seen = p->has_answer[idx[j]] && p->answer[idx[j]] == p->answer[a];
            if (seen) continue;
            for (size_t j = i; j < k; j++)
                if (p->has_answer[idx[j]] && p->answer[idx[j]] == p->answer[a]) v += s == SEL_MAJORITY ? 1.0 : p->score[idx[j]];
        }
        if (v > best_v) best_v = v, best = (long)a;
    }
    return best;
}

double ttc_selector_accuracy(const ttc_pool *p, size_t k, ttc_selector s, size_t trials, rng_state *rng) {
    size_t *idx = sx_alloc(p->n * sizeof *idx, "ttc idx");
    if (!idx || k == 0 || k > p->n) { free(idx); return NAN; }
    if (k == p->n) trials = 1;
    double hits = 0;
    for (size_t t = 0; t < trials; t++) {
        for (size_t i = 0; i < p->n; i++) idx[i] = i;
        for (size_t i = 0; i < k && k < p->n; i++) {   // partial Fisher–Yates: the first k are a random subset
            size_t j = i + (size_t)rng_below(rng, p->n - i), tmp = idx[i];
            idx[i] = idx[j], idx[j] = tmp;
        }
        long c = ttc_select(p, idx, k, s);
        hits += c >= 0 && p->correct[c];
    }
    free(idx);
    return hits / (double)trials;
}

// ---- beam search ----

typedef struct {
    gen_stream pol;
    int vseq;
    double steps[VERIFIER_MAX_STEPS];
    size_t n_steps;
} beam;

static double beam_score(const beam *b, step_agg agg) { return verifier_aggregate(b->steps, b->n_steps, agg); }

static void beam_drop(decoder *policy, decoder *prm, beam *b) {
    kvcache_release(&policy->cache, b->pol.seq);
    kvcache_release(&prm->cache, b->vseq);
    free(b->pol.logits);
    free(b->pol.tok);
    memset(b, 0, sizeof *b);
}

static sx_status beam_fork(decoder *policy, decoder *prm, const beam *src, beam *dst) {
    memset(dst, 0, sizeof *dst);
    sx_status st = gen_stream_fork(policy, &src->pol, &dst->pol);
    dst->vseq = kvcache_fork(&prm->cache, src->vseq);
    memcpy(dst->steps, src->steps, sizeof dst->steps);
    dst->n_steps = src->n_steps;
    return st ? st : dst->vseq < 0 ? SX_ERR_NOMEM : SX_OK;
}

// Feeds every beam's newly generated step (minus a final end-of-text) to the verifier and appends the score
// read after each '\n'.
static sx_status score_new_steps(const verifier *prm, beam *b, size_t n) {
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) rows += b[i].pol.new_in_call;
    int *seq = sx_alloc((rows + 1) * sizeof *seq, "ttc seq");
    int32_t *tok = sx_alloc((rows + 1) * sizeof *tok, "ttc tok");
    size_t *owner = sx_alloc((rows + 1) * sizeof *owner, "ttc owner");
    double *score = sx_alloc((rows + 1) * sizeof *score, "ttc scores");
    sx_status st = seq && tok && owner && score ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    size_t r = 0;
    for (size_t i = 0; i < n && !st; i++)
        for (size_t j = b[i].pol.len - b[i].pol.new_in_call; j < b[i].pol.len; j++) {
            int32_t t = b[i].pol.tok[j];
            if (t == ARITH_EOT || kvcache_len(&prm->d->cache, b[i].vseq) + (r > 0 && owner[r - 1] == i ? 1 : 0) >= prm->d->max_ctx) break;
            seq[r] = b[i].vseq, tok[r] = t, owner[r++] = i;
        }
    if (!st && r) st = verifier_forward(prm, r, seq, tok, score);
    for (size_t k = 0; k < r && !st; k++) {
        beam *x = &b[owner[k]];
        if (tok[k] == '\n' && x->n_steps < VERIFIER_MAX_STEPS) x->steps[x->n_steps++] = score[k];
    }
    free(seq);
    free(tok);
    free(owner);
    free(score);
    return st;
}

static int by_score_desc(const void *a, const void *b) {
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x > y ? -1 : x < y ? 1 : (((const double *)a)[1] < ((const double *)b)[1] ? -1 : 1);
}

sx_status ttc_beam_search(decoder *policy, const verifier *prm, const arith_problem *p, const beam_config *c, rng_state *rng,
                          beam_result *out) {
    size_t N = c->n_beams, M = c->width < 1 ? 1 : c->width, keep = N / M ? N / M : 1, V = policy->m->cfg.vocab;
    decoder *vd = prm->d;
    double flops0 = policy->flops + vd->flops;
    memset(out, 0, sizeof *out);
    beam *act = sx_calloc_n(keep * M + N, sizeof *act, "ttc act"),
           *done = sx_calloc_n(2 * N + keep * M, sizeof *done, "ttc done"), root = {0};
    double (*rank)[2] = sx_alloc((keep * M + N) * sizeof *rank, "ttc");
    int32_t prompt[ARITH_EXPR_MAX + 2];
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2), n_act = 0, n_done = 0;
    double *vprompt = sx_alloc(np * sizeof *vprompt, "ttc vprompt");
    int *vseqs = sx_alloc(np * sizeof *vseqs, "ttc vseqs");
    root.pol.logits = sx_alloc(V * sizeof *root.pol.logits, "ttc root.pol.logits");
    root.pol.seq = kvcache_new_seq(&policy->cache);
    root.vseq = kvcache_new_seq(&vd->cache);
    sx_status st = act && done && rank && vprompt && vseqs && root.pol.logits && root.pol.seq >= 0 && root.vseq >= 0
                       ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = decoder_prefill(policy, root.pol.seq, prompt, np, root.pol.logits);
    for (size_t i = 0; i < np && !st; i++) vseqs[i] = root.vseq;
    if (!st) st = verifier_forward(prm, np, vseqs, prompt, vprompt);
    for (size_t i = 0; i < N && !st; i++) st = beam_fork(policy, vd, &root, &act[n_act++]);
    const int32_t stops[2] = {'\n', ARITH_EOT};
    gen_config g = {.sampler = {.temperature = c->temperature, .top_p = 1}, .max_new = c->max_step_tokens,
                    .stop = stops, .n_stop = 2};
    gen_stream *streams = sx_alloc((keep * M + N) * sizeof *streams, "ttc streams");
    if (!streams && !st) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t round = 0; !st && n_act > 0; round++) {
        for (size_t i = 0; i < n_act; i++) streams[i] = act[i].pol;
        st = generate_streams(policy, streams, n_act, &g, rng);
        for (size_t i = 0; i < n_act; i++) act[i].pol = streams[i], out->tokens += streams[i].new_in_call;
        if (!st) st = score_new_steps(prm, act, n_act);
        // Completed beams (end of text, a step without a newline, a full context) leave the active set.
        size_t live = 0;
        for (size_t i = 0; i < n_act; i++) {
            gen_stream *s = &act[i].pol;
            bool complete = s->full || !s->stopped || s->tok[s->len - 1] == ARITH_EOT || round + 1 >= c->max_rounds;
            if (complete) done[n_done++] = act[i];
            else act[live++] = act[i];
        }
        n_act = live;
        if (st || n_done >= N || n_act == 0) break;
        for (size_t i = 0; i < n_act; i++) rank[i][0] = beam_score(&act[i], c->agg), rank[i][1] = (double)i;
        qsort(rank, n_act, sizeof *rank, by_score_desc);
        size_t kept = n_act < keep ? n_act : keep, n_new = 0;
        beam *next = sx_calloc_n(kept * M, sizeof *next, "ttc next");
        if (!next) { st = sx_fail(SX_ERR_NOMEM, "out of memory"); break; }
        for (size_t i = 0; i < kept && !st; i++)
            for (size_t j = 0; j < M && !st; j++) st = beam_fork(policy, vd, &act[(size_t)rank[i][1]], &next[n_new++]);
        for (size_t i = 0; i < n_act; i++) beam_drop(policy, vd, &act[i]);
        memcpy(act, next, n_new * sizeof *next);
        free(next);
        n_act = n_new;
    }
    // Verifier-weighted vote over the completed beams.
    long *ans = sx_calloc_n(n_done + 1, sizeof *ans, "ttc ans");
    bool *has = sx_calloc_n(n_done + 1, sizeof *has, "ttc has"), *cor = sx_calloc_n(n_done + 1, sizeof *cor, "ttc cor");
    double *sc = sx_calloc_n(n_done + 1, sizeof *sc, "ttc sc");
    size_t *idx = sx_calloc_n(n_done + 1, sizeof *idx, "ttc idx");
    char text[1024];
    for (size_t i = 0; i < n_done && ans && has && cor && sc && idx; i++) {
        arith_detokenize(done[i].pol.tok, done[i].pol.len, text, sizeof text);
        has[i] = arith_final_answer(text, &ans[i]);
        cor[i] = has[i] && ans[i] == p->answer;
        sc[i] = beam_score(&done[i], c->agg);
        idx[i] = i;
    }
    if (!st && ans && has && cor && sc && idx) {
        ttc_pool pool = {.n = n_done, .answer = ans, .has_answer = has, .correct = cor, .score = sc};
        long w = ttc_select(&pool, idx, n_done, SEL_WEIGHTED);
        out->has_answer = w >= 0;
        out->answer = w >= 0 ? ans[w] : 0;
        out->correct = w >= 0 && cor[w];
        out->completed = n_done;
    }
    free(ans), free(has), free(cor), free(sc), free(idx);
    for (size_t i = 0; i < n_act; i++) beam_drop(policy, vd, &act[i]);
    for (size_t i = 0; i < n_done; i++) beam_drop(policy, vd, &done[i]);
    if (root.pol.seq >= 0 && root.pol.logits) kvcache_release(&policy->cache, root.pol.seq);
    if (root.vseq >= 0) kvcache_release(&vd->cache, root.vseq);
    free(root.pol.logits);
    free(streams);
    free(act);
    free(done);
    free(rank);
    free(vprompt);
    free(vseqs);
    out->flops = policy->flops + vd->flops - flops0;
    return st;
}

// ---- compute-optimal selection ----

static size_t best_strategy(const double *acc, const size_t *bin, size_t nq, size_t S, size_t b, int fold) {
    size_t best = 0;
    double best_sum = -1;
    for (size_t s = 0; s < S; s++) {
        double sum = 0;
        for (size_t q = 0; q < nq; q++)
            if (bin[q] == b && (fold < 0 || (int)(q % 2) == fold)) sum += acc[q * S + s];
        if (sum > best_sum + 1e-12) best_sum = sum, best = s;
    }
    return best;
}

double ttc_compute_optimal(const double *acc, const size_t *bin, size_t nq, size_t S, size_t n_bins, size_t *choice) {
    double total = 0;
    for (size_t b = 0; b < n_bins; b++) {
        size_t pick[2] = {best_strategy(acc, bin, nq, S, b, 0), best_strategy(acc, bin, nq, S, b, 1)};
        for (size_t q = 0; q < nq; q++)
            if (bin[q] == b) total += acc[q * S + pick[1 - q % 2]];   // chosen on the other fold
        if (choice) choice[b] = best_strategy(acc, bin, nq, S, b, -1);
    }
    return nq ? total / (double)nq : NAN;
}

typedef struct { double key; size_t id; } keyed;
static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key ? 1 : (x->id < y->id ? -1 : 1);
}

void ttc_bin_quantiles(const double *d, size_t n, size_t n_bins, size_t *bin) {
    keyed *order = sx_alloc((n + 1) * sizeof *order, "ttc order");
    if (!order) { memset(bin, 0, n * sizeof *bin); return; }
    for (size_t i = 0; i < n; i++) order[i] = (keyed){d[i], i};
    qsort(order, n, sizeof *order, by_key);
    for (size_t r = 0; r < n; r++) bin[order[r].id] = r * n_bins / n;
    free(order);
}
