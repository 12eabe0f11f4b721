// Downstream tasks (infer/tasks): every builder is deterministic from its seed (same seed, same items; another
// seed, other items; fewer items, the first ones) and builds what it says (cloze: a whole word that occurs
// earlier in its passage; choice: the true continuation is the shard's next tokens, the others come from other
// documents); every scorer agrees with a brute-force scorer that runs the training forward on each candidate in
// full; arith's greedy generation equals greedy decoding by the full forward; greedy exact match is true
// exactly for the model's own argmax continuation; the Wilson interval; the suite's errors and its metrics
// fields.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/rng.h"
#include "infer/tasks.h"
#include "infer/ttc_experiment.h"
#include "model/model.h"
#include "support/modelcheck.h"
#include "support/testlib.h"
#include "tok/vocab_io.h"

static char dir[] = "/tmp/sextant_test_tasks_XXXXXX";
static char shard_path[128];
static bpe_vocab *vocab;
static shard_file shard;

// A vocabulary of the 256 bytes, some whole-word tokens (" cat") and word pieces ("ter"), and <|endoftext|>.
static bpe_vocab *small_vocab(void) {
    static const char *const extra[] = {" the", " cat", " dog", " sat", " on", " mat", " and", " ran", " house",
                                        " garden", " river", " stone", "ter", "ing", " wa", " bright", " morning"};
    bpe_vocab *v;
    if (!CHECK(bpe_vocab_create(&v, "test-words", PRETOK_GPT2, 300) == SX_OK)) return NULL;
    uint32_t id = 0;
    for (; id < 256; id++) {
        uint8_t b = (uint8_t)id;
        bpe_vocab_add(v, id, &b, 1, TOK_KIND_NORMAL);
    }
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++, id++)
        bpe_vocab_add(v, id, (const uint8_t *)extra[i], strlen(extra[i]), TOK_KIND_NORMAL);
    bpe_vocab_add(v, id, (const uint8_t *)"<|endoftext|>", 13, TOK_KIND_SPECIAL);
    CHECK(bpe_vocab_finish(v) == SX_OK);
    return v;
}

// Documents of random sentences over a small word list (words recur within a passage, as the cloze needs),
// written as a shard with the vocabulary beside it.
static void write_text(void) {
    static const char *const words[] = {"the", "cat", "dog", "sat", "on", "mat", "and", "ran", "house", "garden",
                                        "river", "stone", "water", "bright", "morning", "quietly", "over", "a"};
    const size_t nw = sizeof words / sizeof *words;
    vocab = small_vocab();
    char path[128];
    snprintf(path, sizeof path, "%s/vocab.sxv", dir);
    CHECK(vocab_save_sx(vocab, path) == SX_OK);
    snprintf(shard_path, sizeof shard_path, "%s/val.shard", dir);
    shard_writer w;
    CHECK(shard_writer_open(&w, shard_path, (uint32_t)vocab->n_ids, vocab->eot, vocab->hash) == SX_OK);
    rng_state r;
    rng_seed(&r, 11);
    for (int doc = 0; doc < 12; doc++) {
        char text[8192];
        size_t n = 0;
        for (int s = 0; s < 40; s++) {
            int len = 4 + (int)rng_below(&r, 6);
            for (int k = 0; k < len; k++)
                n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", k || s ? " " : "", words[rng_below(&r, nw)]);
            n += (size_t)snprintf(text + n, sizeof text - n, ".");
        }
        tok_ids ids = {0};
        CHECK(tok_ids_push(&ids, vocab->eot) == SX_OK);
        CHECK(bpe_encode(vocab, (const uint8_t *)text, n, false, &ids) == SX_OK);
        CHECK(shard_writer_append(&w, ids.ids, ids.n) == SX_OK);
        tok_ids_free(&ids);
    }
    CHECK(shard_writer_close(&w) == SX_OK);
    CHECK(shard_open(&shard, shard_path, 0) == SX_OK);
}

// Whether the first n items of a and b are the same.
static bool same_items(const task_items *a, const task_items *b, size_t n) {
    if (a->n < n || b->n < n || a->n_cand != b->n_cand) return false;
    size_t K = a->n_cand, last = a->cand_off[n * K - 1] + a->cand_len[n * K - 1];
    return !memcmp(a->tok, b->tok, last * sizeof *a->tok) && !memcmp(a->answer, b->answer, n * sizeof *a->answer) &&
           !memcmp(a->cand_len, b->cand_len, n * K * sizeof *a->cand_len);
}

