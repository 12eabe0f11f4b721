// tasks: see tasks.h.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "core/status.h"
#include "infer/generate.h"
#include "infer/tasks.h"
#include "infer/ttc_experiment.h"
#include "kernels/xent.h"
#include "tok/vocab_io.h"

#define GROUP 16               // items scored per pair of decoder calls
#define SCAN 512               // tokens searched from a random start before drawing another
#define DRAWS(n) (1000 + 50 * (n))

// ---- held-out text: word boundaries and documents ----

// A token's part in a word, from its bytes: " " + ASCII letters starts a word; ASCII letters only continue one.
// Anything else (digits, punctuation, newlines, non-ASCII letters, special tokens) ends a word.
enum { TOKEN_OTHER = 0, TOKEN_WORD_START, TOKEN_LETTERS };

typedef struct {
    const shard_file *sh;
    const bpe_vocab *v;
    uint8_t *cls;              // (vocab) TOKEN_*
    uint64_t *eot;             // positions of the end-of-text tokens, ascending
    size_t n_eot;
} text_view;

static bool is_letter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static uint8_t token_class(const bpe_vocab *v, size_t id) {
    if (v->kind[id] != TOK_KIND_NORMAL || v->len[id] == 0) return TOKEN_OTHER;
    const uint8_t *b = v->blob + v->off[id];
    size_t n = v->len[id], i = b[0] == ' ';
    if (i == n) return TOKEN_OTHER;
    for (size_t k = i; k < n; k++)
        if (!is_letter(b[k])) return TOKEN_OTHER;
    return i ? TOKEN_WORD_START : TOKEN_LETTERS;
}

static void view_free(text_view *t) {
    free(t->cls);
    free(t->eot);
    t->cls = NULL, t->eot = NULL;
}

static sx_status view_open(const task_text *src, text_view *t) {
    memset(t, 0, sizeof *t);
    t->sh = src->shard, t->v = src->vocab;
    uint64_t N = t->sh->h.n_tokens;
    t->cls = sx_alloc(t->v->n_ids ? t->v->n_ids : 1, "tasks cls");
    t->eot = sx_alloc((t->sh->h.n_docs + 1) * sizeof *t->eot, "tasks eot");
    if (!t->cls || !t->eot) { view_free(t); return sx_fail(SX_ERR_NOMEM, "out of memory for the task's text"); }
    for (size_t id = 0; id < t->v->n_ids; id++) t->cls[id] = token_class(t->v, id);
    for (uint64_t i = 0; i < N && t->n_eot <= t->sh->h.n_docs; i++)
        if (shard_token(t->sh, i) == t->sh->h.eot) t->eot[t->n_eot++] = i;
    return SX_OK;
}

static uint32_t tok_at(const text_view *t, uint64_t i) { return shard_token(t->sh, i); }
static uint8_t cls_at(const text_view *t, uint64_t i) {
    uint32_t id = tok_at(t, i);
    return id < t->v->n_ids ? t->cls[id] : TOKEN_OTHER;
}

// The document of position i: the number of end-of-text tokens at or before it.
static size_t doc_of(const text_view *t, uint64_t i) {
    size_t lo = 0, hi = t->n_eot;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->eot[mid] <= i) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Whether [a, b] lies in one document (an end-of-text token may open it at a, as every document opens).
static bool one_doc(const text_view *t, uint64_t a, uint64_t b) { return doc_of(t, a) == doc_of(t, b); }

// The end (inclusive) of the word starting at i: the last of the letter tokens that follow it.
static uint64_t word_end(const text_view *t, uint64_t i) {
    uint64_t N = t->sh->h.n_tokens;
    while (i + 1 < N && cls_at(t, i + 1) == TOKEN_LETTERS) i++;
    return i;
}

static double text_bytes(const text_view *t, uint64_t a, uint64_t b) {
    double n = 0;
    for (uint64_t i = a; i <= b; i++) n += t->v->len[tok_at(t, i)];
    return n;
}

// ---- items ----

void task_items_free(task_items *it) {
    free(it->tok);
    free(it->ctx_off);
    free(it->ctx_len);
    free(it->cand_off);
    free(it->cand_len);
    free(it->answer);
    free(it->cand_bytes);
    free(it->problems);
    memset(it, 0, sizeof *it);
}

