// Token shards and the batch loader: write/read round trip at both token widths; the reader rejects a wrong
// magic, a truncated file, a vocab mismatch, a bad checksum and implausible headers with clear messages;
// the loader covers every target token exactly once per epoch, is deterministic per seed, and resumes
// exactly from a saved position in both modes.
#include <stdlib.h>
#include <string.h>
#include "data/loader.h"
#include "support/testlib.h"

static const char *path = "build/tests/test_shard.bin";

// Writes n tokens i*7 % vocab (eot = vocab - 1 every 50 tokens).
static void write_shard(uint32_t vocab, size_t n) {
    shard_writer w;
    CHECK(shard_writer_open(&w, path, vocab, vocab - 1, 0xABCDEF) == SX_OK);
    for (size_t i = 0; i < n; i++) {
        uint32_t id = i % 50 == 0 ? vocab - 1 : (uint32_t)((i * 7) % (vocab - 1));
        CHECK(shard_writer_append(&w, &id, 1) == SX_OK);
    }
    CHECK(shard_writer_close(&w) == SX_OK);
}

static uint8_t *slurp(size_t *n) {
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n);
    CHECK(fread(b, 1, *n, f) == *n);
    fclose(f);
    return b;
}

static void spit(const uint8_t *b, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
}

static void test_roundtrip_widths(void) {
    uint32_t vocabs[] = { 300, 65536, 65537, 200019 };
    for (int k = 0; k < 4; k++) {
        write_shard(vocabs[k], 1000);
        shard_file s;
        if (!CHECK(shard_open(&s, path, vocabs[k]) == SX_OK)) continue;
        CHECK(s.h.token_bytes == (vocabs[k] <= 65536 ? 2u : 4u));
        CHECK(s.h.n_tokens == 1000 && s.h.n_docs == 20 && s.h.vocab_hash == 0xABCDEF && s.h.eot == vocabs[k] - 1);
        CHECK(s.map_len == 64 + 1000 * s.h.token_bytes);
        shard_header h;
        CHECK(shard_read_header(path, &h) == SX_OK && memcmp(&h, &s.h, sizeof h) == 0);
        int ok = 1;
        for (size_t i = 0; i < 1000; i++)
            ok &= shard_token(&s, i) == (i % 50 == 0 ? vocabs[k] - 1 : (uint32_t)((i * 7) % (vocabs[k] - 1)));
        CHECK(ok);
        shard_close(&s);
    }
    shard_writer w;
    uint32_t big = 300;
    CHECK(shard_writer_open(&w, path, 300, 299, 0) == SX_OK);
    CHECK(shard_writer_append(&w, &big, 1) == SX_ERR_ARG && strstr(sx_last_error(), "outside the vocabulary"));
    shard_writer_abort(&w);
}

// shard_open must refuse the file with status want and a message containing words; so must
// shard_read_header when the fault is one it can see (header_fault: anything but the tokens).
static void expect_reject_as(sx_status want, const char *words, size_t vocab, bool header_fault) {
    shard_file s;
    shard_header h;
    sx_status st = shard_open(&s, path, vocab);
    if (!CHECK(st == want) || !CHECK(strstr(sx_last_error(), words) != NULL))
        fprintf(stderr, "    status %d, message: %s (wanted '%s')\n", st, sx_last_error(), words);
    st = shard_read_header(path, &h);
    if (!header_fault) {
        CHECK(st == SX_OK);
        return;
    }
    if (!CHECK(st == want) || !CHECK(strstr(sx_last_error(), words) != NULL))
        fprintf(stderr, "    header: status %d, message: %s (wanted '%s')\n", st, sx_last_error(), words);
}
static void expect_reject(sx_status want, const char *words, size_t vocab) { expect_reject_as(want, words, vocab, true); }

static void test_rejects(void) {
    write_shard(300, 1000);
    size_t n;
    uint8_t *good = slurp(&n), *b = malloc(n);
    memcpy(b, good, n); b[0] = 'X'; spit(b, n);
    expect_reject(SX_ERR_FORMAT, "bad magic", 0);
    spit(good, n - 10);
    expect_reject(SX_ERR_FORMAT, "truncated", 0);
    spit(good, 20);
    expect_reject(SX_ERR_FORMAT, "truncated", 0);
    memcpy(b, good, n); b[n - 3] ^= 0x10; spit(b, n);
    expect_reject_as(SX_ERR_FORMAT, "token checksum mismatch", 0, false);
    memcpy(b, good, n); b[33] ^= 1; spit(b, n);
    expect_reject(SX_ERR_FORMAT, "header checksum mismatch", 0);
    memcpy(b, good, n); b[8] = 9; spit(b, n);
    expect_reject(SX_ERR_FORMAT, "version 9", 0);
    spit(good, n);
    expect_reject_as(SX_ERR_MISMATCH, "300-token vocabulary but the model has 8192", 8192, false);
    shard_file s;
    CHECK(shard_open(&s, path, 300) == SX_OK);
    CHECK(shard_check_vocab(&s, 301) == SX_ERR_MISMATCH);
    CHECK(shard_check_vocab(&s, 300) == SX_OK);
    shard_close(&s);
    remove(path);
    expect_reject(SX_ERR_IO, "cannot open shard", 0);
    free(good);
    free(b);
}

