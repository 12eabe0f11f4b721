// sextant ttc: the test-time-compute experiment on the arithmetic task (infer/task_arith).
//   ttc train      writes a shard of problems + reference solutions and trains a policy model on it
//   ttc verifiers  samples the policy on fresh training problems, labels the samples with the exact checkers
//                  and trains an outcome and a process verifier (infer/verifier) on them
//   ttc run        samples N solutions per test problem, scores them, and reports coverage (pass@k and its
//                  fitted law), majority / best-of-N / weighted best-of-N, beam search with the process
//                  verifier, compute-optimal selection per difficulty bin, extra policies (model sizes) at equal
//                  FLOPs; writes ttc.json and SVG plots.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/fsutil.h"
#include "data/shard.h"
#include "infer/generate.h"
#include "infer/task_arith.h"
#include "infer/ttc.h"
#include "infer/verifier.h"
#include "scale/svgplot.h"
#include "train/checkpoint.h"
#include "train/train.h"

#define CTX 256
#define MAX_TEXT 1024

static sx_status load_model(const char *path, model *m) {
    char desc[128];
    size_t vocab;
    model_config c;
    sx_status st = checkpoint_peek_model(path, desc, sizeof desc, &vocab);
    if (!st) st = model_config_parse(desc, vocab, &c);
    if (!st) st = model_init(m, &c);
    if (!st) st = checkpoint_load(path, m, NULL, NULL);
    return st;
}

static sx_status train_on(const char *shard, const char *out, const char *desc, long steps, long batch, double lr,
                          long seed, bool quiet) {
    train_options o = {0};
    o.model = desc, o.train_data = shard, o.val_data = "", o.data_order = "random";
    o.batch = batch, o.seq = 128, o.grad_accum = 1, o.steps = steps, o.schedule = "cosine:min=0.1", o.warmup = "0.05";
    optimizer_config_default(&o.opt);
    o.opt.lr = (float)lr;
    o.opt.weight_decay = 0.0f;
    o.seed = seed, o.eval_at = "", o.save_at = "", o.forecast = "", o.branch_from = "", o.out = out, o.dtype = "fp32";
    o.quiet = quiet;
    return train_run(&o);
}

// ---- ttc train ----
static int ttc_train(int argc, char **argv) {
    const char *out, *desc;
    long problems, steps, batch, seed, max_ops, digits;
    double lr;
    bool quiet;
    const flag_def flags[] = {
        {"out", FLAG_STR, &out, "", "run directory (train.bin, checkpoint.sxt)"},
        {"model", FLAG_STR, &desc, "d2-w64-hd16", "policy model descriptor"},
        {"problems", FLAG_INT, &problems, "20000", "training problems"},
        {"max-ops", FLAG_INT, &max_ops, "4", "training problems have 1..max-ops operations"},
        {"digits", FLAG_INT, &digits, "2", "operand digits at most"},
        {"steps", FLAG_INT, &steps, "1500", "optimizer steps"},
        {"batch", FLAG_INT, &batch, "16", "sequences of 128 tokens per step"},
        {"lr", FLAG_DOUBLE, &lr, "3e-3", "AdamW peak learning rate"},
        {"seed", FLAG_INT, &seed, "1", "problem and initialisation seed"},
        {"quiet", FLAG_BOOL, &quiet, "false", "no progress line"},
    };
    size_t n = sizeof flags / sizeof *flags;
    int npos;
    bool help;
    sx_status st = flags_parse(flags, n, argc, argv, NULL, 0, &npos, &help);
    if (help) { flags_usage(stdout, "ttc train --out DIR [flags]", "Trains a policy on the arithmetic task.", flags, n); return 0; }
    if (!st && !*out) st = sx_fail(SX_ERR_ARG, "--out is required");
    if (!st && (max_ops < 1 || max_ops > ARITH_MAX_OPS || digits < 1 || digits > 3 || problems < 1))
        st = sx_fail(SX_ERR_ARG, "--max-ops must be 1..%d, --digits 1..3, --problems positive", ARITH_MAX_OPS);
    if (st) return cli_report("ttc train", st);
    char shard[4096];
    snprintf(shard, sizeof shard, "%s/train.bin", out);
    arith_problem *p = malloc((size_t)problems * sizeof *p);
    shard_writer *w = malloc(sizeof *w);
    if (!p || !w) return cli_report("ttc train", sx_fail(SX_ERR_NOMEM, "out of memory"));
    arith_split((uint64_t)seed * 1000003u + 11, (size_t)problems, 1, (int)max_ops, (int)digits, p);
    st = fs_mkdir_p(out);
    if (!st) st = shard_writer_open(w, shard, ARITH_VOCAB, ARITH_EOT, 0);
    for (long i = 0; i < problems && !st; i++) {
        int32_t pt[ARITH_EXPR_MAX + 2];
        char sol[MAX_TEXT];
        uint32_t buf[ARITH_EXPR_MAX + 2 + MAX_TEXT];
        size_t np = arith_prompt_tokens(&p[i], pt, ARITH_EXPR_MAX + 2), ns = arith_solution(&p[i], sol, sizeof sol);
        for (size_t j = 0; j < np; j++) buf[j] = (uint32_t)pt[j];
        for (size_t j = 0; j < ns; j++) buf[np + j] = (unsigned char)sol[j];
        st = shard_writer_append(w, buf, np + ns);
    }
    if (!st) st = shard_writer_close(w);
    free(p);
    free(w);
    if (!st) st = train_on(shard, out, desc, steps, batch, lr, seed, quiet);
    return cli_report("ttc train", st);
}

