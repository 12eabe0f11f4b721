// sextant ttc: the test-time-compute experiment on the arithmetic task (infer/task_arith).
//   ttc train      writes a shard of problems + reference solutions and trains a policy model on it
//   ttc verifiers  samples the policy on fresh training problems, labels the samples with the exact checkers
//                  and trains an outcome and a process verifier (infer/verifier) on them
//   ttc run        the experiment (infer/ttc_experiment.h: every strategy of its table at budgets N = 1..n,
//                  coverage and its law, compute-optimal selection, extra policies at equal FLOPs); this file
//                  parses its flags, prints the table and writes ttc.json and the SVG plots.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/status.h"
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "data/shard.h"
#include "infer/calibration.h"
#include "infer/generate.h"
#include "infer/task_arith.h"
#include "infer/ttc_experiment.h"
#include "infer/value_data.h"
#include "infer/verifier.h"
#include "report/svgplot.h"
#include "train/checkpoint.h"
#include "train/train.h"


static json_t *jnum_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

// init_from: "" or a checkpoint whose weights start the run (train --init-from).
static sx_status train_on(const char *shard, const char *out, const char *desc, const char *init_from, long steps,
                          long batch, double lr, long seed, bool quiet) {
    train_options o;
    train_options_default(&o);
    o.model = desc, o.train_data = shard, o.out = out, o.init_from = init_from;
    o.batch = batch, o.seq = 128, o.steps = steps, o.eval_batches = 1, o.warmup = "0.05";
    o.opt.lr = (float)lr;
    o.opt.weight_decay = 0.0f;
    o.seed = seed, o.quiet = quiet;
    return train_run(&o);
}

// ---- ttc train ----
static int ttc_train(int argc, char **argv) {
    static const flags_command cmd = {
        "ttc train --out DIR [flags]",
        "Trains a policy on the arithmetic task.",
        0, 0, NULL};
    const char *out, *desc, *init_from;
    long problems, steps, batch, seed, max_ops, digits;
    double lr;
    bool quiet;
    const flag_def flags[] = {
        {"out", FLAG_STR, &out, "", "run directory (train.bin, checkpoint.sxt)"},
        {"model", FLAG_STR, &desc, "d2-w64-hd16", "policy model descriptor"},
        {"init-from", FLAG_STR, &init_from, "", "start from this policy checkpoint's weights (same model; fresh optimizer): "
                                                "a curriculum's next stage, e.g. after --max-ops 2"},
        {"problems", FLAG_INT, &problems, "20000", "training problems"},
        {"max-ops", FLAG_INT, &max_ops, "4", "training problems have 1..max-ops operations"},
        {"digits", FLAG_INT, &digits, "2", "operand digits at most"},
        {"steps", FLAG_INT, &steps, "1500", "optimizer steps"},
        {"batch", FLAG_INT, &batch, "16", "sequences of 128 tokens per step"},
        {"lr", FLAG_DOUBLE, &lr, "3e-3", "AdamW peak learning rate"},
        {"seed", FLAG_INT, &seed, "1", "problem and initialisation seed"},
        {"quiet", FLAG_BOOL, &quiet, "false", "no progress line"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
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
        char sol[TTC_MAX_TEXT];
        uint32_t buf[ARITH_EXPR_MAX + 2 + TTC_MAX_TEXT];
        size_t np = arith_prompt_tokens(&p[i], pt, ARITH_EXPR_MAX + 2), ns = arith_solution(&p[i], sol, sizeof sol);
        for (size_t j = 0; j < np; j++) buf[j] = (uint32_t)pt[j];
        for (size_t j = 0; j < ns; j++) buf[np + j] = (unsigned char)sol[j];
        st = shard_writer_append(w, buf, np + ns);
    }
    if (!st) st = shard_writer_close(w);
    free(p);
    free(w);
    if (!st) st = train_on(shard, out, desc, init_from, steps, batch, lr, seed, quiet);
    return cli_report("ttc train", st);
}

// ---- ttc verifiers ----
// Held-out samples (every fifth problem): the problems and texts the separate models are judged on.
typedef struct {
    arith_problem *p;
    char **text;
    bool *correct;
    size_t n, cap;
} held_set;

static sx_status held_add(held_set *h, const arith_problem *p, const char *text, bool correct) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        arith_problem *np = sx_realloc(h->p, cap * sizeof *np, "held problems");
        if (np) h->p = np;
        char **nt = sx_realloc(h->text, cap * sizeof *nt, "held texts");
        if (nt) h->text = nt;
        bool *nc = sx_realloc(h->correct, cap * sizeof *nc, "held verdicts");
        if (nc) h->correct = nc;
        if (!np || !nt || !nc) return sx_fail(SX_ERR_NOMEM, "out of memory");
        h->cap = cap;
    }
    h->text[h->n] = sx_strdup(text, "held text");
    if (!h->text[h->n]) return sx_fail(SX_ERR_NOMEM, "out of memory");
    h->p[h->n] = *p, h->correct[h->n++] = correct;
    return SX_OK;
}

