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

// ---- tree search: beam search, lookahead, DVTS ----

typedef struct {
    gen_stream pol;
    int vseq;
    double steps[VERIFIER_MAX_STEPS];
    size_t n_steps, group;
    double key;                 // this round's ranking key
} beam;

static double beam_score(const beam *b, step_agg agg) { return verifier_aggregate(b->steps, b->n_steps, agg); }

static void beam_drop(decoder *policy, const verifier *prm, beam *b) {
    if (b->pol.logits) kvcache_release(&policy->cache, b->pol.seq);
    if (b->pol.logits && b->vseq >= 0) verifier_release(prm, b->vseq);
    free(b->pol.logits);
    free(b->pol.tok);
    memset(b, 0, sizeof *b);
}

static sx_status beam_fork(decoder *policy, const verifier *prm, const beam *src, beam *dst) {
    memset(dst, 0, sizeof *dst);
    sx_status st = gen_stream_fork(policy, &src->pol, &dst->pol);
    dst->vseq = verifier_fork(prm, src->vseq);
    memcpy(dst->steps, src->steps, sizeof dst->steps);
    dst->n_steps = src->n_steps, dst->group = src->group;
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

static const int32_t step_stops[2] = {'\n', ARITH_EOT};

// Generates one step (to '\n' or end of text) for each of the n beams and scores it; counts the tokens.
static sx_status step_all(decoder *policy, const verifier *prm, beam *b, size_t n, const gen_config *g, rng_state *rng,
                          gen_stream *scratch, size_t *tokens) {
    for (size_t i = 0; i < n; i++) scratch[i] = b[i].pol;
    sx_status st = generate_streams(policy, scratch, n, g, rng);
    for (size_t i = 0; i < n; i++) b[i].pol = scratch[i], *tokens += scratch[i].new_in_call;
    return st ? st : score_new_steps(prm, b, n);
}

static bool beam_ended(const beam *b) {
    const gen_stream *s = &b->pol;
    return s->full || !s->stopped || (s->len && s->tok[s->len - 1] == ARITH_EOT);
}

// Lookahead (Snell et al. §5.2): each beam's key is the verifier's aggregated score after up to k further steps
// rolled out greedily from it; the rollouts are then discarded.
static sx_status lookahead_keys(decoder *policy, const verifier *prm, beam *b, size_t n, const search_config *c,
                                gen_stream *scratch, size_t *tokens) {
    beam *roll = sx_calloc_n(n + 1, sizeof *roll, "ttc rollouts"), *live = sx_calloc_n(n + 1, sizeof *live, "ttc live");
    size_t *at = sx_calloc_n(n + 1, sizeof *at, "ttc live index");
    sx_status st = roll && live && at ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    size_t made = 0;
    for (; made < n && !st; made++) st = beam_fork(policy, prm, &b[made], &roll[made]);
    gen_config greedy = {.sampler = {.temperature = 0, .top_p = 1}, .max_new = c->max_step_tokens, .stop = step_stops, .n_stop = 2};
    for (size_t k = 0; k < c->lookahead && !st; k++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!beam_ended(&b[i]) && (k == 0 || !beam_ended(&roll[i]))) live[m] = roll[i], at[m++] = i;
        if (m == 0) break;
        st = step_all(policy, prm, live, m, &greedy, NULL, scratch, tokens);
        for (size_t j = 0; j < m; j++) roll[at[j]] = live[j];
    }
    for (size_t i = 0; i < n; i++) b[i].key = roll && i < made ? beam_score(&roll[i], c->agg) : 0;
    for (size_t i = 0; i < made; i++) beam_drop(policy, prm, &roll[i]);
    free(roll), free(live), free(at);
    return st;
}

typedef struct { size_t group; double key; size_t idx; } ranked;
static int by_group_then_key(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : 1;
}