static void test_epoch_coverage_and_resume(void) {
    const size_t T = 16, B = 3, N = 1000;   // 999 / 16 = 62 windows per epoch
    write_shard(300, N);
    data_loader a, b;
    if (!CHECK(loader_open(&a, path, T, LOADER_EPOCH, 42, 300) == SX_OK)) return;
    CHECK(a.n_windows == 62);
    int *seen = calloc(N, sizeof *seen);
    int32_t *batch = malloc(B * (T + 1) * sizeof *batch), *batch2 = malloc(B * (T + 1) * sizeof *batch2);
    // 62 windows = 20 full batches + 2 windows; draw exactly one epoch window by window.
    for (size_t w = 0; w < 62; w++) {
        loader_next(&a, 1, batch);
        uint64_t start = a.perm[a.cursor - 1] * T;
        for (size_t t = 1; t <= T; t++) {
            seen[start + t]++;
            CHECK(batch[t] == (int32_t)shard_token(&a.shard, start + t));
        }
    }
    int once = 1;
    for (size_t i = 1; i <= 62 * T; i++) once &= seen[i] == 1;
    CHECK(once);
    CHECK(a.epoch == 0 && a.cursor == 62);
    // Save mid-epoch-2, continue both, compare.
    loader_next(&a, B, batch);
    CHECK(a.epoch == 1);
    loader_pos pos;
    loader_get_pos(&a, &pos);
    CHECK(loader_open(&b, path, T, LOADER_EPOCH, 0, 300) == SX_OK);
    CHECK(loader_set_pos(&b, &pos) == SX_OK);
    int same = 1;
    for (int step = 0; step < 50; step++) {
        loader_next(&a, B, batch);
        loader_next(&b, B, batch2);
        same &= !memcmp(batch, batch2, B * (T + 1) * sizeof *batch);
    }
    CHECK(same);
    pos.mode = LOADER_RANDOM;
    CHECK(loader_set_pos(&b, &pos) == SX_ERR_MISMATCH);
    loader_close(&a);
    loader_close(&b);
    free(seen);
    free(batch);
    free(batch2);
}

static void test_random_mode_deterministic_and_resume(void) {
    const size_t T = 8, B = 4;
    write_shard(300, 500);
    data_loader a, b, c;
    CHECK(loader_open(&a, path, T, LOADER_RANDOM, 7, 0) == SX_OK);
    CHECK(loader_open(&b, path, T, LOADER_RANDOM, 7, 0) == SX_OK);
    CHECK(loader_open(&c, path, T, LOADER_RANDOM, 8, 0) == SX_OK);
    int32_t x[4 * 9], y[4 * 9], z[4 * 9];
    loader_next(&a, B, x);
    loader_next(&b, B, y);
    loader_next(&c, B, z);
    CHECK(!memcmp(x, y, sizeof x) && memcmp(x, z, sizeof x));
    loader_pos pos;
    loader_get_pos(&a, &pos);
    CHECK(pos.cursor == 4 && pos.seed == 7);
    CHECK(loader_set_pos(&c, &pos) == SX_OK);
    loader_next(&a, B, x);
    loader_next(&c, B, z);
    CHECK(!memcmp(x, z, sizeof x));
    // Windows are consecutive tokens of the shard.
    int ok = 1;
    for (size_t r = 0; r < B; r++) {
        int found = 0;
        for (uint64_t s = 0; s + T < 500 && !found; s++) {
            int m = 1;
            for (size_t t = 0; t <= T; t++) m &= x[r * (T + 1) + t] == (int32_t)shard_token(&a.shard, s + t);
            found = m;
        }
        ok &= found;
    }
    CHECK(ok);
    data_loader d;
    CHECK(loader_open(&d, path, 600, LOADER_RANDOM, 1, 0) == SX_ERR_ARG && strstr(sx_last_error(), "fewer than one window"));
    loader_close(&a);
    loader_close(&b);
    loader_close(&c);
    remove(path);
}

int main(void) {
    TEST_RUN(test_roundtrip_widths);
    TEST_RUN(test_rejects);
    TEST_RUN(test_epoch_coverage_and_resume);
    TEST_RUN(test_random_mode_deterministic_and_resume);
    return testlib_finish("shard");
}
