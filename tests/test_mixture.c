// The data mixture (data/mixture.h): the spec reader accepts a good spec and refuses bad ones with the
// line named; the sampler draws each source with its weight within sampling error (a 4-sigma binomial
// band, and a chi-square over the sources), every window comes whole from one source, and the stream is
// deterministic per seed and differs between seeds; a run's per-source validation losses are read by name;
// a cap on unique tokens keeps every window inside it.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "data/mixture.h"
#include "runs/rundir.h"
#include "support/testlib.h"

#define DIR "build/tests/mixture_sampler"

// Source k's shard holds only ids in [100k + 1, 100k + 90], so a window tells its source.
static void write_source(const char *path, uint32_t k, size_t n) {
    shard_writer w;
    CHECK(shard_writer_open(&w, path, 1024, 0, 0x5EED) == SX_OK);
    for (size_t i = 0; i < n; i++) {
        uint32_t id = 100 * k + 1 + (uint32_t)(i % 90);
        CHECK(shard_writer_append(&w, &id, 1) == SX_OK);
    }
    CHECK(shard_writer_close(&w) == SX_OK);
}

static void write_spec(const char *text) {
    FILE *f = fopen(DIR "/m.mix", "w");
    fputs(text, f);
    fclose(f);
}

static void setup(void) {
    CHECK(system("mkdir -p " DIR) == 0);
    write_source(DIR "/a.shard", 0, 5000);
    write_source(DIR "/b.shard", 1, 3000);
    write_source(DIR "/c.shard", 2, 8000);
}

static void test_spec(void) {
    mixture_spec m;
    write_spec("# comment\nsource a 5 a.shard a.shard\nsource b-2 3 b.shard /abs/b.shard  # trailing\nsource c 2 c.shard c.shard\n");
    CHECK(mixture_spec_load(DIR "/m.mix", &m) == SX_OK);
    CHECK(m.n == 3);
    CHECK_CLOSE(m.src[0].weight, 0.5, 1e-12, 0);
    CHECK_CLOSE(m.src[2].weight, 0.2, 1e-12, 0);
    CHECK(!strcmp(m.src[1].name, "b-2"));
    CHECK(!strcmp(m.src[0].train, DIR "/a.shard"));
    CHECK(!strcmp(m.src[1].val, "/abs/b.shard"));
    const char *bad[] = {"source a 0 a.shard a.shard\n", "source a 1 a.shard\n", "source a/b 1 x y\n",
                         "source a 1 x y\nsource a 1 x y\n", "# nothing\n", "sauce a 1 x y\n"};
    const char *why[] = {":1: weight 0 of a must be positive", ":1: expected 'source NAME", "must be 1-31 characters",
                         ":2: source a appears twice", "no 'source' lines", ":1: expected 'source NAME"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_spec(bad[i]);
        CHECK(mixture_spec_load(DIR "/m.mix", &m) == SX_ERR_FORMAT);
        if (!CHECK(strstr(sx_last_error(), why[i]) != NULL)) fprintf(stderr, "    got: %s\n", sx_last_error());
    }
    CHECK(mixture_is_spec("x/y.mix") && !mixture_is_spec("y.shard") && !mixture_is_spec(".mix"));
}

// Draws n windows of T+1; counts[k] gets source k's windows; fills ids (n) with the first token of each.
static void draw(uint64_t seed, size_t n, size_t counts[3], int32_t *firsts) {
    mixture_sampler s;
    CHECK(mixture_open(&s, DIR "/m.mix", 16, LOADER_RANDOM, seed, 0) == SX_OK);
    int32_t row[17];
    memset(counts, 0, 3 * sizeof *counts);
    for (size_t i = 0; i < n; i++) {
        mixture_next(&s, 1, row);
        size_t k = (size_t)(row[0] - 1) / 100;
        bool whole = k < 3;
        for (int t = 0; t <= 16 && whole; t++) whole = (size_t)(row[t] - 1) / 100 == k;
        if (!whole) { CHECK(whole); break; }
        counts[k]++;
        firsts[i] = row[0];
    }
    for (size_t k = 0; k < 3; k++) CHECK(s.drawn[k] == counts[k]);
    mixture_close(&s);
}

static void test_sampler_weights_and_determinism(void) {
    write_spec("source a 5 a.shard a.shard\nsource b 3 b.shard b.shard\nsource c 2 c.shard c.shard\n");
    const size_t n = 20000;
    const double w[3] = {0.5, 0.3, 0.2};
    size_t c1[3], c2[3], c3[3];
    int32_t *f1 = malloc(n * sizeof *f1), *f2 = malloc(n * sizeof *f2), *f3 = malloc(n * sizeof *f3);
    draw(7, n, c1, f1);
    double chi2 = 0;
    for (int k = 0; k < 3; k++) {
        double mean = n * w[k], sd = sqrt(n * w[k] * (1 - w[k]));
        if (!CHECK(fabs((double)c1[k] - mean) < 4 * sd)) fprintf(stderr, "    source %d: %zu windows, expected %.0f +- %.0f\n", k, c1[k], mean, sd);
        chi2 += ((double)c1[k] - mean) * ((double)c1[k] - mean) / mean;
    }
    CHECK(chi2 < 13.8);   // chi-square, 2 degrees of freedom, p = 0.001
    draw(7, n, c2, f2);
    CHECK(!memcmp(f1, f2, n * sizeof *f1) && !memcmp(c1, c2, sizeof c1));   // same seed: same stream
    draw(8, n, c3, f3);
    CHECK(memcmp(f1, f3, n * sizeof *f1) != 0);                               // another seed: another stream
    // A mixture of shards with different vocabularies is refused.
    shard_writer wr;
    CHECK(shard_writer_open(&wr, DIR "/v.shard", 2048, 0, 1) == SX_OK);
    uint32_t ids[64] = {0};
    CHECK(shard_writer_append(&wr, ids, 64) == SX_OK && shard_writer_close(&wr) == SX_OK);
    write_spec("source a 1 a.shard a.shard\nsource v 1 v.shard v.shard\n");
    mixture_sampler s;
    CHECK(mixture_open(&s, DIR "/m.mix", 16, LOADER_RANDOM, 1, 0) == SX_ERR_MISMATCH);
    free(f1);
    free(f2);
    free(f3);
}