// The verifier-weighted vote over the completed beams.
static sx_status vote(const arith_problem *p, beam *done, size_t n_done, step_agg agg, search_result *out) {
    long *ans = sx_calloc_n(n_done + 1, sizeof *ans, "ttc ans");
    bool *has = sx_calloc_n(n_done + 1, sizeof *has, "ttc has"), *cor = sx_calloc_n(n_done + 1, sizeof *cor, "ttc cor");
    double *sc = sx_calloc_n(n_done + 1, sizeof *sc, "ttc sc");
    size_t *idx = sx_calloc_n(n_done + 1, sizeof *idx, "ttc idx");
    sx_status st = ans && has && cor && sc && idx ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    char text[1024];   // arith_detokenize truncates beyond it; the answer line of a longer text is lost
    for (size_t i = 0; i < n_done && !st; i++) {
        arith_detokenize(done[i].pol.tok, done[i].pol.len, text, sizeof text);
        has[i] = arith_final_answer(text, &ans[i]);
        cor[i] = has[i] && ans[i] == p->answer;
        sc[i] = beam_score(&done[i], agg);
        idx[i] = i;
    }
    if (!st) {
        ttc_pool pool = {.n = n_done, .answer = ans, .has_answer = has, .correct = cor, .score = sc};
        long w = ttc_select(&pool, idx, n_done, SEL_WEIGHTED);
        out->has_answer = w >= 0;
        out->answer = w >= 0 ? ans[w] : 0;
        out->correct = w >= 0 && cor[w];
        out->completed = n_done;
    }
    free(ans), free(has), free(cor), free(sc), free(idx);
    return st;
}

sx_status ttc_search(decoder *policy, const verifier *prm, const arith_problem *p, const search_config *c, rng_state *rng,
                     search_result *out) {
    size_t N = c->n_beams ? c->n_beams : 1, M = c->width < 1 ? 1 : c->width > N ? N : c->width;
    bool dvts = c->kind == SEARCH_DVTS;
    size_t G = dvts ? N / M : 1, keep = dvts ? 1 : N / M, V = policy->m->cfg.vocab, n_start = dvts ? G * M : N;
    decoder *vd = prm->d;
    double flops0 = policy->flops + vd->flops;
    memset(out, 0, sizeof *out);
    // At most N active beams (N/M kept × M, or G subtrees × M), and each round adds at most N completed ones
    // to fewer than N already there.
    beam *act = sx_calloc_n(N, sizeof *act, "ttc act"), *next = sx_calloc_n(N, sizeof *next, "ttc next"),
         *done = sx_calloc_n(2 * N, sizeof *done, "ttc done"), root = {0};
    ranked *rank = sx_calloc_n(N, sizeof *rank, "ttc rank");
    gen_stream *scratch = sx_calloc_n(N, sizeof *scratch, "ttc streams");
    int32_t prompt[ARITH_EXPR_MAX + 2];
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2), n_act = 0, n_done = 0;
    double *vprompt = sx_alloc(np * sizeof *vprompt, "ttc vprompt");
    int *vseqs = sx_alloc(np * sizeof *vseqs, "ttc vseqs");
    root.pol.logits = sx_alloc(V * sizeof *root.pol.logits, "ttc root logits");
    root.pol.seq = kvcache_new_seq(&policy->cache);
    root.vseq = verifier_new_seq(prm);
    sx_status st = act && next && done && rank && scratch && vprompt && vseqs && root.pol.logits && root.pol.seq >= 0 &&
                           root.vseq >= 0 ? SX_OK : sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = decoder_prefill(policy, root.pol.seq, prompt, np, root.pol.logits);
    for (size_t i = 0; i < np && !st; i++) vseqs[i] = root.vseq;
    if (!st) st = verifier_forward(prm, np, vseqs, prompt, vprompt);
    for (size_t i = 0; i < n_start && !st; i++) {
        root.group = dvts ? i / M : 0;
        st = beam_fork(policy, prm, &root, &act[n_act++]);
    }
    gen_config g = {.sampler = {.temperature = c->temperature, .top_p = 1}, .max_new = c->max_step_tokens,
                    .stop = step_stops, .n_stop = 2};
    for (size_t round = 0; !st && n_act > 0; round++) {
        st = step_all(policy, prm, act, n_act, &g, rng, scratch, &out->tokens);
        for (size_t i = 0; i < n_act; i++) act[i].key = beam_score(&act[i], c->agg);
        if (!st && c->lookahead) st = lookahead_keys(policy, prm, act, n_act, c, scratch, &out->tokens);
        for (size_t i = 0; i < n_act; i++) rank[i] = (ranked){act[i].group, act[i].key, i};
        qsort(rank, n_act, sizeof *rank, by_group_then_key);
        // Per group, in key order: ended beams (or all, in the last round) are completed; the first `keep` others
        // are kept. A DVTS subtree whose best candidate has ended stops there.
        size_t n_next = 0;
        bool last_round = round + 1 >= c->max_rounds;
        for (size_t r = 0, kept = 0, group_stopped = 0; r < n_act && !st; r++) {
            beam *b = &act[rank[r].idx];
            if (r == 0 || rank[r].group != rank[r - 1].group) kept = 0, group_stopped = dvts && beam_ended(b);
            if (beam_ended(b) || last_round) {
                done[n_done++] = *b;
                memset(b, 0, sizeof *b);
            } else if (kept < keep && !group_stopped && n_done < N) {
                kept++;
                for (size_t j = 0; j < M && !st; j++) st = beam_fork(policy, prm, b, &next[n_next++]);
            }
        }
        for (size_t i = 0; i < n_act; i++) beam_drop(policy, prm, &act[i]);
        memcpy(act, next, n_next * sizeof *next);
        n_act = n_next;
        if (n_done >= N) break;
    }
    if (!st) st = vote(p, done, n_done, c->agg, out);
    for (size_t i = 0; i < n_act; i++) beam_drop(policy, prm, &act[i]);
    for (size_t i = 0; i < n_done; i++) beam_drop(policy, prm, &done[i]);
    if (root.pol.seq >= 0) kvcache_release(&policy->cache, root.pol.seq);
    if (root.vseq >= 0) verifier_release(prm, root.vseq);
    free(root.pol.logits), free(vprompt), free(vseqs), free(scratch), free(rank), free(act), free(next), free(done);
    out->flops = policy->flops + vd->flops - flops0;
    return st;
}

