// Tokenizer invariants: pre-tokenizer pieces tile the input and match hand-worked splits; encode/decode
// round-trips on random bytes, invalid UTF-8, empty input and very long words; the O(n log n) merge of long
// pieces equals a slow reference merge; BPE training on tiny corpora gives hand-checked merge lists; the
// sextant vocabulary file round-trips and rejects corruption; corpus documents split on delimiter lines.
#include <stdlib.h>
#include <string.h>
#include "core/rng.h"
#include "support/testlib.h"
#include "tok/bpe_train.h"
#include "tok/corpus.h"
#include "tok/vocab_io.h"

static bpe_vocab *r50k, *cl100k, *o200k;

static int roundtrip(bpe_vocab *v, const uint8_t *s, size_t n) {
    tok_ids ids = {0};
    tok_bytes back = {0};
    int ok = bpe_encode(v, s, n, false, &ids) == SX_OK && bpe_decode(v, ids.ids, ids.n, &back) == SX_OK &&
             back.n == n && (n == 0 || !memcmp(back.data, s, n));
    tok_ids_free(&ids);
    tok_bytes_free(&back);
    return ok;
}

// Joins the pieces of s with '|' for comparison with a hand-worked split.
static void split(pretok_kind k, const char *s, char *out) {
    size_t n = strlen(s), o = 0;
    for (size_t p = 0; p < n;) {
        size_t e = pretok_next(k, (const uint8_t *)s, n, p);
        if (p) out[o++] = '|';
        memcpy(out + o, s + p, e - p);
        o += e - p;
        p = e;
    }
    out[o] = 0;
}

// Expected splits are what node's RegExp gives for gpt-tokenizer's patterns.
static void test_pretok_splits(void) {
    char got[256];
    split(PRETOK_GPT2, "Hello world's  big\n\n  test 123abc!!", got);
    CHECK(!strcmp(got, "Hello| world|'s| | big|\n\n | test| 123|abc|!!"));
    split(PRETOK_CL100K, "I'LL pay 12345 now\r\n  ok  ", got);
    CHECK(!strcmp(got, "I|'LL| pay| |123|45| now|\r\n| | ok|  "));
    split(PRETOK_O200K, "HelloWorld don't x/y\n\n", got);
    CHECK(!strcmp(got, "Hello|World| don't| x|/y|\n\n"));
    split(PRETOK_GPT2, "caf\xc3\xa9 \xe4\xb8\x96\xe7\x95\x8c \xd9\xa3", got); // é letter, CJK letters, Arabic digit
    CHECK(!strcmp(got, "caf\xc3\xa9| \xe4\xb8\x96\xe7\x95\x8c| \xd9\xa3"));
}

static void test_pretok_tiles_any_bytes(void) {
    rng_state r;
    rng_seed(&r, 7);
    uint8_t buf[512];
    for (int iter = 0; iter < 300; iter++) {
        size_t n = 1 + rng_below(&r, sizeof buf);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rng_below(&r, 256);
        for (int k = 0; k < 3; k++) {
            size_t p = 0, pieces = 0;
            while (p < n) {
                size_t e = pretok_next((pretok_kind)k, buf, n, p);
                if (!CHECK(e > p && e <= n)) return;
                p = e;
                pieces++;
            }
            CHECK(p == n && pieces >= 1);
        }
    }
}

static void test_roundtrip_edge_cases(void) {
    bpe_vocab *vs[3] = { r50k, cl100k, o200k };
    rng_state r;
    rng_seed(&r, 11);
    uint8_t *buf = malloc(1 << 16);
    for (int k = 0; k < 3; k++) {
        bpe_vocab *v = vs[k];
        CHECK(roundtrip(v, (const uint8_t *)"", 0));
        tok_ids ids = {0};
        CHECK(bpe_encode(v, (const uint8_t *)"", 0, true, &ids) == SX_OK && ids.n == 0);
        tok_ids_free(&ids);
        const char *bad[] = { "\xff\xfe", "a\xc3", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80", "\xc0\xaf over",
                              "ok \xe2\x82 cut", "\x80\x80\x80" };
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK(roundtrip(v, (const uint8_t *)bad[i], strlen(bad[i])));
        for (int iter = 0; iter < 50; iter++) {
            size_t n = rng_below(&r, 4096);
            for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)rng_below(&r, 256);
            CHECK(roundtrip(v, buf, n));
        }
        // Very long words: 60000 letters, 60000 digits, 60000 spaces, a long run of one emoji.
        memset(buf, 'a', 60000);
        CHECK(roundtrip(v, buf, 60000));
        for (size_t i = 0; i < 60000; i++) buf[i] = (uint8_t)('a' + rng_below(&r, 26));
        CHECK(roundtrip(v, buf, 60000));
        for (size_t i = 0; i < 60000; i++) buf[i] = (uint8_t)('0' + rng_below(&r, 10));
        CHECK(roundtrip(v, buf, 60000));
        memset(buf, ' ', 60000);
        CHECK(roundtrip(v, buf, 60000));
        for (size_t i = 0; i + 4 <= 60000; i += 4) memcpy(buf + i, "\xf0\x9f\x98\x80", 4);
        CHECK(roundtrip(v, buf, 60000));
    }
    free(buf);
}