static void held_free(held_set *h) {
    for (size_t i = 0; i < h->n; i++) free(h->text[i]);
    free(h->p), free(h->text), free(h->correct);
}

// A separate label-byte verifier's held-out AUROC and ECE (final score against outcome; agg for the PRM).
static sx_status judge_model(const char *ckpt, const held_set *h, step_agg agg, double *auroc, double *ece) {
    model m;
    decoder d = {0};
    double *score = sx_alloc((h->n + 1) * sizeof *score, "judge scores"), *y = sx_alloc((h->n + 1) * sizeof *y, "judge y"),
           steps[VERIFIER_MAX_STEPS];
    sx_status st = score && y ? ttc_open_model(ckpt, &m) : sx_fail(SX_ERR_NOMEM, "out of memory");
    bool opened = !st;
    if (!st) st = decoder_init(&d, &m, TTC_CTX);
    verifier v = {.d = &d};
    for (size_t i = 0; i < h->n && !st; i++) {
        size_t ns;
        st = verifier_score(&v, &h->p[i], (const char *const *)&h->text[i], 1, steps, &ns);
        score[i] = verifier_aggregate(steps, ns, agg), y[i] = h->correct[i];
    }
    if (!st) *auroc = calib_auroc(score, h->correct, h->n), *ece = calib_ece(score, y, h->n, 10);
    decoder_free(&d);
    if (opened) model_free(&m);
    free(score), free(y);
    return st;
}

