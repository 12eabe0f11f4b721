// Encodes all 313 vectors of gpt-tokenizer 4.0.0's TestPlans.txt (r50k, p50k, p50k_edit, cl100k, o200k)
// with the committed tiktoken rank files and checks the ids exactly; checks the GPT-2 encoder.json +
// vocab.bpe loader gives the same vocabulary as r50k. Inputs: tests/data (see tests/data/README.md).
#include <stdlib.h>
#include <string.h>
#include "support/testlib.h"
#include "tok/vocab_io.h"

static bpe_vocab *load(const char *encoding) {
    static const char *files[][2] = {
        { "r50k_base", "tests/data/r50k_base.tiktoken.gz" }, { "p50k_base", "tests/data/p50k_base.tiktoken.gz" },
        { "p50k_edit", "tests/data/p50k_base.tiktoken.gz" }, { "cl100k_base", "tests/data/cl100k_base.tiktoken.gz" },
        { "o200k_base", "tests/data/o200k_base.tiktoken.gz" },
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        if (strcmp(files[i][0], encoding)) continue;
        bpe_vocab *v = NULL;
        sx_status st = vocab_load_tiktoken(files[i][1], encoding, &v);
        if (st) fprintf(stderr, "load %s: %s\n", encoding, sx_last_error());
        return v;
    }
    return NULL;
}

static void test_plans(void) {
    tok_bytes file = {0};
    CHECK(vocab_read_file("tests/data/TestPlans.txt", &file) == SX_OK);
    CHECK(tok_bytes_append(&file, "\0", 1) == SX_OK);
    const char *names[] = { "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base" };
    bpe_vocab *vocabs[5];
    for (int i = 0; i < 5; i++) CHECK((vocabs[i] = load(names[i])) != NULL);
    char *text = (char *)file.data, *save = NULL;
    int cases = 0, passed = 0;
    char *enc = NULL, *sample = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strncmp(line, "EncodingName: ", 14)) { enc = line + 14; sample = NULL; continue; }
        if (!strncmp(line, "Sample:", 7)) { sample = line[7] ? line + 8 : line + 7; continue; }
        if (strncmp(line, "Encoded: [", 10) || !enc || !sample) continue;
        int which = -1;
        for (int i = 0; i < 5; i++) if (!strcmp(enc, names[i])) which = i;
        CHECK(which >= 0);
        if (which < 0) continue;
        tok_ids want = {0}, got = {0};
        for (char *p = line + 10; *p && *p != ']';) {
            char *end;
            unsigned long id = strtoul(p, &end, 10);
            if (end == p) break;
            tok_ids_push(&want, (uint32_t)id);
            p = end;
            while (*p == ',' || *p == ' ') p++;
        }
        cases++;
        CHECK(bpe_encode(vocabs[which], (const uint8_t *)sample, strlen(sample), false, &got) == SX_OK);
        int ok = got.n == want.n && (got.n == 0 || !memcmp(got.ids, want.ids, got.n * sizeof *got.ids));
        if (!ok) {
            fprintf(stderr, "%s: \"%.60s\": got %zu ids, want %zu;", enc, sample, got.n, want.n);
            for (size_t i = 0; i < got.n && i < 12; i++) fprintf(stderr, " %u/%u", got.ids[i], i < want.n ? want.ids[i] : 0);
            fprintf(stderr, "\n");
        }
        passed += ok;
        tok_bytes back = {0};
        CHECK(bpe_decode(vocabs[which], got.ids, got.n, &back) == SX_OK);
        CHECK(back.n == strlen(sample) && (back.n == 0 || !memcmp(back.data, sample, back.n)));
        tok_bytes_free(&back);
        tok_ids_free(&want);
        tok_ids_free(&got);
        enc = NULL;
    }
    fprintf(stderr, "TestPlans: %d of %d vectors exact\n", passed, cases);
    CHECK(cases == 313);
    CHECK(passed == cases);
    for (int i = 0; i < 5; i++) bpe_vocab_free(vocabs[i]);
    tok_bytes_free(&file);
}

static void test_gpt2_files_equal_r50k(void) {
    bpe_vocab *g = NULL, *r = load("r50k_base");
    if (!CHECK(vocab_load_gpt2("tests/data/gpt2", &g) == SX_OK)) fprintf(stderr, "%s\n", sx_last_error());
    if (!g || !r) return;
    CHECK(g->n_ids == 50257 && r->n_ids == 50257);
    CHECK(g->hash == r->hash);
    CHECK(g->eot == 50256 && r->eot == 50256);
    bpe_vocab_free(g);
    bpe_vocab_free(r);
}

static void test_special_tokens(void) {
    bpe_vocab *v = load("cl100k_base");
    if (!v) return;
    const char *s = "a<|endoftext|>b<|fim_prefix|><|endofprompt|>";
    tok_ids ids = {0}, plain = {0};
    CHECK(bpe_encode(v, (const uint8_t *)s, strlen(s), true, &ids) == SX_OK);
    CHECK(ids.n == 5 && ids.ids[1] == 100257 && ids.ids[3] == 100258 && ids.ids[4] == 100276);
    CHECK(bpe_encode(v, (const uint8_t *)s, strlen(s), false, &plain) == SX_OK);
    for (size_t i = 0; i < plain.n; i++) CHECK(plain.ids[i] < 100256);
    tok_ids_free(&ids);
    tok_ids_free(&plain);
    bpe_vocab_free(v);
}

int main(void) {
    TEST_RUN(test_plans);
    TEST_RUN(test_gpt2_files_equal_r50k);
    TEST_RUN(test_special_tokens);
    return testlib_finish("tok_vectors");
}