// Same seed, same items; another seed, other items; a smaller draw is the larger one's first items.
static void check_deterministic(const char *name, size_t n) {
    const task_def *t = task_find(name);
    task_text src = {.shard = &shard, .vocab = vocab};
    task_items a, b, c, half;
    if (!CHECK(t && t->build(&src, 1, n, &a) == SX_OK)) return;
    CHECK(t->build(&src, 1, n, &b) == SX_OK);
    CHECK(t->build(&src, 2, n, &c) == SX_OK);
    CHECK(t->build(&src, 1, n / 2, &half) == SX_OK);
    CHECK(a.n == n && same_items(&a, &b, n));
    if (!CHECK(!same_items(&a, &c, n))) fprintf(stderr, "  %s: seeds 1 and 2 built the same items\n", name);
    CHECK(half.n == n / 2 && same_items(&a, &half, n / 2));
    task_items_free(&a);
    task_items_free(&b);
    task_items_free(&c);
    task_items_free(&half);
}

static void test_builders_deterministic(void) {
    check_deterministic("cloze", 30);
    check_deterministic("choice", 30);
    check_deterministic("arith", 30);
}

static bool letters_only(const bpe_vocab *v, int32_t id, bool leading_space) {
    const uint8_t *b = v->blob + v->off[id];
    size_t n = v->len[id], k = leading_space;
    if (leading_space && (n < 2 || b[0] != ' ')) return false;
    for (; k < n; k++)
        if (!((b[k] >= 'a' && b[k] <= 'z') || (b[k] >= 'A' && b[k] <= 'Z'))) return false;
    return n > 0;
}

// Position of the item's tokens (context then the true candidate) in the shard, or -1.
static long find_in_shard(const int32_t *seq, size_t n) {
    for (uint64_t p = 0; p + n <= shard.h.n_tokens; p++) {
        size_t k = 0;
        while (k < n && (int32_t)shard_token(&shard, p + k) == seq[k]) k++;
        if (k == n) return (long)p;
    }
    return -1;
}

static void test_cloze_items(void) {
    task_text src = {.shard = &shard, .vocab = vocab};
    task_items it;
    if (!CHECK(task_find("cloze")->build(&src, 3, 40, &it) == SX_OK)) return;
    for (size_t i = 0; i < it.n; i++) {
        const int32_t *ctx = it.tok + it.ctx_off[i], *w = it.tok + it.cand_off[i];
        size_t L = it.cand_len[i];
        CHECK(it.ctx_len[i] + L == TASK_CLOZE_CTX);
        CHECK(letters_only(vocab, w[0], true) && it.cand_bytes[i] - 1 >= TASK_CLOZE_MIN_LETTERS);
        for (size_t k = 1; k < L; k++) CHECK(letters_only(vocab, w[k], false));
        bool earlier = false;   // the word occurs earlier in its passage
        for (size_t p = 0; p + L < it.ctx_len[i] && !earlier; p++)
            earlier = !memcmp(ctx + p, w, L * sizeof *w) && !letters_only(vocab, ctx[p + L], false);
        CHECK(earlier);
        int32_t seq[TASK_CLOZE_CTX + 1];
        memcpy(seq, ctx, it.ctx_len[i] * sizeof *seq);
        memcpy(seq + it.ctx_len[i], w, L * sizeof *seq);
        long at = find_in_shard(seq, TASK_CLOZE_CTX);
        // the passage is the shard's text and ends at a word boundary
        if (CHECK(at >= 0)) CHECK(!letters_only(vocab, (int32_t)shard_token(&shard, (uint64_t)at + TASK_CLOZE_CTX), false));
    }
    task_items_free(&it);
}

static void test_choice_items(void) {
    task_text src = {.shard = &shard, .vocab = vocab};
    task_items it;
    if (!CHECK(task_find("choice")->build(&src, 4, 40, &it) == SX_OK)) return;
    size_t at_answer[TASK_CHOICES] = {0};
    for (size_t i = 0; i < it.n; i++) {
        const size_t K = it.n_cand, a = it.answer[i];
        at_answer[a]++;
        int32_t seq[TASK_CHOICE_CTX + TASK_CHOICE_MAX];
        memcpy(seq, it.tok + it.ctx_off[i], TASK_CHOICE_CTX * sizeof *seq);
        for (size_t c = 0; c < K; c++) {
            size_t L = it.cand_len[i * K + c];
            CHECK(L >= TASK_CHOICE_MIN && L <= TASK_CHOICE_MAX);
            CHECK(letters_only(vocab, it.tok[it.cand_off[i * K + c]], true));
            memcpy(seq + TASK_CHOICE_CTX, it.tok + it.cand_off[i * K + c], L * sizeof *seq);
            long p = find_in_shard(seq, TASK_CHOICE_CTX + L);   // only the true one continues its passage
            CHECK((p >= 0) == (c == a));
        }
    }
    for (size_t c = 0; c < TASK_CHOICES; c++) CHECK(at_answer[c] > 0);   // the answer's slot is drawn
    task_items_free(&it);
}

