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
#include "core/status.h"
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
    o.batch = batch, o.seq = 128, o.grad_accum = 1, o.steps = steps, o.eval_batches = 1, o.schedule = "cosine:min=0.1", o.warmup = "0.05";
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
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, NULL, 0, &npos,
                            "ttc train --out DIR [flags]", "Trains a policy on the arithmetic task.", &st))
        return 0;
    if (!st && !*out) st = sx_fail(SX_ERR_ARG, "--out is required");
    if (!st && (max_ops < 1 || max_ops > ARITH_MAX_OPS || digits < 1 || digits > 3 || problems < 1))
        st = sx_fail(SX_ERR_ARG, "--max-ops must be 1..%d, --digits 1..3, --problems positive", ARITH_MAX_OPS);
    if (st) return cli_report("ttc train", st);
    char shard[4096];
    snprintf(shard, sizeof shard, "%s/train.bin", out);
    arith_problem *p = sx_alloc((size_t)problems * sizeof *p, "cmd_ttc p");
    shard_writer *w = sx_alloc(sizeof *w, "cmd_ttc w");
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
    out->text = sx_calloc_n(n, sizeof *out->text, "cmd_ttc out.text");
    out->answer = sx_calloc_n(n, sizeof *out->answer, "cmd_ttc out.answer");
    out->has = sx_calloc_n(n, sizeof *out->has, "cmd_ttc out.has");
    out->correct = sx_calloc_n(n, sizeof *out->correct, "cmd_ttc out.correct");
    if (!st && (!out->text || !out->answer || !out->has || !out->correct)) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        out->text[i] = sx_alloc(MAX_TEXT, "cmd_ttc out.text");
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
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, NULL, 0, &npos,
                            "ttc verifiers --policy CKPT --out DIR [flags]", "Trains outcome and process verifiers on the policy's labelled samples.", &st))
        return 0;
    if (!st && (!*policy_path || !*out)) st = sx_fail(SX_ERR_ARG, "--policy and --out are required");
    if (!st && (max_ops < 1 || max_ops > ARITH_MAX_OPS || digits < 1 || digits > 3 || problems < 1 || samples < 1))
        st = sx_fail(SX_ERR_ARG, "bad --max-ops, --digits, --problems or --samples");
    if (st) return cli_report("ttc verifiers", st);
    model m;
    decoder d = {0};
    shard_writer *w = sx_alloc(2 * sizeof *w, "cmd_ttc w");
    arith_problem *p = sx_alloc((size_t)problems * sizeof *p, "cmd_ttc p");
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

// ---- ttc run ----
#define MAX_K 16
enum { ST_MAJ, ST_BON_ORM, ST_W_ORM, ST_BON_PRM, ST_W_PRM, ST_BEAM, N_ST };
static const char *st_names[N_ST] = {"majority", "best_of_n_orm", "weighted_orm", "best_of_n_prm", "weighted_prm", "beam_prm"};

typedef struct {
    const char *path;
    model m;
    decoder d;
    size_t params;
    double cov[MAX_K], maj[MAX_K], flops[MAX_K], tokens[MAX_K], fit_a, fit_b;
} policy_eval;

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

static json_t *jarr(const double *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, jnum(v[i]));
    return a;
}