// N samples of one problem: texts, answers, correctness, token counts.
typedef struct {
    size_t n;
    char **text;
    long *answer;
    bool *has, *correct;
    size_t tokens;
} sample_set;

static void sample_set_free(sample_set *s) {
    for (size_t i = 0; i < s->n && s->text; i++) free(s->text[i]);
    free(s->text), free(s->answer), free(s->has), free(s->correct);
    memset(s, 0, sizeof *s);
}

static sx_status sample_problem(decoder *d, const arith_problem *p, size_t n, double temperature, rng_state *rng,
                                sample_set *out) {
    memset(out, 0, sizeof *out);
    int32_t prompt[ARITH_EXPR_MAX + 2], stop = ARITH_EOT;
    size_t np = arith_prompt_tokens(p, prompt, ARITH_EXPR_MAX + 2);
    gen_config g = {.sampler = {.temperature = temperature, .top_p = 1}, .max_new = CTX - np - 1, .stop = &stop, .n_stop = 1};
    gen_stream *s = NULL;
    sx_status st = generate_samples(d, prompt, np, n, &g, rng, &s);
    out->n = n;
    out->text = calloc(n, sizeof *out->text);
    out->answer = calloc(n, sizeof *out->answer);
    out->has = calloc(n, sizeof *out->has);
    out->correct = calloc(n, sizeof *out->correct);
    if (!st && (!out->text || !out->answer || !out->has || !out->correct)) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        out->text[i] = malloc(MAX_TEXT);
        if (!out->text[i]) { st = sx_fail(SX_ERR_NOMEM, "out of memory"); break; }
        arith_detokenize(s[i].tok, s[i].len, out->text[i], MAX_TEXT);
        char *nl = strrchr(out->text[i], '\n');   // keep complete lines only
        if (nl) nl[1] = 0; else out->text[i][0] = 0;
        out->has[i] = arith_final_answer(out->text[i], &out->answer[i]);
        out->correct[i] = out->has[i] && out->answer[i] == p->answer;
        out->tokens += s[i].len;
    }
    gen_streams_free(d, s, n);
    if (st) sample_set_free(out);
    return st;
}