// Brute force: the training forward over ctx (ctx_len tokens) + candidate c of item i, log-softmax at every
// candidate position.
static void brute_ll(model *m, const task_items *it, const int32_t *ctx, size_t ctx_len, size_t i, size_t c, double *ll,
                     bool *greedy) {
    size_t K = it->n_cand, L = it->cand_len[i * K + c], T = ctx_len + L - 1, V = m->cfg.vocab;
    int32_t *seq = malloc((T + 1) * sizeof *seq);
    float *logits = malloc(T * V * sizeof *logits);
    memcpy(seq, ctx, ctx_len * sizeof *seq);
    memcpy(seq + ctx_len, it->tok + it->cand_off[i * K + c], L * sizeof *seq);
    CHECK(model_reserve(m, 1, T) == SX_OK);
    double loss;
    CHECK(model_loss(m, seq, logits, &loss) == SX_OK);
    *ll = 0, *greedy = true;
    for (size_t t = ctx_len - 1; t < T; t++) {
        const float *z = logits + t * V;
        size_t best = 0;
        double sum = 0;
        for (size_t v = 1; v < V; v++)
            if (z[v] > z[best]) best = v;
        for (size_t v = 0; v < V; v++) sum += exp((double)z[v] - z[best]);
        *ll += z[seq[t + 1]] - z[best] - log(sum);
        *greedy = *greedy && best == (size_t)seq[t + 1];
    }
    free(seq);
    free(logits);
}

static void random_model(const char *desc, size_t vocab_size, model *m) {
    model_config c;
    CHECK(model_config_parse(desc, vocab_size, &c) == SX_OK);
    CHECK(model_init(m, &c) == SX_OK);
    modelcheck_randomize(m, 5);
}

// The scorer's accuracy and loss against the same numbers from brute-force log-likelihoods.
static void check_scorer(const char *name, const char *desc, size_t vocab_size, size_t n) {
    const task_def *t = task_find(name);
    task_text src = {.shard = &shard, .vocab = vocab};
    task_items it;
    model m;
    if (!CHECK(t->build(&src, 7, n, &it) == SX_OK)) return;
    random_model(desc, vocab_size, &m);
    decoder d;
    CHECK(decoder_init(&d, &m, t->ctx) == SX_OK);
    task_score got;
    CHECK(t->score(&d, &it, &got) == SX_OK);
    size_t K = it.n_cand, correct = 0;
    double loss = 0, worst = 0;
    for (size_t i = 0; i < it.n; i++) {
        double ll[TASK_CHOICES], ll_dec[TASK_CHOICES];
        bool greedy[TASK_CHOICES], greedy_dec[TASK_CHOICES];
        double null_ll[TASK_CHOICES];
        bool pmi = !strcmp(name, "choice_pmi"), null_greedy;
        int32_t eot = (int32_t)vocab->eot;   // choice_pmi's null context: a document's start
        if (pmi) CHECK(it.tok[it.ctx_off[i] - 1] == eot);
        for (size_t c = 0; c < K; c++) {
            brute_ll(&m, &it, it.tok + it.ctx_off[i], it.ctx_len[i], i, c, &ll[c], &greedy[c]);
            if (pmi) brute_ll(&m, &it, &eot, 1, i, c, &null_ll[c], &null_greedy);
        }
        CHECK(task_candidates_ll(&d, &it, i, ll_dec, greedy_dec) == SX_OK);
        for (size_t c = 0; c < K; c++) {
            worst = fmax(worst, fabs(ll_dec[c] - ll[c]) / (1 + fabs(ll[c])));
            CHECK(greedy_dec[c] == greedy[c]);
        }
        size_t a = it.answer[i], best = 0;
        for (size_t c = 1; c < K; c++)
            if (pmi ? ll[c] - null_ll[c] > ll[best] - null_ll[best]
                    : ll[c] / it.cand_bytes[i * K + c] > ll[best] / it.cand_bytes[i * K + best]) best = c;
        if (!strcmp(name, "cloze")) correct += greedy[0], loss -= ll[0];
        else if (!strncmp(name, "choice", 6)) correct += best == a, loss -= ll[a] / (double)it.cand_len[i * K + a];
        else loss -= ll[0] / (double)it.cand_len[i];
    }
    if (!CHECK(worst < 1e-4)) fprintf(stderr, "  %s: decoder vs full forward log-likelihood rel err %g\n", name, worst);
    CHECK(got.n == it.n);
    if (strcmp(name, "arith")) CHECK(got.correct == correct);
    CHECK_CLOSE(got.loss, loss / (double)it.n, 1e-5, 1e-6);
    decoder_free(&d);
    model_free(&m);
    task_items_free(&it);
}