// The slow reference: repeatedly merge the lowest-ranked adjacent pair (leftmost on ties).
static void ref_merge(const bpe_vocab *v, const uint8_t *p, size_t n, tok_ids *out) {
    size_t *b = malloc((n + 1) * sizeof *b), m = n;
    for (size_t i = 0; i <= n; i++) b[i] = i;
    for (;;) {
        size_t best = 0;
        uint32_t best_rank = TOK_NONE;
        for (size_t k = 0; k + 1 < m; k++) {
            uint32_t rk = bpe_rank(v, p + b[k], b[k + 2] - b[k]);
            if (rk < best_rank) { best_rank = rk; best = k; }
        }
        if (best_rank == TOK_NONE) break;
        memmove(&b[best + 1], &b[best + 2], (m - best - 1) * sizeof *b);
        m--;
    }
    for (size_t k = 0; k < m; k++) tok_ids_push(out, bpe_rank(v, p + b[k], b[k + 1] - b[k]));
    free(b);
}

static void test_long_piece_merge_matches_reference(void) {
    rng_state r;
    rng_seed(&r, 3);
    uint8_t buf[3000];
    const char *alphabet = "etaoinshrdlucmfwypvbgkqjxz";
    for (int iter = 0; iter < 20; iter++) {
        size_t n = iter < 10 ? 3 + rng_below(&r, 250) : 300 + rng_below(&r, 2700);
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)alphabet[rng_below(&r, iter % 2 ? 26 : 5)];
        tok_ids got = {0}, want = {0};
        CHECK(bpe_encode_piece(r50k, buf, n, &got) == SX_OK);
        ref_merge(r50k, buf, n, &want);
        CHECK(got.n == want.n && !memcmp(got.ids, want.ids, got.n * sizeof *got.ids));
        tok_ids_free(&got);
        tok_ids_free(&want);
    }
}

static bpe_vocab *train(const char *text, size_t vocab_size, uint32_t (*merges)[2], size_t *n_merges) {
    bpe_trainer *t = NULL;
    bpe_vocab *v = NULL;
    CHECK(bpe_trainer_create(&t, PRETOK_GPT2) == SX_OK);
    CHECK(bpe_trainer_add_text(t, (const uint8_t *)text, strlen(text)) == SX_OK);
    CHECK(bpe_trainer_run(t, vocab_size, "tiny", &v, merges, n_merges) == SX_OK);
    bpe_trainer_free(t);
    return v;
}

static void test_train_hand_checked(void) {
    // One word "aaabdaaabac": (a,a) x4 first; then (a,b) and (Z=256,a) tie at 2 -> smaller ids (97,98);
    // then (256,257) x2; then all pairs count 1 -> smallest (97,99) "ac".
    uint32_t m[8][2];
    size_t n = 0;
    bpe_vocab *v = train("aaabdaaabac", 261, m, &n);
    uint32_t want[4][2] = { { 97, 97 }, { 97, 98 }, { 256, 257 }, { 97, 99 } };
    CHECK(n == 4 && !memcmp(m, want, sizeof want));
    CHECK(v && v->n_ids == 261 && v->eot == 260);
    CHECK(v && v->len[258] == 4 && !memcmp(v->blob + v->off[258], "aaab", 4));
    bpe_vocab_free(v);
    // Words "ab" x1, " ab" x2, " cd" x1: (a,b) 3; (' ',256) 2; then (' ',c) and (c,d) tie at 1 -> (32,99);
    // then (258,100). No pairs remain, so training stops at 4 merges even though 43 were allowed.
    v = train("ab ab ab cd", 300, m, &n);
    uint32_t want2[4][2] = { { 97, 98 }, { 32, 256 }, { 32, 99 }, { 258, 100 } };
    CHECK(n == 4 && !memcmp(m, want2, sizeof want2));
    CHECK(v && v->n_ids == 261 && v->eot == 260);
    tok_ids ids = {0};
    CHECK(v && bpe_encode(v, (const uint8_t *)"ab cd<|endoftext|>", 18, true, &ids) == SX_OK);
    CHECK(ids.n == 3 && ids.ids[0] == 256 && ids.ids[1] == 259 && ids.ids[2] == 260);
    tok_ids_free(&ids);
    bpe_vocab_free(v);
}