// Room for n items of n_cand candidates and tok_cap tokens in all.
static sx_status items_alloc(task_items *it, size_t n, size_t n_cand, size_t tok_cap) {
    memset(it, 0, sizeof *it);
    it->n_cand = n_cand;
    it->tok = sx_alloc(tok_cap * sizeof *it->tok, "tasks tok");
    it->ctx_off = sx_alloc(n * sizeof(size_t), "tasks ctx_off");
    it->ctx_len = sx_alloc(n * sizeof(size_t), "tasks ctx_len");
    it->answer = sx_calloc_n(n, sizeof(size_t), "tasks answer");
    it->cand_off = sx_alloc(n * n_cand * sizeof(size_t), "tasks cand_off");
    it->cand_len = sx_alloc(n * n_cand * sizeof(size_t), "tasks cand_len");
    it->cand_bytes = sx_alloc(n * n_cand * sizeof(double), "tasks cand_bytes");
    if (it->tok && it->ctx_off && it->ctx_len && it->answer && it->cand_off && it->cand_len && it->cand_bytes)
        return SX_OK;
    task_items_free(it);
    return sx_fail(SX_ERR_NOMEM, "out of memory for %zu task items", n);
}

// Appends shard tokens [a, b] to the item tokens; returns their offset. (items_alloc sized tok for all.)
static size_t copy_span(task_items *it, size_t *used, const text_view *t, uint64_t a, uint64_t b) {
    size_t off = *used;
    for (uint64_t i = a; i <= b; i++) it->tok[(*used)++] = (int32_t)tok_at(t, i);
    return off;
}

static bool used_before(const uint64_t *keys, size_t n, uint64_t key) {
    for (size_t i = 0; i < n; i++)
        if (keys[i] == key) return true;
    return false;
}

// Whether the word [i, j] occurs as a whole word in [a, i).
static bool occurs_before(const text_view *t, uint64_t a, uint64_t i, uint64_t j) {
    uint64_t len = j - i + 1;
    for (uint64_t k = a; k + len < i; k++) {
        uint64_t m = 0;
        while (m < len && tok_at(t, k + m) == tok_at(t, i + m)) m++;
        if (m == len && cls_at(t, k + len) != TOKEN_LETTERS) return true;
    }
    return false;
}

// A cloze item found scanning from q: the first word of TASK_CLOZE_MIN_LETTERS letters or more that ends a
// passage of TASK_CLOZE_CTX tokens inside one document and occurs earlier in that passage. *i, *j: the word.
static bool cloze_at(const text_view *t, uint64_t q, uint64_t *i, uint64_t *j) {
    uint64_t N = t->sh->h.n_tokens;
    for (uint64_t s = q; s < N && s < q + SCAN; s++) {
        if (cls_at(t, s) != TOKEN_WORD_START) continue;
        uint64_t e = word_end(t, s);
        if (e + 1 >= N || e + 1 < TASK_CLOZE_CTX) { s = e; continue; }
        uint64_t a = e + 1 - TASK_CLOZE_CTX;
        if (a < s && text_bytes(t, s, e) - 1 >= TASK_CLOZE_MIN_LETTERS && one_doc(t, a, e) && occurs_before(t, a, s, e)) {
            *i = s, *j = e;
            return true;
        }
        s = e;
    }
    return false;
}

static sx_status build_cloze(const task_text *src, uint64_t seed, size_t n, task_items *out) {
    memset(out, 0, sizeof *out);
    text_view t;
    sx_status st = view_open(src, &t);
    uint64_t *ends = sx_alloc((n ? n : 1) * sizeof *ends, "tasks ends");
    if (!st && !ends) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st) st = items_alloc(out, n, 1, n * TASK_CLOZE_CTX);
    rng_state r;
    rng_seed(&r, seed * 0x9E3779B97F4A7C15ull + 0xC102E);
    size_t found = 0, used = 0;
    for (size_t draw = 0; !st && found < n && draw < DRAWS(n); draw++) {
        uint64_t i, j;
        if (!cloze_at(&t, rng_below(&r, t.sh->h.n_tokens), &i, &j) || used_before(ends, found, j)) continue;
        ends[found] = j;
        out->ctx_off[found] = copy_span(out, &used, &t, j + 1 - TASK_CLOZE_CTX, i - 1);
        out->ctx_len[found] = i - (j + 1 - TASK_CLOZE_CTX);
        out->cand_off[found] = copy_span(out, &used, &t, i, j);
        out->cand_len[found] = j - i + 1;
        out->cand_bytes[found] = text_bytes(&t, i, j);
        found++;
    }
    if (!st && found < n)
        st = sx_fail(SX_ERR_ARG, "cloze: the validation shard holds only %zu usable passages of %d tokens (asked for "
                     "%zu): use a larger shard or fewer items", found, TASK_CLOZE_CTX, n);
    out->n = found;
    if (st) task_items_free(out);
    free(ends);
    view_free(&t);
    return st;
}