static void test_scorers_match_brute_force(void) {
    check_scorer("cloze", "d2-w32-hd8-kv2", vocab->n_ids, 20);
    check_scorer("choice", "d2-w32-hd8-kv2", vocab->n_ids, 20);
    check_scorer("choice", "d2-w32-hd8-mla-dc16", vocab->n_ids, 8);   // another mixer's cache
    check_scorer("choice_pmi", "d2-w32-hd8-kv2", vocab->n_ids, 20);
    check_scorer("arith", "d2-w32-hd8", ARITH_VOCAB, 6);
}

// Greedy exact match: an item whose word is the model's own argmax continuation is correct, and stops being
// so when one of its tokens changes.
static void test_greedy_exact_match(void) {
    model m;
    random_model("d2-w32-hd8", vocab->n_ids, &m);
    size_t V = m.cfg.vocab, ctx = 10;
    int32_t seq[16];
    rng_state r;
    rng_seed(&r, 9);
    for (size_t k = 0; k < ctx; k++) seq[k] = (int32_t)rng_below(&r, V);
    float *logits = malloc(16 * V * sizeof *logits);
    for (size_t k = ctx; k < ctx + 3; k++) {   // extend by the argmax, one token at a time
        seq[k] = 0;
        CHECK(model_reserve(&m, 1, k) == SX_OK);
        double loss;
        CHECK(model_loss(&m, seq, logits, &loss) == SX_OK);
        size_t best = 0;
        for (size_t v = 1; v < V; v++)
            if (logits[(k - 1) * V + v] > logits[(k - 1) * V + best]) best = v;
        seq[k] = (int32_t)best;
    }
    size_t ctx_off = 0, ctx_len = ctx, cand_off = ctx, cand_len = 3, answer = 0;
    double bytes = 3;
    task_items it = {.n = 1, .n_cand = 1, .tok = seq, .ctx_off = &ctx_off, .ctx_len = &ctx_len, .cand_off = &cand_off,
                     .cand_len = &cand_len, .answer = &answer, .cand_bytes = &bytes};
    decoder d;
    CHECK(decoder_init(&d, &m, 32) == SX_OK);
    double ll;
    bool greedy;
    CHECK(task_candidates_ll(&d, &it, 0, &ll, &greedy) == SX_OK);
    CHECK(greedy && ll < 0);
    seq[ctx + 2] = (seq[ctx + 2] + 1) % (int32_t)V;
    CHECK(task_candidates_ll(&d, &it, 0, &ll, &greedy) == SX_OK);
    CHECK(!greedy);
    decoder_free(&d);
    model_free(&m);
    free(logits);
}