// A mixture run's metrics carry val_loss (the mix) and val_loss_NAME per source: rundir_read_set picks one.
static void test_rundir_val_set(void) {
    CHECK(system("mkdir -p " DIR "/run") == 0);
    FILE *f = fopen(DIR "/run/config.json", "w");
    fputs("{\"model\": \"d1-w32\", \"n_params\": 10, \"n_params_nonembed\": 5, \"total_steps\": 2, \"total_tokens\": 8, "
          "\"batch_tokens\": 4, \"seed\": 1, \"flops_per_token\": 60}\n", f);
    fclose(f);
    f = fopen(DIR "/run/metrics.jsonl", "w");
    fputs("{\"step\": 1, \"lr\": 0.01, \"train_loss\": 5}\n"
          "{\"step\": 2, \"lr\": 0.01, \"train_loss\": 4, \"val_loss\": 4.5, \"val_loss_a\": 4.0, \"val_loss_b\": 5.25}\n", f);
    fclose(f);
    rundir_run r;
    CHECK(rundir_read_set(DIR "/run", NULL, &r) == SX_OK && r.n_evals == 1 && r.evals[0].val_loss == 4.5);
    rundir_free(&r);
    CHECK(rundir_read_set(DIR "/run", "b", &r) == SX_OK && r.n_evals == 1 && r.evals[0].val_loss == 5.25);
    rundir_free(&r);
    CHECK(rundir_read_set(DIR "/run", "c", &r) == SX_ERR_ARG && strstr(sx_last_error(), "no \"val_loss_c\""));
    rundir_free(&r);
}

// A cap on unique tokens: U / (T + 1) windows spread evenly over the shard (not its first U tokens), drawn in
// both loader modes, an epoch visiting each once; a mixture caps each source at its weight's share.
static void test_unique_cap(void) {
    shard_writer w;
    // 4000 tokens of a 40000-token shard whose token i is i: 235 windows of 17, one every 170 tokens.
    CHECK(shard_writer_open(&w, DIR "/pos40k.shard", 40000, 39999, 7) == SX_OK);
    for (uint32_t i = 0; i < 40000; i++) CHECK(shard_writer_append(&w, &i, 1) == SX_OK);
    CHECK(shard_writer_close(&w) == SX_OK);
    for (int mode = 0; mode < 2; mode++) {
        data_loader ld;
        CHECK(loader_open(&ld, DIR "/pos40k.shard", 16, (loader_mode)mode, 3, 0) == SX_OK);
        CHECK(loader_cap_tokens(&ld, 4000) == SX_OK && ld.n_used == 235 * 17);
        int32_t row[17];
        int quarters[4] = {0}, bad = 0, starts[235], repeats = 0;
        for (int i = 0; i < 235; i++) {
            loader_next(&ld, 1, row);
            bad += row[16] - row[0] != 16 || row[0] % 170 != 0 || row[0] > 234 * 170;
            quarters[row[0] / 10000]++;
            starts[i] = row[0];
            for (int j = 0; j < i; j++) repeats += starts[j] == row[0];
        }
        CHECK(bad == 0 && quarters[0] > 30 && quarters[1] > 30 && quarters[2] > 30 && quarters[3] > 30);
        if (mode == LOADER_EPOCH) CHECK(ld.n_windows == 235 && repeats == 0);
        CHECK(loader_cap_tokens(&ld, 10) == SX_ERR_ARG);
        loader_close(&ld);
    }
    write_spec("source a 3 a.shard a.shard\nsource c 1 c.shard c.shard\n");
    mixture_sampler s;
    CHECK(mixture_open(&s, DIR "/m.mix", 16, LOADER_RANDOM, 1, 0) == SX_OK);
    CHECK(mixture_cap_tokens(&s, 4000) == SX_OK);
    CHECK(s.ld[0].n_used == 3000 / 17 * 17 && s.ld[1].n_used == 1000 / 17 * 17 && mixture_tokens(&s) == (176 + 58) * 17);
    mixture_close(&s);
}

int main(void) {
    setup();
    TEST_RUN(test_spec);
    TEST_RUN(test_sampler_weights_and_determinism);
    TEST_RUN(test_rundir_val_set);
    TEST_RUN(test_unique_cap);
    return testlib_finish("mixture");
}