// A continuation starting at the word start i: at least TASK_CHOICE_MIN tokens, to the end of its last word,
// at most TASK_CHOICE_MAX, in one document. *e: its last token.
static bool continuation_at(const text_view *t, uint64_t i, uint64_t *e) {
    uint64_t N = t->sh->h.n_tokens;
    if (cls_at(t, i) != TOKEN_WORD_START || i + TASK_CHOICE_MIN >= N) return false;
    uint64_t end = i + TASK_CHOICE_MIN - 1;
    if (cls_at(t, end + 1) == TOKEN_LETTERS) end = word_end(t, end);
    if (end + 1 >= N || end - i + 1 > TASK_CHOICE_MAX || !one_doc(t, i, end) || tok_at(t, i) == t->sh->h.eot) return false;
    *e = end;
    return true;
}

// The first position from q where a continuation starts that satisfies `ok` (a passage before it, or another
// document than doc); *i, *e its span.
static bool choice_scan(const text_view *t, uint64_t q, bool passage, size_t doc, uint64_t *i, uint64_t *e) {
    uint64_t N = t->sh->h.n_tokens;
    for (uint64_t s = q; s < N && s < q + SCAN; s++) {
        if (!continuation_at(t, s, e)) continue;
        bool ok = passage ? s >= TASK_CHOICE_CTX && one_doc(t, s - TASK_CHOICE_CTX, *e) : doc_of(t, s) != doc;
        if (ok) { *i = s; return true; }
    }
    return false;
}

static sx_status build_choice(const task_text *src, uint64_t seed, size_t n, task_items *out) {
    const size_t K = TASK_CHOICES;
    memset(out, 0, sizeof *out);
    text_view t;
    sx_status st = view_open(src, &t);
    uint64_t *starts = sx_alloc((n ? n : 1) * sizeof *starts, "tasks starts");
    if (!st && !starts) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    if (!st && t.n_eot < 2) st = sx_fail(SX_ERR_ARG, "choice: the validation shard has one document; distractors "
                                         "come from other documents");
    if (!st) st = items_alloc(out, n, K, n * (1 + TASK_CHOICE_CTX + K * TASK_CHOICE_MAX));
    rng_state r;
    rng_seed(&r, seed * 0x9E3779B97F4A7C15ull + 0xC401CE);
    uint64_t N = t.sh->h.n_tokens;
    size_t found = 0, used = 0, draws = 0;
    while (!st && found < n && draws++ < DRAWS(n)) {
        uint64_t i, e;
        if (!choice_scan(&t, rng_below(&r, N), true, 0, &i, &e) || used_before(starts, found, i)) continue;
        size_t doc = doc_of(&t, i), answer = (size_t)rng_below(&r, K), *co = out->cand_off + found * K;
        uint64_t span[TASK_CHOICES][2];
        span[answer][0] = i, span[answer][1] = e;
        size_t c = answer == 0;   // the next distractor's slot
        while (c < K && draws++ < DRAWS(n))
            if (choice_scan(&t, rng_below(&r, N), false, doc, &span[c][0], &span[c][1])) c += 1 + (c + 1 == answer);
        if (c < K) break;
        starts[found] = i;
        out->answer[found] = answer;
        out->tok[used++] = (int32_t)t.sh->h.eot;   // the null context of choice_pmi, just before the context
        out->ctx_off[found] = copy_span(out, &used, &t, i - TASK_CHOICE_CTX, i - 1);
        out->ctx_len[found] = TASK_CHOICE_CTX;
        for (size_t c = 0; c < K; c++) {
            co[c] = copy_span(out, &used, &t, span[c][0], span[c][1]);
            out->cand_len[found * K + c] = span[c][1] - span[c][0] + 1;
            out->cand_bytes[found * K + c] = text_bytes(&t, span[c][0], span[c][1]);
        }
        found++;
    }
    if (!st && found < n)
        st = sx_fail(SX_ERR_ARG, "choice: the validation shard holds only %zu usable passages (asked for %zu): use "
                     "a larger shard or fewer items", found, n);
    out->n = found;
    if (st) task_items_free(out);
    free(starts);
    view_free(&t);
    return st;
}