// arith's greedy generation against greedy decoding by the full training forward, re-run on the whole
// prefix for every new token: the same text, token for token, on a random byte-level model.
static void test_arith_generation_brute_force(void) {
    model m;
    random_model("d1-w16-hd8", ARITH_VOCAB, &m);
    decoder d;
    CHECK(decoder_init(&d, &m, task_find("arith")->ctx) == SX_OK);
    arith_problem p[3];
    arith_split(5, 3, 1, 3, 2, p);
    int32_t *seq = malloc(TTC_CTX * sizeof *seq);
    float *logits = malloc(TTC_CTX * ARITH_VOCAB * sizeof *logits);
    for (size_t q = 0; q < 3; q++) {
        char got[TTC_MAX_TEXT], want[TTC_MAX_TEXT];
        bool correct;
        CHECK(task_arith_solve(&d, &p[q], got, &correct) == SX_OK);
        size_t np = arith_prompt_tokens(&p[q], seq, TTC_CTX), n = np;
        // generation stops at end-of-text or once the sequence fills the context but one position
        while (n < TTC_CTX - 1 && (n == np || seq[n - 1] != ARITH_EOT)) {
            seq[n] = 0;
            CHECK(model_reserve(&m, 1, n) == SX_OK);
            double loss;
            CHECK(model_loss(&m, seq, logits, &loss) == SX_OK);
            size_t best = 0;
            for (size_t v = 1; v < ARITH_VOCAB; v++)
                if (logits[(n - 1) * ARITH_VOCAB + v] > logits[(n - 1) * ARITH_VOCAB + best]) best = v;
            seq[n++] = (int32_t)best;
        }
        arith_detokenize(seq + np, n - np, want, sizeof want);
        if (!CHECK(!strcmp(got, want) && strlen(got) > 10)) fprintf(stderr, "  problem %zu: '%s' vs brute force '%s'\n", q, got, want);
        CHECK(correct == arith_check_final(&p[q], want));
    }
    free(seq);
    free(logits);
    decoder_free(&d);
    model_free(&m);
}

static void test_wilson(void) {
    double lo, hi;
    task_wilson(47, 200, 1.96, &lo, &hi);
    CHECK_CLOSE(lo, 0.18157345326946356, 1e-9, 0);
    CHECK_CLOSE(hi, 0.29841492986724655, 1e-9, 0);
    task_wilson(0, 200, 1.96, &lo, &hi);   // no successes: the interval still has width
    CHECK(lo == 0);
    CHECK_CLOSE(hi, 0.018846005918320894, 1e-9, 0);
    task_wilson(10, 10, 1.96, &lo, &hi);
    CHECK_CLOSE(lo, 0.7224598312333834, 1e-9, 0);
    CHECK(hi == 1);
}

static void test_suite(void) {
    task_suite s;
    CHECK(task_suite_open(&s, "cloze,bogus", shard_path, "", 10, 1) == SX_ERR_ARG);
    CHECK(strstr(sx_last_error(), "unknown task 'bogus' (tasks: cloze, choice, choice_pmi, arith)") != NULL);
    CHECK(task_suite_open(&s, "cloze", "/nonexistent/val.shard", "", 10, 1) != SX_OK);
    CHECK(strstr(sx_last_error(), "/nonexistent/val.shard") != NULL);
    CHECK(task_suite_open(&s, "choice", "", "", 10, 1) == SX_ERR_ARG);
    CHECK(task_suite_open(&s, "cloze,arith", shard_path, "", 10, 1) == SX_ERR_ARG);
    CHECK(task_suite_open(&s, "cloze", shard_path, "", 5000, 1) == SX_ERR_ARG);   // more than the text holds
    CHECK(strstr(sx_last_error(), "usable passages") != NULL);
    if (!CHECK(task_suite_open(&s, "cloze,choice", shard_path, "", 12, 1) == SX_OK)) return;
    model m, other;
    random_model("d1-w16-hd8", vocab->n_ids, &m);
    random_model("d1-w16-hd8", ARITH_VOCAB, &other);
    CHECK(task_suite_check(&s, &other) == SX_ERR_MISMATCH);
    json_t *line = json_object();
    CHECK(task_suite_measure(&s, &m, line) == SX_OK);
    CHECK(json_integer_value(json_object_get(line, "task_cloze_n")) == 12);
    CHECK(json_integer_value(json_object_get(line, "task_choice_n")) == 12);
    double acc = json_real_value(json_object_get(line, "task_choice_acc"));
    CHECK(acc >= 0 && acc <= 1 && json_real_value(json_object_get(line, "task_cloze_loss")) > 0);
    CHECK(json_object_size(line) == 6);
    json_decref(line);
    model_free(&m);
    model_free(&other);
    task_suite_free(&s);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    write_text();
    TEST_RUN(test_builders_deterministic);
    TEST_RUN(test_cloze_items);
    TEST_RUN(test_choice_items);
    TEST_RUN(test_scorers_match_brute_force);
    TEST_RUN(test_greedy_exact_match);
    TEST_RUN(test_arith_generation_brute_force);
    TEST_RUN(test_wilson);
    TEST_RUN(test_suite);
    shard_close(&shard);
    bpe_vocab_free(vocab);
    char path[160];
    snprintf(path, sizeof path, "%s/vocab.sxv", dir);
    unlink(path);
    unlink(shard_path);
    rmdir(dir);
    return testlib_finish("tasks");
}