static int ttc_verifiers(int argc, char **argv) {
    static const flags_command cmd = {
        "ttc verifiers --policy CKPT --out DIR [flags]",
        "Trains outcome and process verifiers on the policy's labelled samples: value heads on the policy's frozen "
        "trunk (outcome labels; Monte-Carlo step labels) and separate label-byte models.",
        0, 0, NULL};
    const char *policy_path, *out, *desc;
    long problems, samples, steps, batch, seed, max_ops, digits, rollouts, hidden, epochs;
    double lr, temperature, head_lr;
    bool quiet;
    const flag_def flags[] = {
        {"policy", FLAG_STR, &policy_path, "", "policy checkpoint"},
        {"out", FLAG_STR, &out, "", "directory: orm_head.sxt, prm_head.sxt, verifiers.json; orm/ and prm/ models"},
        {"model", FLAG_STR, &desc, "d2-w64-hd16", "separate verifier models' descriptor"},
        {"problems", FLAG_INT, &problems, "600", "fresh problems to sample (every fifth held out for evaluation)"},
        {"samples", FLAG_INT, &samples, "8", "policy samples per problem"},
        {"max-ops", FLAG_INT, &max_ops, "6", "problems have 1..max-ops operations"},
        {"digits", FLAG_INT, &digits, "2", "operand digits at most"},
        {"temperature", FLAG_DOUBLE, &temperature, "1.0", "sampling temperature (samples and rollouts)"},
        {"rollouts", FLAG_INT, &rollouts, "8", "policy completions per step for the process labels"},
        {"head-hidden", FLAG_INT, &hidden, "32", "value heads' hidden units"},
        {"head-epochs", FLAG_INT, &epochs, "60", "value heads' passes over their examples at most (early-stopped)"},
        {"head-lr", FLAG_DOUBLE, &head_lr, "1e-3", "value heads' AdamW learning rate"},
        {"steps", FLAG_INT, &steps, "800", "optimizer steps per separate verifier model (0: none)"},
        {"batch", FLAG_INT, &batch, "16", "sequences of 128 tokens per step"},
        {"lr", FLAG_DOUBLE, &lr, "3e-3", "AdamW peak learning rate of the separate models"},
        {"seed", FLAG_INT, &seed, "2", "seed"},
        {"quiet", FLAG_BOOL, &quiet, "false", "no progress line"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && (!*policy_path || !*out)) st = sx_fail(SX_ERR_ARG, "--policy and --out are required");
    if (!st && (max_ops < 1 || max_ops > ARITH_MAX_OPS || digits < 1 || digits > 3 || problems < 5 || samples < 1 ||
                rollouts < 1 || hidden < 1 || epochs < 1 || steps < 0 || !(head_lr > 0)))
        st = sx_fail(SX_ERR_ARG, "bad --max-ops, --digits, --problems (5 or more), --samples, --rollouts, --head-hidden, "
                     "--head-epochs, --head-lr or --steps");
    if (!st && (!(temperature >= 0 && isfinite(temperature)) || batch < 1 || !(lr > 0 && isfinite(lr))))
        st = sx_fail(SX_ERR_ARG, "--temperature must be 0 or more, --batch and --lr positive");
    if (st) return cli_report("ttc verifiers", st);
    model m;
    decoder d = {0};
    shard_writer *w = sx_alloc(2 * sizeof *w, "cmd_ttc w");
    arith_problem *p = sx_alloc((size_t)problems * sizeof *p, "cmd_ttc p");
    char path[2][4096], dir[2][4096];
    const char *names[2] = {"orm", "prm"};
    if (!w || !p) return cli_report("ttc verifiers", sx_fail(SX_ERR_NOMEM, "out of memory"));
    st = ttc_open_model(policy_path, &m);
    if (st) { free(w), free(p); return cli_report("ttc verifiers", st); }
    st = decoder_init(&d, &m, TTC_CTX);
    if (!st) st = fs_mkdir_p(out);
    for (int v = 0; v < 2 && !st; v++) {
        snprintf(path[v], sizeof path[v], "%s/%s.bin", out, names[v]);
        snprintf(dir[v], sizeof dir[v], "%s/%s", out, names[v]);
        st = shard_writer_open(&w[v], path[v], ARITH_VOCAB, ARITH_EOT, 0);
    }
    arith_split((uint64_t)seed * 7919u + 5, (size_t)problems, 1, (int)max_ops, (int)digits, p);
    rng_state rng;
    rng_seed(&rng, (uint64_t)seed);
    trunk_reader trunk;
    trunk_reader_init(&trunk, &d);
    value_data vd;
    value_data_init(&vd, trunk_feature_dim(&trunk));
    held_set held = {0};
    mc_policy mp = {.d = &d, .temperature = temperature, .max_tokens = TTC_CTX};
    size_t good = 0, total = 0, docs[2] = {0};
    for (long i = 0; i < problems && !st; i++) {
        ttc_sample_set s;
        bool is_held = i % 5 == 4;   // the test split; every tenth problem of the rest validates (early stopping)
        value_split split = is_held ? VD_TEST : i % 10 == 3 ? VD_VALID : VD_TRAIN;
        st = ttc_sample_problem(&d, &p[i], (size_t)samples, temperature, &rng, &s);
        for (size_t j = 0; j < s.n && !st; j++) {
            size_t k;
            good += s.correct[j], total++;
            st = value_data_add(&vd, &trunk, &mp, &p[i], s.text[j], split, (size_t)rollouts, &rng);
            if (!st && is_held) st = held_add(&held, &p[i], s.text[j], s.correct[j]);
            for (int v = 0; v < 2 && !st && !is_held; v++) st = verifier_write_docs(&w[v], &p[i], s.text[j], v == 1, &k), docs[v] += k;
        }
        ttc_sample_set_free(&s);
    }
    for (int v = 0; v < 2; v++) { if (st) shard_writer_abort(&w[v]); else st = shard_writer_close(&w[v]); }
    if (!st) printf("labelled %zu samples (%.1f%% correct, %zu rollouts for step labels): %zu value-head rows, %zu ORM "
                    "documents, %zu PRM documents\n", total, 100.0 * (double)good / (double)(total ? total : 1),
                    vd.rollouts, vd.n, docs[0], docs[1]);
    fflush(stdout);   // before the trainer's own lines
    json_t *report = json_object();
    value_train_config tc = {.epochs = (size_t)epochs, .batch = 64, .lr = head_lr, .weight_decay = 1e-4, .seed = (uint64_t)seed};
    printf("%-28s %10s %6s %8s %8s %9s %8s\n", "verifier (held-out samples)", "train_rows", "epoch", "loss", "AUROC", "ECE", "step_ECE");
    for (int v = 0; v < 2 && !st; v++) {
        value_head h;
        value_fit_report rep;
        st = value_data_fit(&vd, v == 0, (size_t)hidden, model_param_count(&m), &tc, &h, &rep);
        char file[4096];
        snprintf(file, sizeof file, "%s/%s_head.sxt", out, names[v]);
        json_t *meta = json_pack("{s:s, s:s}", "policy", policy_path, "labels", v ? "monte-carlo step values" : "outcome");
        if (!st) st = value_head_save(&h, file, meta);
        json_decref(meta);
        value_head_free(&h);
        if (st) break;
        printf("%-28s %10zu %6zu %8.4f %8.3f %9.3f %8.3f\n", v ? "PRM value head (MC labels)" : "ORM value head (outcome)",
               rep.train_rows, rep.best_epoch, rep.train_loss, rep.auroc, rep.ece, rep.step_ece);
        fflush(stdout);
        json_object_set_new(report, v ? "prm_head" : "orm_head",
                            json_pack("{s:s, s:I, s:I, s:f, s:o, s:o, s:o, s:I}", "file", file, "train_rows", (json_int_t)rep.train_rows,
                                      "best_epoch", (json_int_t)rep.best_epoch,
                                      "train_loss", rep.train_loss, "auroc", jnum_or_null(rep.auroc), "ece", jnum_or_null(rep.ece),
                                      "step_ece", jnum_or_null(rep.step_ece), "held_out_samples", (json_int_t)rep.held_samples));
    }
    for (int v = 0; v < 2 && !st && steps > 0; v++) {
        st = train_on(path[v], dir[v], desc, "", steps, batch, lr, seed + v, quiet);
        char ckpt[4200];
        snprintf(ckpt, sizeof ckpt, "%s/checkpoint.sxt", dir[v]);
        double auroc = NAN, ece = NAN;
        if (!st) st = judge_model(ckpt, &held, v ? AGG_MIN : AGG_LAST, &auroc, &ece);
        if (st) break;
        printf("%-28s %10s %6s %8s %8.3f %9.3f %8s\n", v ? "PRM separate model (min)" : "ORM separate model", "-", "-", "-", auroc,
               ece, "-");
        json_object_set_new(report, v ? "prm_model" : "orm_model",
                            json_pack("{s:s, s:o, s:o}", "checkpoint", ckpt, "auroc", jnum_or_null(auroc), "ece", jnum_or_null(ece)));
    }
    json_object_set_new(report, "samples", json_integer((json_int_t)total));
    json_object_set_new(report, "correct", json_integer((json_int_t)good));
    json_object_set_new(report, "rollouts", json_integer((json_int_t)vd.rollouts));
    char jpath[4200];
    snprintf(jpath, sizeof jpath, "%s/verifiers.json", out);
    if (!st) st = fs_write_json(jpath, report, JSON_INDENT(1));
    json_decref(report);
    value_data_free(&vd);
    trunk_reader_free(&trunk);
    held_free(&held);
    decoder_free(&d);
    model_free(&m);
    free(p);
    free(w);
    return cli_report("ttc verifiers", st);
}

// ---- ttc run ----
// One table cell: the value, or "-" for a strategy not run at that budget.
static void print_cell(double v, const char *fmt) {
    if (!isfinite(v)) { printf(" %8s", "-"); return; }
    printf(" ");
    printf(fmt, v);
}

// "w_prm@16": a strategy's column heading and its N.
static const char *choice_text(size_t strategy, size_t n, char *buf, size_t size) {
    snprintf(buf, size, "%s@%zu", ttc_strategies[strategy].column, n);
    return buf;
}

// Per difficulty bucket, the FLOPs saving of the cheapest choice that matches best-of-N (PRM) at every N, then
// each bucket's largest saving spelled out.
static void print_buckets(const ttc_experiment_result *r) {
    printf("compute-optimal per difficulty bucket (quantiles of the policy's pass rate over its N samples): FLOPs of "
           "best-of-N (PRM) / FLOPs of the cheapest strategy and N reaching its accuracy on the bucket (chosen in-sample; "
           "-: best-of-N solves none)\n%6s %8s %11s", "bucket", "problems", "pass_rate");
    for (size_t ki = 0; ki < r->nk; ki++) {
        char h[16];
        snprintf(h, sizeof h, "N=%zu", r->ks[ki]);
        printf(" %8s", h);
    }
    printf("\n");
    for (size_t b = 0; b < r->nb; b++) {
        const ttc_bucket_result *u = &r->bucket[b];
        if (!u->problems) continue;
        char range[32];
        snprintf(range, sizeof range, "%.2f-%.2f", u->pass_lo, u->pass_hi);
        printf("%6zu %8zu %11s", b, u->problems, range);
        for (size_t ki = 0; ki < r->nk; ki++)
            if (u->bon_acc[ki] > 0) printf(" %7.1fx", u->bon_flops[ki] / u->opt_flops[ki]);
            else printf(" %8s", "-");
        printf("\n");
    }
    for (size_t b = 0; b < r->nb; b++) {
        const ttc_bucket_result *u = &r->bucket[b];
        size_t best = r->nk;
        for (size_t ki = 0; ki < r->nk; ki++)
            if (u->bon_acc[ki] > 0 && (best == r->nk || u->bon_flops[ki] / u->opt_flops[ki] > u->bon_flops[best] / u->opt_flops[best])) best = ki;
        if (best == r->nk) continue;
        char c[32];
        printf("  bucket %zu: best-of-N at N=%zu %.3f with %.4f GFLOP; %s %.3f with %.4f GFLOP (%.1fx fewer)\n", b,
               r->ks[best], u->bon_acc[best], u->bon_flops[best] / 1e9,
               choice_text(u->opt_strategy[best], u->opt_n[best], c, sizeof c), u->opt_acc[best], u->opt_flops[best] / 1e9,
               u->bon_flops[best] / u->opt_flops[best]);
    }
}

// Equal FLOPs across the policy ladder: each policy's most accurate choice within the main policy's
// majority-vote FLOPs at N.
static void print_equal_flops(const ttc_experiment_result *r) {
    printf("equal inference FLOPs across the policy ladder: each policy's most accurate choice within the main policy's "
           "majority-vote GFLOP at N (main policy: every strategy; the others: majority or PRM-weighted vote)\n%5s %10s", "N", "GFLOP");
    for (size_t i = 0; i < r->npol; i++) {
        char h[32];
        snprintf(h, sizeof h, "%zuk params", r->pol[i].params / 1000);
        printf(" %20s", h);
    }
    printf("\n");
    for (size_t ki = 0; ki < r->nk; ki++) {
        printf("%5zu %10.4f", r->ks[ki], r->pol[0].flops[ki] / 1e9);
        for (size_t i = 0; i < r->npol; i++) {
            const ttc_equal_flops_cell *e = &r->equal[ki][i];
            char c[32];
            if (e->strategy < ttc_n_strategies) printf(" %6.3f %13s", e->acc, choice_text(e->strategy, e->n, c, sizeof c));
            else printf(" %20s", "-");
        }
        printf("\n");
    }
}

// The table: one column per strategy row of ttc_strategies.
static void print_table(const ttc_experiment_config *c, const ttc_experiment_result *r) {
    const ttc_policy_result *p = &r->pol[0];
    printf("\npolicy %s (%zu params), %zu test problems (1..%ld ops), N up to %ld, PRM aggregation %s\n", p->path,
           p->params, r->problems, c->max_ops, c->n, c->agg);
    printf("%5s %9s %10s %8s %8s", "N", "tokens", "GFLOP", "cover", "fit");
    for (size_t s = 0; s < ttc_n_strategies; s++) printf(" %8s", ttc_strategies[s].column);
    printf(" %8s\n", "opt_cv");
    for (size_t ki = 0; ki < r->nk; ki++) {
        double fit = exp(p->fit_a * pow((double)r->ks[ki], p->fit_b));
        printf("%5zu %9.0f %10.4f %8.3f %8.3f", r->ks[ki], p->tokens[ki], p->flops[ki] / 1e9, p->cov[ki], fit);
        for (size_t s = 0; s < ttc_n_strategies; s++) print_cell(r->mean[s][ki], "%8.3f");
        printf(" %8.3f\n", r->opt_pred[ki]);
    }
    printf("GFLOP per problem (policy + the verifier a strategy reads; shared prefixes counted once)\n%5s", "N");
    for (size_t s = 0; s < ttc_n_strategies; s++) printf(" %8s", ttc_strategies[s].column);
    printf("\n");
    for (size_t ki = 0; ki < r->nk; ki++) {
        printf("%5zu", r->ks[ki]);
        for (size_t s = 0; s < ttc_n_strategies; s++) print_cell(r->flops[s][ki] / 1e9, "%8.4f");
        printf("\n");
    }
    size_t bon = ttc_strategy_row(SEL_BEST_OF_N, TTC_SCORE_PRM);   // the baseline of the FLOP comparison
    printf("compute-optimal (strategy and N per bin of the policy's pass rate, 2-fold CV) against best-of-N (PRM) "
           "(-: the choice reaches best-of-N's accuracy at no budget)\n"
           "%5s %10s %8s %8s %12s %8s\n", "N", "bon_GFLOP", "bon", "opt", "GFLOP_match", "saving");
    for (size_t ki = 0; ki < r->nk; ki++) {
        double match = r->match_flops[ki];
        printf("%5zu %10.4f %8.3f %8.3f", r->ks[ki], r->flops[bon][ki] / 1e9, r->mean[bon][ki], r->opt_at_flops[ki]);
        if (isfinite(match)) printf(" %12.4f %7.1fx\n", match / 1e9, r->flops[bon][ki] / match);
        else printf(" %12s %8s\n", "-", "-");
    }
    print_buckets(r);
    print_equal_flops(r);
    printf("verifiers on the test samples: ORM (%s) AUROC %.3f, PRM (%s) AUROC %.3f\n", r->orm_kind, r->orm_auroc,
           r->prm_kind, r->prm_auroc);
    printf("coverage law: c(k) = exp(%.4f * k^%.4f)\n", p->fit_a, p->fit_b);
    for (size_t i = 0; i < r->npol; i++) {
        printf("model %-40s %8zu params:", r->pol[i].path, r->pol[i].params);
        for (size_t ki = 0; ki < r->nk; ki++)
            printf(" N=%zu cov %.3f maj %.3f @%.2g FLOP;", r->ks[ki], r->pol[i].cov[ki], r->pol[i].maj[ki], r->pol[i].flops[ki]);
        printf("\n");
    }
}

// ttc_strategies.svg (accuracy of every strategy against N) and ttc_sizes.svg (policy sizes at equal FLOPs).
static sx_status write_plots(const char *out, const ttc_experiment_config *c, const ttc_experiment_result *r) {
    static const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    const ttc_policy_result *p0 = &r->pol[0];
    size_t nk = r->nk;
    double kd[TTC_MAX_K], fitv[TTC_MAX_K];
    for (size_t ki = 0; ki < nk; ki++) kd[ki] = (double)r->ks[ki], fitv[ki] = exp(p0->fit_a * pow(kd[ki], p0->fit_b));
    svg_series sel[TTC_MAX_STRATEGIES + 3], fl[TTC_MAX_STRATEGIES];
    size_t ns = 0, nf = 0;
    sel[ns++] = (svg_series){.label = "coverage (pass@N)", .x = kd, .y = p0->cov, .n = nk, .color = "#000", .markers = true};
    sel[ns++] = (svg_series){.label = "coverage law fit", .x = kd, .y = fitv, .n = nk, .color = "#000", .dashed = true};
    for (size_t s = 0; s < ttc_n_strategies; s++) {
        const char *color = colors[s % 8];
        size_t run = 0;   // search rows stop at --search-max
        while (run < nk && isfinite(r->mean[s][run])) run++;
        if (run)
            sel[ns++] = (svg_series){.label = ttc_strategies[s].name, .x = kd, .y = r->mean[s], .n = run, .color = color,
                                     .markers = true, .dashed = ttc_strategies[s].budget == TTC_BUDGET_SEARCH};
        if (run) fl[nf++] = (svg_series){.label = ttc_strategies[s].name, .x = r->flops[s], .y = r->mean[s], .n = run,
                                         .color = color, .markers = true, .dashed = ttc_strategies[s].budget == TTC_BUDGET_SEARCH};
    }
    sel[ns++] = (svg_series){.label = "compute-optimal (CV)", .x = kd, .y = r->opt_pred, .n = nk, .color = colors[6], .dashed = true};
    char path[4096];
    snprintf(path, sizeof path, "%s/ttc_strategies.svg", out);
    char title[600];   // every chart names what it shows: the policy, the problems, the verifiers' aggregation
    snprintf(title, sizeof title, "Accuracy vs samples N: policy %s, %zu problems, process verifier aggregated by %s",
             c->policy, r->problems, c->agg);
    sx_status st = svgplot_write(path, title, "samples per problem N", "accuracy", sel, ns);
    snprintf(path, sizeof path, "%s/ttc_flops.svg", out);
    snprintf(title, sizeof title, "Accuracy vs inference FLOPs per problem (policy + verifier): policy %s, %zu problems",
             c->policy, r->problems);
    if (!st) st = svgplot_write(path, title, "FLOPs per problem", "accuracy", fl, nf);
    svg_series sz[16];
    size_t nz = 0;
    char labels[16][96];
    for (size_t i = 0; i < r->npol && nz + 2 <= 16; i++) {
        const ttc_policy_result *p = &r->pol[i];
        snprintf(labels[nz], sizeof labels[nz], "coverage %zuk params", p->params / 1000);
        sz[nz] = (svg_series){.label = labels[nz], .x = p->flops, .y = p->cov, .n = nk, .color = colors[i], .markers = true};
        nz++;
        snprintf(labels[nz], sizeof labels[nz], "majority %zuk params", p->params / 1000);
        sz[nz] = (svg_series){.label = labels[nz], .x = p->flops, .y = p->maj, .n = nk, .color = colors[i], .dashed = true};
        nz++;
    }
    snprintf(path, sizeof path, "%s/ttc_sizes.svg", out);
    snprintf(title, sizeof title, "Model size vs samples at equal inference FLOPs: %zu policies, %zu problems", r->npol, r->problems);
    if (!st) st = svgplot_write(path, title, "inference FLOPs per problem", "accuracy", sz, nz);
    return st;
}

static int ttc_run(int argc, char **argv) {
    static const flags_command cmd = {
        "ttc run --policy CKPT --orm CKPT --prm CKPT --out DIR [flags]",
        "Runs the test-time-compute strategies and the scaling analysis.",
        0, 0, NULL};
    ttc_experiment_config c;
    const char *out;
    const flag_def flags[] = {
        {"policy", FLAG_STR, &c.policy, "", "policy checkpoint (the verifiers were trained on its samples)"},
        {"orm", FLAG_STR, &c.orm, "", "outcome verifier checkpoint"},
        {"prm", FLAG_STR, &c.prm, "", "process verifier checkpoint"},
        {"extra", FLAG_STR, &c.extra, "", "comma-separated checkpoints of other policy sizes (coverage, voting, FLOPs)"},
        {"out", FLAG_STR, &out, "", "directory for ttc.json and the SVG plots"},
        {"problems", FLAG_INT, &c.problems, "64", "test problems"},
        {"n", FLAG_INT, &c.n, "64", "samples per problem (largest budget; budgets are 1, 2, 4, ..., n)"},
        {"max-ops", FLAG_INT, &c.max_ops, "6", "test problems have 1..max-ops operations (beyond training)"},
        {"digits", FLAG_INT, &c.digits, "2", "operand digits at most"},
        {"temperature", FLAG_DOUBLE, &c.temperature, "1.0", "sampling temperature"},
        {"agg", FLAG_STR, &c.agg, "min", "process-verifier step aggregation: last, min, prod"},
        {"trials", FLAG_INT, &c.trials, "32", "random subsets per budget for the selectors"},
        {"search-max", FLAG_INT, &c.search_max, "64", "largest tree-search budget (beam, lookahead, DVTS; 0: off)"},
        {"width", FLAG_INT, &c.width, "4", "beam width M (each kept beam, or DVTS subtree, expands M ways)"},
        {"bins", FLAG_INT, &c.bins, "4", "difficulty bins for compute-optimal selection"},
        {"seed", FLAG_INT, &c.seed, "3", "test split and sampling seed"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    step_agg agg;
    if (!st && (!*c.policy || !*c.orm || !*c.prm || !*out)) st = sx_fail(SX_ERR_ARG, "--policy, --orm, --prm and --out are required");
    if (!st) st = step_agg_parse(c.agg, &agg);
    if (!st && (c.n < 1 || c.n > (1L << (TTC_MAX_K - 1)) || c.problems < 2 || c.max_ops < 1 || c.max_ops > ARITH_MAX_OPS ||
                c.digits < 1 || c.digits > 3 || c.bins < 1 || c.bins > TTC_MAX_BINS || c.width < 1))
        st = sx_fail(SX_ERR_ARG, "bad --n, --problems, --max-ops, --digits, --bins (1..%d) or --width", TTC_MAX_BINS);
    if (!st && (!(c.temperature >= 0 && isfinite(c.temperature)) || c.trials < 1 || c.search_max < 0))
        st = sx_fail(SX_ERR_ARG, "--temperature must be 0 or more, --trials positive and --search-max 0 or more");
    if (!st && c.search_max == 0 && flags_given(&a, "width"))
        st = sx_fail(SX_ERR_ARG, "--width is the tree search's beam width: with --search-max 0 there is no tree search");
    if (st) return cli_report("ttc run", st);
    ttc_experiment_result r = {0};
    double t0 = (double)clock();
    st = fs_mkdir_p(out);
    if (!st) st = ttc_experiment_run(&c, &r);
    if (st) { ttc_experiment_free(&r); return cli_report("ttc run", st); }
    print_table(&c, &r);
    printf("elapsed %.1f s CPU\n", ((double)clock() - t0) / CLOCKS_PER_SEC);
    json_t *root = ttc_experiment_to_json(&c, &r);
    char path[4096];
    snprintf(path, sizeof path, "%s/ttc.json", out);
    st = fs_write_json(path, root, JSON_INDENT(1));
    json_decref(root);
    if (!st) st = write_plots(out, &c, &r);
    ttc_experiment_free(&r);
    if (!st) printf("wrote %s/ttc.json, ttc_strategies.svg, ttc_flops.svg, ttc_sizes.svg\n", out);
    return cli_report("ttc run", st);
}

int cmd_ttc(int argc, char **argv) {
    if (argc >= 1 && !strcmp(argv[0], "train")) return ttc_train(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "verifiers")) return ttc_verifiers(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "run")) return ttc_run(argc - 1, argv + 1);
    printf("usage: sextant ttc train|verifiers|run [flags]  (each takes --help)\n");
    return argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) ? 0 : 2;
}