static sx_status build_arith(const task_text *src, uint64_t seed, size_t n, task_items *out) {
    (void)src;
    sx_status st = items_alloc(out, n, 1, n * (ARITH_EXPR_MAX + 2 + TTC_MAX_TEXT + 1));
    out->problems = st ? NULL : sx_alloc((n ? n : 1) * sizeof *out->problems, "tasks problems");
    if (!st && !out->problems) { task_items_free(out); st = sx_fail(SX_ERR_NOMEM, "out of memory"); }
    if (st) return st;
    out->n = n;
    arith_split(seed * 0x9E3779B97F4A7C15ull + 0xA417, n, 1, TASK_ARITH_MAX_OPS, TASK_ARITH_DIGITS, out->problems);
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        char sol[TTC_MAX_TEXT];
        size_t np = arith_prompt_tokens(&out->problems[i], out->tok + used, ARITH_EXPR_MAX + 2);
        out->ctx_off[i] = used, out->ctx_len[i] = np;
        used += np;
        size_t ns = arith_solution(&out->problems[i], sol, sizeof sol);
        out->cand_off[i] = used, out->cand_len[i] = ns + 1, out->cand_bytes[i] = (double)ns + 1;
        for (size_t k = 0; k < ns; k++) out->tok[used++] = (unsigned char)sol[k];
        out->tok[used++] = ARITH_EOT;   // the next document's opening token ends the solution, as in training
    }
    return SX_OK;
}

// ---- scoring ----

// Whether target is the argmax of z (V) (ties to the lower id).
static bool is_top(const float *z, size_t V, int32_t target) {
    size_t best = 0;
    for (size_t v = 1; v < V; v++)
        if (z[v] > z[best]) best = v;
    return best == (size_t)target;
}

// Buffers for group_ll, sized once for the largest group (a fresh logits block of megabytes per group cost
// more in page faults than the scoring itself).
typedef struct {
    int *seq, *root, *fork;
    int32_t *tok;
    float *logits;
    float *xent_work;           // the cross-entropy's workspace, xent_floats floats
    size_t xent_floats;
} ll_work;

static void work_free(ll_work *w) {
    free(w->seq);
    free(w->root);
    free(w->fork);
    free(w->tok);
    sx_free(w->logits);
    sx_free(w->xent_work);
}

// Context rows to prefill (each context but its last token) and candidate rows of items [first, first + count).
static void group_rows(const task_items *it, size_t first, size_t count, size_t *pre, size_t *rows) {
    *pre = *rows = 0;
    for (size_t g = first; g < first + count; g++) {
        *pre += it->ctx_len[g] - 1;
        for (size_t c = 0; c < it->n_cand; c++) *rows += it->cand_len[g * it->n_cand + c];
    }
}

// Buffers for items [first, first + n) taken `group` at a time.
static sx_status work_alloc(const task_items *it, size_t first, size_t n, size_t group, size_t V, ll_work *w) {
    size_t cap = 1, most = 1;
    for (size_t f = first; f < first + n; f += group) {
        size_t pre, rows;
        group_rows(it, f, first + n - f < group ? first + n - f : group, &pre, &rows);
        cap = pre > cap ? pre : cap, cap = rows > cap ? rows : cap, most = rows > most ? rows : most;
    }
    w->seq = sx_alloc(cap * sizeof *w->seq, "tasks seq");
    w->tok = sx_alloc(cap * sizeof *w->tok, "tasks rows");
    w->root = sx_alloc(group * sizeof *w->root, "tasks root");
    w->fork = sx_alloc(group * it->n_cand * sizeof *w->fork, "tasks fork");
    w->logits = sx_alloc(most * V * sizeof *w->logits, "tasks logits");
    w->xent_floats = xent_workspace_floats(most, V, omp_get_max_threads());
    w->xent_work = sx_alloc(w->xent_floats * sizeof *w->xent_work, "tasks cross-entropy workspace");
    if (w->seq && w->tok && w->root && w->fork && w->logits && w->xent_work) return SX_OK;
    work_free(w);
    return sx_fail(SX_ERR_NOMEM, "out of memory for task scoring");
}