static void test_train_deterministic_and_saved(void) {
    const char *text = "the cat sat on the mat; the cats sat on the mats. The end, the end!\n\n123 4567 the";
    uint32_t m1[100][2], m2[100][2];
    size_t n1, n2;
    bpe_vocab *a = train(text, 320, m1, &n1), *b = train(text, 320, m2, &n2);
    CHECK(n1 == n2 && n1 > 20 && !memcmp(m1, m2, n1 * sizeof *m1));
    CHECK(a && b && a->hash == b->hash);
    const char *path = "build/tests/tiny.sxv";
    CHECK(vocab_save_sx(a, path) == SX_OK);
    bpe_vocab *c = NULL;
    CHECK(vocab_load(path, &c) == SX_OK);
    CHECK(c && c->hash == a->hash && c->n_ids == a->n_ids && c->eot == a->eot && c->pretok == PRETOK_GPT2);
    CHECK(c && roundtrip(c, (const uint8_t *)text, strlen(text)));
    // Corrupt one byte: the checksum must catch it.
    tok_bytes file = {0};
    CHECK(vocab_read_file(path, &file) == SX_OK);
    file.data[file.n / 2] ^= 1;
    FILE *f = fopen(path, "wb");
    fwrite(file.data, 1, file.n, f);
    fclose(f);
    bpe_vocab *d = NULL;
    CHECK(vocab_load_sx(path, &d) == SX_ERR_FORMAT && strstr(sx_last_error(), "checksum"));
    f = fopen(path, "wb");
    fwrite("SXVOCAB", 1, 7, f);
    fclose(f);
    CHECK(vocab_load_sx(path, &d) == SX_ERR_FORMAT && strstr(sx_last_error(), "magic"));
    tok_bytes_free(&file);
    bpe_vocab_free(a);
    bpe_vocab_free(b);
    bpe_vocab_free(c);
}

static void test_corpus_documents(void) {
    const char *t = "first doc\nline two\n<|endoftext|>\nsecond <|endoftext|> inline\n<|endoftext|>\n<|endoftext|>\ntail";
    size_t pos = 0, len, n = strlen(t);
    const uint8_t *doc;
    const char *want[] = { "first doc\nline two\n", "second <|endoftext|> inline\n", "tail" };
    for (int i = 0; i < 3; i++) {
        CHECK(corpus_next_doc((const uint8_t *)t, n, &pos, &doc, &len) == 1);
        CHECK(len == strlen(want[i]) && !memcmp(doc, want[i], len));
    }
    CHECK(corpus_next_doc((const uint8_t *)t, n, &pos, &doc, &len) == 0);
}

int main(void) {
    CHECK(vocab_load("tests/data/r50k_base.tiktoken.gz", &r50k) == SX_OK);
    CHECK(vocab_load("tests/data/cl100k_base.tiktoken.gz", &cl100k) == SX_OK);
    CHECK(vocab_load("tests/data/o200k_base.tiktoken.gz", &o200k) == SX_OK);
    if (!r50k || !cl100k || !o200k) return testlib_finish("tok");
    TEST_RUN(test_pretok_splits);
    TEST_RUN(test_pretok_tiles_any_bytes);
    TEST_RUN(test_roundtrip_edge_cases);
    TEST_RUN(test_long_piece_merge_matches_reference);
    TEST_RUN(test_train_hand_checked);
    TEST_RUN(test_train_deterministic_and_saved);
    TEST_RUN(test_corpus_documents);
    bpe_vocab_free(r50k);
    bpe_vocab_free(cl100k);
    bpe_vocab_free(o200k);
    return testlib_finish("tok");
}