// ---- ttc verifiers ----
static int ttc_verifiers(int argc, char **argv) {
    const char *policy_path, *out, *desc;
    long problems, samples, steps, batch, seed, max_ops, digits;
    double lr, temperature;
    bool quiet;
    const flag_def flags[] = {
        {"policy", FLAG_STR, &policy_path, "", "policy checkpoint"},
        {"out", FLAG_STR, &out, "", "directory: orm/ and prm/ runs, orm.bin, prm.bin"},
        {"model", FLAG_STR, &desc, "d2-w64-hd16", "verifier model descriptor"},
        {"problems", FLAG_INT, &problems, "600", "fresh training-distribution problems to sample"},
        {"samples", FLAG_INT, &samples, "8", "policy samples per problem"},
        {"max-ops", FLAG_INT, &max_ops, "6", "problems have 1..max-ops operations"},
        {"digits", FLAG_INT, &digits, "2", "operand digits at most"},
        {"temperature", FLAG_DOUBLE, &temperature, "1.0", "sampling temperature"},
        {"steps", FLAG_INT, &steps, "800", "optimizer steps per verifier"},
        {"batch", FLAG_INT, &batch, "16", "sequences of 128 tokens per step"},
        {"lr", FLAG_DOUBLE, &lr, "3e-3", "AdamW peak learning rate"},
        {"seed", FLAG_INT, &seed, "2", "seed"},
        {"quiet", FLAG_BOOL, &quiet, "false", "no progress line"},
    };
    size_t n = sizeof flags / sizeof *flags;
    int npos;
    bool help;
    sx_status st = flags_parse(flags, n, argc, argv, NULL, 0, &npos, &help);
    if (help) { flags_usage(stdout, "ttc verifiers --policy CKPT --out DIR [flags]", "Trains outcome and process verifiers on the policy's labelled samples.", flags, n); return 0; }
    if (!st && (!*policy_path || !*out)) st = sx_fail(SX_ERR_ARG, "--policy and --out are required");
    if (!st && (max_ops < 1 || max_ops > ARITH_MAX_OPS || digits < 1 || digits > 3 || problems < 1 || samples < 1))
        st = sx_fail(SX_ERR_ARG, "bad --max-ops, --digits, --problems or --samples");
    if (st) return cli_report("ttc verifiers", st);
    model m;
    decoder d = {0};
    shard_writer *w = malloc(2 * sizeof *w);
    arith_problem *p = malloc((size_t)problems * sizeof *p);
    char path[2][4096], dir[2][4096];
    const char *names[2] = {"orm", "prm"};
    if (!w || !p) return cli_report("ttc verifiers", sx_fail(SX_ERR_NOMEM, "out of memory"));
    st = load_model(policy_path, &m);
    if (!st) st = decoder_init(&d, &m, CTX);
    if (!st) st = fs_mkdir_p(out);
    for (int v = 0; v < 2 && !st; v++) {
        snprintf(path[v], sizeof path[v], "%s/%s.bin", out, names[v]);
        snprintf(dir[v], sizeof dir[v], "%s/%s", out, names[v]);
        st = shard_writer_open(&w[v], path[v], ARITH_VOCAB, ARITH_EOT, 0);
    }
    arith_split((uint64_t)seed * 7919u + 5, (size_t)problems, 1, (int)max_ops, (int)digits, p);
    rng_state rng;
    rng_seed(&rng, (uint64_t)seed);
    size_t good = 0, total = 0, docs[2] = {0};
    for (long i = 0; i < problems && !st; i++) {
        sample_set s;
        st = sample_problem(&d, &p[i], (size_t)samples, temperature, &rng, &s);
        for (size_t j = 0; j < s.n && !st; j++) {
            size_t k;
            good += s.correct[j], total++;
            for (int v = 0; v < 2 && !st; v++) st = verifier_write_docs(&w[v], &p[i], s.text[j], v == 1, &k), docs[v] += k;
        }
        sample_set_free(&s);
    }
    for (int v = 0; v < 2; v++) { if (st) shard_writer_abort(&w[v]); else st = shard_writer_close(&w[v]); }
    decoder_free(&d);
    model_free(&m);
    free(p);
    free(w);
    if (!st) printf("labelled %zu samples (%.1f%% correct): %zu ORM documents, %zu PRM documents\n", total,
                    100.0 * (double)good / (double)(total ? total : 1), docs[0], docs[1]);
    for (int v = 0; v < 2 && !st; v++) st = train_on(path[v], dir[v], desc, steps, batch, lr, seed + v, quiet);
    return cli_report("ttc verifiers", st);
}