// task_candidates_ll for items [first, first + count): every context but its last token prefilled in one
// call (no head), then every candidate of every item in a fork of its context in a second call, each fork fed
// the context's last token and the candidate but its last token. ll, greedy: (count·n_cand).
static sx_status group_ll(decoder *d, const task_items *it, size_t first, size_t count, ll_work *w, double *ll,
                          bool *greedy) {
    const size_t K = it->n_cand, V = d->m->cfg.vocab;
    size_t pre, rows, made = 0, forked = 0, r = 0;
    group_rows(it, first, count, &pre, &rows);
    int *seq = w->seq;
    int32_t *tok = w->tok;
    sx_status st = SX_OK;
    for (; !st && made < count; made++)
        if ((w->root[made] = kvcache_new_seq(&d->cache)) < 0) st = SX_ERR_NOMEM;
    for (size_t g = 0; g < count && !st; g++) {
        const size_t i = first + g;
        for (size_t k = 0; k + 1 < it->ctx_len[i]; k++, r++) seq[r] = w->root[g], tok[r] = it->tok[it->ctx_off[i] + k];
    }
    if (!st && pre) st = decoder_forward(d, pre, seq, tok, NULL);
    r = 0;
    for (size_t g = 0; g < count && !st; g++) {
        const size_t i = first + g;
        for (size_t c = 0; c < K && !st; c++) {
            if ((w->fork[forked] = kvcache_fork(&d->cache, w->root[g])) < 0) { st = SX_ERR_NOMEM; break; }
            const int32_t *cand = it->tok + it->cand_off[i * K + c];
            for (size_t k = 0; k < it->cand_len[i * K + c]; k++, r++)
                seq[r] = w->fork[forked], tok[r] = k ? cand[k - 1] : it->tok[it->ctx_off[i] + it->ctx_len[i] - 1];
            forked++;
        }
    }
    if (!st) st = decoder_forward(d, rows, seq, tok, w->logits);
    r = 0;
    for (size_t j = 0; j < count * K && !st; j++) {
        const size_t i = first + j / K;
        const int32_t *cand = it->tok + it->cand_off[i * K + j % K];
        const size_t L = it->cand_len[i * K + j % K];
        // the decoder's logits are already soft-capped: no cap here
        ll[j] = -xent_forward_backward(L, V, w->logits + r * V, cand, NULL, 0.0f, 1.0f, NULL, w->xent_work, w->xent_floats);
        greedy[j] = true;
        for (size_t k = 0; k < L; k++, r++) greedy[j] = greedy[j] && is_top(w->logits + r * V, V, cand[k]);
    }
    for (size_t k = 0; k < forked; k++) kvcache_release(&d->cache, w->fork[k]);
    for (size_t k = 0; k < made; k++)
        if (w->root[k] >= 0) kvcache_release(&d->cache, w->root[k]);
    return st;
}

sx_status task_candidates_ll(decoder *d, const task_items *it, size_t i, double *ll, bool *greedy) {
    SX_CHECK(i < it->n, "ask for an item the task has");
    ll_work w;
    sx_status st = work_alloc(it, i, 1, 1, d->m->cfg.vocab, &w);
    if (st) return st;
    st = group_ll(d, it, i, 1, &w, ll, greedy);
    work_free(&w);
    return st;
}

// Runs group_ll over all items in groups and hands each item's (ll, greedy) to judge, which returns whether
// the item is correct and adds to *loss. With null_ctx, each candidate's log-likelihood after the null context
// (the end-of-text token before its context: a document's start) goes to judge as null_ll; else NULL.
typedef bool (*judge_fn)(const task_items *it, size_t i, const double *ll, const double *null_ll, const bool *greedy,
                         double *loss);