static int ttc_run(int argc, char **argv) {
    const char *policy_path, *orm_path, *prm_path, *extra, *out, *agg_name;
    long problems, N, max_ops, digits, seed, trials, beam_max, width, bins;
    double temperature;
    const flag_def flags[] = {
        {"policy", FLAG_STR, &policy_path, "", "policy checkpoint (the verifiers were trained on its samples)"},
        {"orm", FLAG_STR, &orm_path, "", "outcome verifier checkpoint"},
        {"prm", FLAG_STR, &prm_path, "", "process verifier checkpoint"},
        {"extra", FLAG_STR, &extra, "", "comma-separated checkpoints of other policy sizes (coverage, voting, FLOPs)"},
        {"out", FLAG_STR, &out, "", "directory for ttc.json and the SVG plots"},
        {"problems", FLAG_INT, &problems, "64", "test problems"},
        {"n", FLAG_INT, &N, "64", "samples per problem (largest budget; budgets are 1, 2, 4, ..., n)"},
        {"max-ops", FLAG_INT, &max_ops, "6", "test problems have 1..max-ops operations (beyond training)"},
        {"digits", FLAG_INT, &digits, "2", "operand digits at most"},
        {"temperature", FLAG_DOUBLE, &temperature, "1.0", "sampling temperature"},
        {"agg", FLAG_STR, &agg_name, "min", "process-verifier step aggregation: last, min, prod"},
        {"trials", FLAG_INT, &trials, "32", "random subsets per budget for the selectors"},
        {"beam-max", FLAG_INT, &beam_max, "16", "largest beam-search budget (budgets 4, 8, ... up to it; 0: off)"},
        {"width", FLAG_INT, &width, "4", "beam width M (each kept beam expands M ways)"},
        {"bins", FLAG_INT, &bins, "4", "difficulty bins for compute-optimal selection"},
        {"seed", FLAG_INT, &seed, "3", "test split and sampling seed"},
    };
    size_t nf = sizeof flags / sizeof *flags;
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, nf, argc, argv, NULL, 0, &npos,
                            "ttc run --policy CKPT --orm CKPT --prm CKPT --out DIR [flags]", "Runs the test-time-compute strategies and the scaling analysis.", &st))
        return 0;
    step_agg agg = AGG_MIN;
    if (!st && (!*policy_path || !*orm_path || !*prm_path || !*out)) st = sx_fail(SX_ERR_ARG, "--policy, --orm, --prm and --out are required");
    if (!st) st = step_agg_parse(agg_name, &agg);
    if (!st && (N < 1 || N > (1L << (MAX_K - 1)) || problems < 2 || max_ops < 1 || max_ops > ARITH_MAX_OPS || digits < 1 || digits > 3 || bins < 1 || width < 1))
        st = sx_fail(SX_ERR_ARG, "bad --n, --problems, --max-ops, --digits, --bins or --width");
    if (st) return cli_report("ttc run", st);
    size_t nq = (size_t)problems, nk = 0, ks[MAX_K];
    for (size_t k = 1; k <= (size_t)N; k *= 2) ks[nk++] = k;
    size_t nb = 0, bk[MAX_K];
    for (size_t k = 4; beam_max > 0 && k <= (size_t)beam_max; k *= 2) bk[nb++] = k;
    // Policies: the main one first, then --extra.
    policy_eval pol[8];
    size_t npol = 0;
    memset(pol, 0, sizeof pol);
    char *extra_copy = sx_strdup(extra, "cmd_ttc extra_copy");
    pol[npol++].path = policy_path;
    for (char *tok = strtok(extra_copy, ","); tok && npol < 8; tok = strtok(NULL, ",")) pol[npol++].path = tok;
    model orm_m, prm_m;
    decoder orm = {0}, prm = {0};
    for (size_t i = 0; i < npol && !st; i++) {
        st = load_model(pol[i].path, &pol[i].m);
        if (!st) st = decoder_init(&pol[i].d, &pol[i].m, CTX);
        pol[i].params = model_param_count(&pol[i].m);
    }
    if (!st) st = load_model(orm_path, &orm_m);
    if (!st) st = decoder_init(&orm, &orm_m, CTX);
    if (!st) st = load_model(prm_path, &prm_m);
    if (!st) st = decoder_init(&prm, &prm_m, CTX);
    if (!st) st = fs_mkdir_p(out);
    if (st) return cli_report("ttc run", st);
    arith_problem *p = sx_alloc(nq * sizeof *p, "cmd_ttc p");
    double *acc = sx_calloc_n(nq * nk * N_ST, sizeof *acc, "cmd_ttc acc");   // [q][k][strategy]
    double *pass1 = sx_calloc_n(nq, sizeof *pass1, "cmd_ttc pass1"),
           *pred = sx_calloc_n(nq, sizeof *pred, "cmd_ttc pred");
    double *orm_s = sx_alloc((size_t)N * sizeof *orm_s, "cmd_ttc orm_s"),
           *prm_s = sx_alloc((size_t)N * sizeof *prm_s, "cmd_ttc prm_s");
    double *steps = sx_alloc((size_t)N * VERIFIER_MAX_STEPS * sizeof *steps, "cmd_ttc steps"),
           beam_tokens[MAX_K] = {0}, beam_flops[MAX_K] = {0};
    size_t *nsteps = sx_alloc((size_t)N * sizeof *nsteps, "cmd_ttc nsteps");
    arith_split((uint64_t)seed * 104729u + 17, nq, 1, (int)max_ops, (int)digits, p);
    rng_state rng;
    rng_seed(&rng, (uint64_t)seed);
    double verifier_flops = 0, t0 = (double)clock();
    for (size_t pi = 0; pi < npol && !st; pi++) {
        policy_eval *e = &pol[pi];
        for (size_t q = 0; q < nq && !st; q++) {
            sample_set s;
            double f0 = e->d.flops;
            if ((st = sample_problem(&e->d, &p[q], (size_t)N, temperature, &rng, &s))) break;
            size_t c = 0;
            for (size_t j = 0; j < s.n; j++) c += s.correct[j];
            double per_sample_flops = (e->d.flops - f0) / (double)N, per_sample_tokens = (double)s.tokens / (double)N;
            ttc_pool pool = {.n = s.n, .answer = s.answer, .has_answer = s.has, .correct = s.correct};
            if (pi == 0) {
                double vf0 = orm.flops + prm.flops;
                st = verifier_score(&orm, &p[q], (const char *const *)s.text, s.n, steps, nsteps);
                for (size_t j = 0; j < s.n && !st; j++) orm_s[j] = nsteps[j] ? steps[j * VERIFIER_MAX_STEPS + nsteps[j] - 1] : 0;
                if (!st) st = verifier_score(&prm, &p[q], (const char *const *)s.text, s.n, steps, nsteps);
                for (size_t j = 0; j < s.n && !st; j++) prm_s[j] = verifier_aggregate(steps + j * VERIFIER_MAX_STEPS, nsteps[j], agg);
                verifier_flops += (orm.flops + prm.flops - vf0) / (double)N / 2.0;   // per sample and verifier
                pass1[q] = (double)c / (double)N;
                double m = 0;
                for (size_t j = 0; j < s.n; j++) m += orm_s[j];
                pred[q] = m / (double)N;
                for (size_t ki = 0; ki < nk && !st; ki++) {
                    double *a = acc + (q * nk + ki) * N_ST;
                    pool.score = orm_s;
                    a[ST_MAJ] = ttc_selector_accuracy(&pool, ks[ki], SEL_MAJORITY, (size_t)trials, &rng);
                    a[ST_BON_ORM] = ttc_selector_accuracy(&pool, ks[ki], SEL_BEST_OF_N, (size_t)trials, &rng);
                    a[ST_W_ORM] = ttc_selector_accuracy(&pool, ks[ki], SEL_WEIGHTED, (size_t)trials, &rng);
                    pool.score = prm_s;
                    a[ST_BON_PRM] = ttc_selector_accuracy(&pool, ks[ki], SEL_BEST_OF_N, (size_t)trials, &rng);
                    a[ST_W_PRM] = ttc_selector_accuracy(&pool, ks[ki], SEL_WEIGHTED, (size_t)trials, &rng);
                    a[ST_BEAM] = NAN;
                }
                for (size_t bi = 0; bi < nb && !st; bi++) {
                    size_t ki = 0;
                    while (ks[ki] != bk[bi]) ki++;
                    beam_config bc = {.n_beams = bk[bi], .width = (size_t)width, .max_rounds = 2 * ARITH_MAX_OPS,
                                      .max_step_tokens = 48, .temperature = temperature, .agg = agg};
                    beam_result br;
                    st = ttc_beam_search(&e->d, &prm, &p[q], &bc, &rng, &br);
                    acc[(q * nk + ki) * N_ST + ST_BEAM] = br.correct;
                    beam_tokens[ki] += (double)br.tokens / (double)nq;
                    beam_flops[ki] += br.flops / (double)nq;
                }
            }
            for (size_t ki = 0; ki < nk; ki++) {
                e->cov[ki] += ttc_pass_at_k(s.n, c, ks[ki]) / (double)nq;
                pool.score = NULL;
                e->maj[ki] += (pi == 0 ? acc[(q * nk + ki) * N_ST + ST_MAJ]
                                       : ttc_selector_accuracy(&pool, ks[ki], SEL_MAJORITY, (size_t)trials, &rng)) / (double)nq;
                e->flops[ki] += per_sample_flops * (double)ks[ki] / (double)nq;
                e->tokens[ki] += per_sample_tokens * (double)ks[ki] / (double)nq;
            }
            sample_set_free(&s);
        }
        double kd[MAX_K];
        for (size_t ki = 0; ki < nk; ki++) kd[ki] = (double)ks[ki];
        if (!st && ttc_fit_coverage(kd, e->cov, nk, &e->fit_a, &e->fit_b)) e->fit_a = e->fit_b = NAN;
    }
    if (st) return cli_report("ttc run", st);
    // Aggregate the main policy's strategies, compute-optimal selection per budget.
    double mean[N_ST][MAX_K], opt_pred[MAX_K], opt_oracle[MAX_K];
    size_t *bin_pred = sx_alloc(nq * sizeof *bin_pred, "cmd_ttc bin_pred"),
           *bin_oracle = sx_alloc(nq * sizeof *bin_oracle, "cmd_ttc bin_oracle");
    double *acc_k = sx_alloc(nq * N_ST * sizeof *acc_k, "cmd_ttc acc_k");
    ttc_bin_quantiles(pred, nq, (size_t)bins, bin_pred);
    ttc_bin_quantiles(pass1, nq, (size_t)bins, bin_oracle);
    json_t *choices = json_object();
    for (size_t ki = 0; ki < nk; ki++) {
        size_t S = 0, map[N_ST];
        for (size_t s = 0; s < N_ST; s++) {
            mean[s][ki] = 0;
            for (size_t q = 0; q < nq; q++) mean[s][ki] += acc[(q * nk + ki) * N_ST + s] / (double)nq;
            if (isfinite(mean[s][ki])) map[S++] = s;
        }
        for (size_t q = 0; q < nq; q++)
            for (size_t j = 0; j < S; j++) acc_k[q * S + j] = acc[(q * nk + ki) * N_ST + map[j]];
        size_t choice[64];
        opt_pred[ki] = ttc_compute_optimal(acc_k, bin_pred, nq, S, (size_t)bins, choice);
        opt_oracle[ki] = ttc_compute_optimal(acc_k, bin_oracle, nq, S, (size_t)bins, NULL);
        json_t *row = json_array();
        for (long b = 0; b < bins; b++) json_array_append_new(row, json_string(st_names[map[choice[b]]]));
        char key[32];
        snprintf(key, sizeof key, "%zu", ks[ki]);
        json_object_set_new(choices, key, row);
    }
    // Table.
    printf("\npolicy %s (%zu params), %zu test problems (1..%ld ops), N up to %ld, PRM aggregation %s\n", pol[0].path,
           pol[0].params, nq, max_ops, N, agg_name);
    printf("%5s %9s %10s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "N", "tokens", "GFLOP", "cover", "fit", "major", "bon_orm",
           "w_orm", "bon_prm", "w_prm", "beam", "opt_cv");
    for (size_t ki = 0; ki < nk; ki++) {
        double fit = exp(pol[0].fit_a * pow((double)ks[ki], pol[0].fit_b));
        printf("%5zu %9.0f %10.4f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", ks[ki], pol[0].tokens[ki],
               pol[0].flops[ki] / 1e9, pol[0].cov[ki], fit, mean[ST_MAJ][ki], mean[ST_BON_ORM][ki], mean[ST_W_ORM][ki],
               mean[ST_BON_PRM][ki], mean[ST_W_PRM][ki], mean[ST_BEAM][ki], opt_pred[ki]);
    }
    printf("coverage law: c(k) = exp(%.4f * k^%.4f)\n", pol[0].fit_a, pol[0].fit_b);
    for (size_t i = 0; i < npol; i++) {
        printf("model %-40s %8zu params:", pol[i].path, pol[i].params);
        for (size_t ki = 0; ki < nk; ki++) printf(" N=%zu cov %.3f maj %.3f @%.2g FLOP;", ks[ki], pol[i].cov[ki], pol[i].maj[ki], pol[i].flops[ki]);
        printf("\n");
    }
    printf("elapsed %.1f s CPU\n", ((double)clock() - t0) / CLOCKS_PER_SEC);
    // JSON.
    double kd[MAX_K], fitv[MAX_K];
    for (size_t ki = 0; ki < nk; ki++) kd[ki] = (double)ks[ki], fitv[ki] = exp(pol[0].fit_a * pow(kd[ki], pol[0].fit_b));
    json_t *strat = json_object(), *models = json_array();
    for (size_t s = 0; s < N_ST; s++) json_object_set_new(strat, st_names[s], jarr(mean[s], nk));
    json_object_set_new(strat, "compute_optimal_predicted_bins_cv", jarr(opt_pred, nk));
    json_object_set_new(strat, "compute_optimal_oracle_bins_cv", jarr(opt_oracle, nk));
    for (size_t i = 0; i < npol; i++)
        json_array_append_new(models, json_pack("{s:s, s:I, s:o, s:o, s:o, s:o, s:{s:f, s:f}}", "checkpoint", pol[i].path,
                                                "params", (json_int_t)pol[i].params, "coverage", jarr(pol[i].cov, nk),
                                                "majority", jarr(pol[i].maj, nk), "flops_per_problem", jarr(pol[i].flops, nk),
                                                "tokens_per_problem", jarr(pol[i].tokens, nk), "coverage_fit", "a",
                                                jnum(pol[i].fit_a), "b", jnum(pol[i].fit_b)));
    json_t *root = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:s, s:I, s:I}", "budgets", jarr(kd, nk),
                             "strategies", strat, "beam_tokens_per_problem", jarr(beam_tokens, nk), "beam_flops_per_problem",
                             jarr(beam_flops, nk), "models", models, "compute_optimal_choice_per_bin", choices,
                             "verifier_flops_per_sample", verifier_flops / (double)nq, "prm_aggregation", agg_name,
                             "problems", (json_int_t)nq, "max_ops", (json_int_t)max_ops);
    char path[4096];
    snprintf(path, sizeof path, "%s/ttc.json", out);
    if (json_dump_file(root, path, JSON_INDENT(1))) st = sx_fail(SX_ERR_IO, "cannot write %s", path);
    json_decref(root);
    // Plots.
    static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    svg_series sel[N_ST + 3];
    size_t ns = 0;
    sel[ns++] = (svg_series){.label = "coverage (pass@N)", .x = kd, .y = pol[0].cov, .n = nk, .color = "#000", .markers = true};
    sel[ns++] = (svg_series){.label = "coverage law fit", .x = kd, .y = fitv, .n = nk, .color = "#000", .dashed = true};
    for (size_t s = 0; s < ST_BEAM; s++)
        sel[ns++] = (svg_series){.label = st_names[s], .x = kd, .y = mean[s], .n = nk, .color = colors[s], .markers = true};
    if (nb)   // beam budgets start at N = 4, index 2 of the budgets
        sel[ns++] = (svg_series){.label = st_names[ST_BEAM], .x = kd + 2, .y = mean[ST_BEAM] + 2, .n = nb, .color = colors[ST_BEAM], .markers = true};
    sel[ns++] = (svg_series){.label = "compute-optimal (CV)", .x = kd, .y = opt_pred, .n = nk, .color = colors[6], .dashed = true};
    snprintf(path, sizeof path, "%s/ttc_strategies.svg", out);
    char title[600];   // every chart names what it shows: the policy, the problems, the verifiers' aggregation
    snprintf(title, sizeof title, "Accuracy vs samples N: policy %s, %zu problems, process verifier aggregated by %s",
             policy_path, nq, agg_name);
    if (!st) st = svgplot_write(path, title, "samples per problem N", "accuracy", sel, ns);
    svg_series sz[16];
    size_t nz = 0;
    char labels[16][96];
    for (size_t i = 0; i < npol && nz + 2 <= 16; i++) {
        snprintf(labels[nz], sizeof labels[nz], "coverage %zuk params", pol[i].params / 1000);
        sz[nz] = (svg_series){.label = labels[nz], .x = pol[i].flops, .y = pol[i].cov, .n = nk, .color = colors[i], .markers = true};
        nz++;
        snprintf(labels[nz], sizeof labels[nz], "majority %zuk params", pol[i].params / 1000);
        sz[nz] = (svg_series){.label = labels[nz], .x = pol[i].flops, .y = pol[i].maj, .n = nk, .color = colors[i], .dashed = true};
        nz++;
    }
    snprintf(path, sizeof path, "%s/ttc_sizes.svg", out);
    snprintf(title, sizeof title, "Model size vs samples at equal inference FLOPs: %zu policies, %zu problems", npol, nq);
    if (!st) st = svgplot_write(path, title, "inference FLOPs per problem", "accuracy", sz, nz);
    for (size_t i = 0; i < npol; i++) decoder_free(&pol[i].d), model_free(&pol[i].m);
    decoder_free(&orm), decoder_free(&prm), model_free(&orm_m), model_free(&prm_m);
    free(extra_copy), free(p), free(acc), free(pass1), free(pred), free(orm_s), free(prm_s), free(steps), free(nsteps);
    free(bin_pred), free(bin_oracle), free(acc_k);
    if (!st) printf("wrote %s/ttc.json, ttc_strategies.svg, ttc_sizes.svg\n", out);
    return cli_report("ttc run", st);
}

int cmd_ttc(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "train")) return ttc_train(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "verifiers")) return ttc_verifiers(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "run")) return ttc_run(argc - 1, argv + 1);
    printf("usage: sextant ttc train|verifiers|run [flags]  (each takes --help)\n");
    return argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) ? 0 : 2;
}