// ---- compute-optimal selection ----

static size_t best_strategy(const double *acc, const bool *allowed, const size_t *bin, size_t nq, size_t S, size_t b,
                            int fold) {
    size_t best = 0;
    double best_sum = -1;
    for (size_t s = 0; s < S; s++) {
        if (allowed && !allowed[s]) continue;
        double sum = 0;
        for (size_t q = 0; q < nq; q++)
            if (bin[q] == b && (fold < 0 || (int)(q % 2) == fold)) sum += acc[q * S + s];
        if (sum > best_sum + 1e-12) best_sum = sum, best = s;
    }
    return best;
}

double ttc_compute_optimal(const double *acc, const bool *allowed, const size_t *bin, size_t nq, size_t S, size_t n_bins,
                           size_t *choice) {
    bool any = !allowed;
    for (size_t s = 0; s < S && !any; s++) any = allowed[s];
    if (!any) return NAN;
    double total = 0;
    for (size_t b = 0; b < n_bins; b++) {
        size_t pick[2] = {best_strategy(acc, allowed, bin, nq, S, b, 0), best_strategy(acc, allowed, bin, nq, S, b, 1)};
        for (size_t q = 0; q < nq; q++)
            if (bin[q] == b) total += acc[q * S + pick[1 - q % 2]];   // chosen on the other fold
        if (choice) choice[b] = best_strategy(acc, allowed, bin, nq, S, b, -1);
    }
    return nq ? total / (double)nq : NAN;
}

double ttc_compute_optimal_at(const double *acc, const double *cost, double budget, const size_t *bin, size_t nq, size_t S,
                              size_t n_bins, bool *allowed) {
    for (size_t s = 0; s < S; s++) allowed[s] = isfinite(cost[s]) && cost[s] <= budget * (1 + 1e-9);
    return ttc_compute_optimal(acc, allowed, bin, nq, S, n_bins, NULL);
}

size_t ttc_cheapest_reaching(const double *acc, const double *cost, const size_t *bin, size_t nq, size_t S, size_t b,
                             double target, double *acc_out, double *cost_out) {
    size_t best = S, members = 0;
    *acc_out = *cost_out = NAN;
    for (size_t q = 0; q < nq; q++) members += bin[q] == b;
    for (size_t s = 0; s < S && members; s++) {
        double a = 0, c = 0;
        for (size_t q = 0; q < nq; q++)
            if (bin[q] == b) a += acc[q * S + s], c += cost[q * S + s];
        a /= (double)members, c /= (double)members;
        if (isfinite(c) && a >= target - 1e-12 && (best == S || c < *cost_out)) best = s, *acc_out = a, *cost_out = c;
    }
    return best;
}

size_t ttc_best_within(const double *acc, const double *cost, size_t n, double budget) {
    size_t best = n;
    for (size_t i = 0; i < n; i++)
        if (isfinite(cost[i]) && cost[i] <= budget * (1 + 1e-9) &&
            (best == n || acc[i] > acc[best] || (acc[i] == acc[best] && cost[i] < cost[best])))
            best = i;
    return best;
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