static sx_status score_by_ll(decoder *d, const task_items *it, bool null_ctx, judge_fn judge, task_score *out) {
    const size_t K = it->n_cand;
    double ll[GROUP * TASK_CHOICES], null_ll[GROUP * TASK_CHOICES], loss = 0;
    bool greedy[GROUP * TASK_CHOICES], null_greedy[GROUP * TASK_CHOICES];
    SX_CHECK(K <= TASK_CHOICES, "raise TASK_CHOICES for more candidates");
    memset(out, 0, sizeof *out);
    // The null items: the same candidates after a one-token context, the token before each context.
    task_items null = *it;
    null.ctx_off = null_ctx ? sx_alloc(it->n * sizeof *null.ctx_off, "tasks null off") : NULL;
    null.ctx_len = null_ctx ? sx_alloc(it->n * sizeof *null.ctx_len, "tasks null len") : NULL;
    if (null_ctx && (!null.ctx_off || !null.ctx_len)) {
        free(null.ctx_off);
        free(null.ctx_len);
        return sx_fail(SX_ERR_NOMEM, "out of memory for task scoring");
    }
    for (size_t i = 0; null_ctx && i < it->n; i++) null.ctx_off[i] = it->ctx_off[i] - 1, null.ctx_len[i] = 1;
    ll_work w, w0;
    sx_status st = work_alloc(it, 0, it->n, GROUP, d->m->cfg.vocab, &w);
    bool have_w = !st, have_w0 = false;
    if (!st && null_ctx) have_w0 = !(st = work_alloc(&null, 0, it->n, GROUP, d->m->cfg.vocab, &w0));
    for (size_t first = 0; first < it->n && !st; first += GROUP) {
        size_t count = it->n - first < GROUP ? it->n - first : GROUP;
        if ((st = group_ll(d, it, first, count, &w, ll, greedy))) break;
        if (null_ctx && (st = group_ll(d, &null, first, count, &w0, null_ll, null_greedy))) break;
        for (size_t g = 0; g < count; g++)
            out->correct += judge(it, first + g, ll + g * K, null_ctx ? null_ll + g * K : NULL, greedy + g * K, &loss);
    }
    if (have_w) work_free(&w);
    if (have_w0) work_free(&w0);
    free(null.ctx_off);
    free(null.ctx_len);
    out->n = it->n;
    out->loss = it->n ? loss / (double)it->n : NAN;
    return st;
}

static bool judge_cloze(const task_items *it, size_t i, const double *ll, const double *null_ll, const bool *greedy,
                        double *loss) {
    (void)it, (void)i, (void)null_ll;
    *loss -= ll[0];
    return greedy[0];
}

// The highest score wins (ties to the first candidate); the loss is the true continuation's NLL per token.
// choice: log-likelihood per byte of text (length-normalised, HellaSwag's acc_norm); choice_pmi: log-likelihood
// minus that after the null context (pointwise mutual information with the passage, as GPT-3 scored ARC,
// OpenBookQA and RACE: what the passage adds, not how common the continuation's words are).
static bool judge_choice(const task_items *it, size_t i, const double *ll, const double *null_ll, const bool *greedy,
                         double *loss) {
    (void)greedy;
    const size_t K = it->n_cand, a = it->answer[i];
    size_t best = 0;
    double score[TASK_CHOICES];
    for (size_t c = 0; c < K; c++) score[c] = null_ll ? ll[c] - null_ll[c] : ll[c] / it->cand_bytes[i * K + c];
    for (size_t c = 1; c < K; c++)
        if (score[c] > score[best]) best = c;
    *loss -= ll[a] / (double)it->cand_len[i * K + a];
    return best == a;
}

static bool judge_teacher_forced(const task_items *it, size_t i, const double *ll, const double *null_ll,
                                 const bool *greedy, double *loss) {
    (void)greedy, (void)null_ll;
    *loss -= ll[0] / (double)it->cand_len[i];
    return false;   // arith's accuracy comes from generation
}

static sx_status score_cloze(decoder *d, const task_items *it, task_score *out) {
    return score_by_ll(d, it, false, judge_cloze, out);
}

static sx_status score_choice(decoder *d, const task_items *it, task_score *out) {
    return score_by_ll(d, it, false, judge_choice, out);
}

static sx_status score_choice_pmi(decoder *d, const task_items *it, task_score *out) {
    return score_by_ll(d, it, true, judge_choice, out);
}

sx_status task_arith_solve(decoder *d, const arith_problem *p, char *text, bool *correct) {
    int32_t prompt[ARITH_EXPR_MAX + 2], stop = ARITH_EOT;
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2);
    gen_config g = {.sampler = {.temperature = 0, .top_p = 1}, .max_new = d->max_ctx - np - 1, .stop = &stop, .n_stop = 1};
    rng_state unused;   // greedy decoding draws nothing
    rng_seed(&unused, 0);
    gen_stream *s = NULL;
    sx_status st = generate_samples(d, prompt, np, 1, &g, &unused, &s);
    if (st) return st;
    arith_detokenize(s[0].tok, s[0].len, text, TTC_MAX_TEXT);
    *correct = arith_check_final(p, text);   // the last complete line's answer
    gen_streams_free(d, s, 1);
    return SX_OK;
}

// Loss teacher-forced; accuracy from greedy generation.
static sx_status score_arith(decoder *d, const task_items *it, task_score *out) {
    sx_status st = score_by_ll(d, it, false, judge_teacher_forced, out);
    char text[TTC_MAX_TEXT];
    for (size_t i = 0; i < it->n && !st; i++) {
        bool correct = false;
        st = task_arith_solve(d, &it->problems[i], text, &correct);
        out->correct += correct;
    }
    return st;
}

const task_def task_table[] = {
    {"cloze", "last word of a held-out passage (LAMBADA-style; greedy exact match)", "nats per word", 0.0, true,
     TASK_CLOZE_CTX, build_cloze, score_cloze},
    {"choice", "true continuation among 4, the others from other documents (HellaSwag-style; per-byte LL)",
     "nats per token", 1.0 / TASK_CHOICES, true, TASK_CHOICE_CTX + TASK_CHOICE_MAX, build_choice, score_choice},
    {"choice_pmi", "the choice items scored by log-likelihood minus that after a document start (PMI, as GPT-3 "
     "scored ARC)", "nats per token", 1.0 / TASK_CHOICES, true, TASK_CHOICE_CTX + TASK_CHOICE_MAX, build_choice,
     score_choice_pmi},
    {"arith", "arithmetic problems, exact final answer under greedy decoding (byte-level models from ttc train)",
     "nats per token", 0.0, false, TTC_CTX, build_arith, score_arith},
};
const size_t task_count = sizeof task_table / sizeof *task_table;

const task_def *task_find(const char *name) {
    for (size_t i = 0; i < task_count; i++)
        if (!strcmp(task_table[i].name, name)) return &task_table[i];
    return NULL;
}

void task_wilson(size_t correct, size_t n, double z, double *lo, double *hi) {
    if (n == 0) { *lo = 0, *hi = 1; return; }
    double p = (double)correct / (double)n, nn = (double)n, z2 = z * z;
    double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
    double half = z / (1 + z2 / nn) * sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
    *lo = fmax(0, centre - half), *hi = fmin(1, centre + half);
}

// ---- suites ----

void task_suite_free(task_suite *s) {
    for (size_t k = 0; k < s->n; k++) task_items_free(&s->items[k]);
    memset(s, 0, sizeof *s);
}

static sx_status open_text(const char *val_path, const char *vocab_path, shard_file *sh, bpe_vocab **v) {
    char found[4096];
    if (!*val_path) return sx_fail(SX_ERR_ARG, "text tasks need a validation shard (--val SHARD)");
    sx_status st = shard_open(sh, val_path, 0);
    if (st) return st;
    long failures = sx_alloc_failures();   // an allocation that failed while looking is not "no vocabulary"
    if (!*vocab_path && !vocab_find_beside(val_path, sh->h.vocab_hash, found, sizeof found))
        st = sx_alloc_check(failures) ? SX_ERR_NOMEM
             : sx_fail(SX_ERR_ARG, "%s: no vocabulary (.sxv) beside it has its tokens' hash; text tasks need the "
                       "vocabulary the shard was written with (--vocab FILE)", val_path);
    if (!st) st = vocab_load(*vocab_path ? vocab_path : found, v);
    if (!st && (*v)->n_ids != sh->h.vocab_size)
        st = sx_fail(SX_ERR_MISMATCH, "vocabulary %s has %zu tokens, the shard %s %u", *vocab_path ? vocab_path : found,
                     (*v)->n_ids, val_path, sh->h.vocab_size);
    if (st) { bpe_vocab_free(*v); *v = NULL; shard_close(sh); }
    return st;
}

// Resolves the comma-separated names into def[] (at most TASK_MAX): every name known, and text tasks not
// mixed with the byte-level arith. *text: whether the tasks read held-out text.
static sx_status resolve_names(const char *names, const task_def **def, size_t *n, bool *text) {
    char list[512];
    if (strlen(names) >= sizeof list) return sx_fail(SX_ERR_ARG, "too many task names: '%s'", names);
    snprintf(list, sizeof list, "%s", names);
    bool bytes = false;
    *n = 0, *text = false;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        const task_def *t = task_find(name);
        if (!t) {
            char known[128] = "";
            for (size_t i = 0; i < task_count; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", task_table[i].name);
            return sx_fail(SX_ERR_ARG, "unknown task '%s' (tasks: %s)", name, known);
        }
        for (size_t k = 0; k < *n; k++)
            if (def[k] == t) return sx_fail(SX_ERR_ARG, "'%s': task %s is named twice", names, t->name);
        if (*n == TASK_MAX) return sx_fail(SX_ERR_ARG, "more than %d tasks", TASK_MAX);
        def[(*n)++] = t, *text |= t->text, bytes |= !t->text;
    }
    if (!*n) return sx_fail(SX_ERR_ARG, "no task named");
    if (*text && bytes)
        return sx_fail(SX_ERR_ARG, "'%s': arith is for byte-level models trained on it and cannot be measured beside "
                       "text tasks", names);
    return SX_OK;
}

sx_status task_names_check(const char *names) {
    const task_def *def[TASK_MAX];
    size_t n;
    bool text;
    return resolve_names(names, def, &n, &text);
}

sx_status task_suite_open(task_suite *s, const char *names, const char *val_path, const char *vocab_path,
                          size_t n_items, uint64_t seed) {
    memset(s, 0, sizeof *s);
    bool text = false;
    sx_status st = resolve_names(names, s->def, &s->n, &text);
    if (!st && n_items < 1) st = sx_fail(SX_ERR_ARG, "a task needs at least one item");
    shard_file sh = {0};
    bpe_vocab *v = NULL;
    if (!st && text) st = open_text(val_path, vocab_path, &sh, &v);
    s->vocab = text ? sh.h.vocab_size : ARITH_VOCAB;
    task_text src = {.shard = &sh, .vocab = v};
    size_t built = 0;
    for (; built < s->n && !st; built++) st = s->def[built]->build(&src, seed, n_items, &s->items[built]);
    if (text && v) shard_close(&sh);
    bpe_vocab_free(v);
    if (st) {
        for (size_t k = 0; k + 1 < built; k++) task_items_free(&s->items[k]);
        memset(s, 0, sizeof *s);
    }
    return st;
}

sx_status task_suite_check(const task_suite *s, const model *m) {
    if (m->cfg.vocab == s->vocab) return SX_OK;
    return sx_fail(SX_ERR_MISMATCH, "task %s is in a %zu-token vocabulary but the model has %zu%s", s->def[0]->name,
                   s->vocab, m->cfg.vocab, s->def[0]->text ? " (give the validation shard the model was trained with)"
                   : " (arith needs a byte-level model from `sextant ttc train`)");
}

sx_status task_suite_score(const task_suite *s, size_t k, model *m, task_score *out) {
    decoder d;
    sx_status st = task_suite_check(s, m);
    if (!st) st = decoder_init(&d, m, s->def[k]->ctx);
    if (st) return st;
    st = s->def[k]->score(&d, &s->items[k], out);
    decoder_free(&d);
    return st;
}

sx_status task_suite_measure(const task_suite *s, model *m, json_t *line) {
    for (size_t k = 0; k < s->n; k++) {
        task_score r;
        sx_status st = task_suite_score(s, k, m, &r);
        if (st) return st;
        char key[64];
        const char *name = s->def[k]->name;
        snprintf(key, sizeof key, "task_%s_acc", name);
        json_object_set_new(line, key, json_real((double)r.correct / (double)r.n));
        snprintf(key, sizeof key, "task_%s_loss", name);
        json_object_set_new(line, key, json_real(r.loss));
        snprintf(key, sizeof key, "task_%s_n", name);
        json_object_set_new(line, key, json_integer((json_int_t)r.n));
    }
    return SX_OK;
}
