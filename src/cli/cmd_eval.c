// sextant eval: scores a checkpoint on downstream tasks (infer/tasks.h) and prints, per task, the accuracy
// with its 95% Wilson interval and the task loss; --json prints one JSON object per task instead. The
// validation shard defaults to the one recorded in the run's config.json beside the checkpoint. --val-loss
// prints the mean next-token loss over fixed validation windows (the training run's evaluation); --int8
// scores the model with int8 weights (model/quant), and with --val-loss prints the fp32 loss beside it.
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/threads.h"
#include "data/mixture.h"
#include "infer/tasks.h"
#include "model/quant.h"
#include "runs/rundir.h"
#include "train/batches.h"
#include "train/checkpoint.h"

// The "val_data" of the config.json beside ckpt into out ("" when there is none).
static void recorded_val(const char *ckpt, char *out, size_t size) {
    json_t *c = rundir_config_beside(ckpt);
    const char *val = json_string_value(json_object_get(c, "val_data"));
    snprintf(out, size, "%s", val && strncmp(val, "synthetic:", 10) ? val : "");
    json_decref(c);
}

// The mean loss over windows 0..batches of the validation source (B rows of T + 1 tokens each).
static sx_status val_loss(model *m, batch_source *src, size_t batches, size_t B, size_t T, int32_t *tokens, double *out) {
    double sum = 0, loss = 0;
    sx_status st = model_reserve(m, B, T);
    for (size_t i = 0; i < batches && !st; i++) {
        threads_recheck();
        st = batch_source_eval(src, i, B, tokens);
        if (!st) st = model_loss(m, tokens, NULL, &loss);
        sum += loss;
    }
    *out = sum / (double)batches;
    return st;
}

int cmd_eval(int argc, char **argv) {
    static const flags_command cmd = {
        "eval --task NAME[,NAME] | --val-loss CHECKPOINT [flags]",
        "Scores a checkpoint on downstream tasks (accuracy with its 95% Wilson interval, task loss) and/or its validation loss.",
        0, 1, NULL};
    const char *names, *val, *vocab;
    long n, seed, batches, batch, seq, threads;
    bool as_json, want_loss, int8;
    const flag_def flags[] = {
        {"task", FLAG_STR, &names, "", "task name(s), comma-separated: cloze, choice, choice_pmi, arith"},
        {"val", FLAG_STR, &val, "", "validation shard the text tasks are built from (default: the run's --val)"},
        {"vocab", FLAG_STR, &vocab, "", "vocabulary the shard was written with (default: the .sxv beside it)"},
        {"n", FLAG_INT, &n, "200", "items per task"},
        {"seed", FLAG_INT, &seed, "1", "seed the items are drawn with"},
        {"json", FLAG_BOOL, &as_json, "false", "one JSON object per task (and one for --val-loss)"},
        {"val-loss", FLAG_BOOL, &want_loss, "false", "print the validation loss (fixed windows of the --val shard)"},
        {"batches", FLAG_INT, &batches, "16", "validation batches for --val-loss"},
        {"batch", FLAG_INT, &batch, "8", "rows per validation batch"},
        {"seq", FLAG_INT, &seq, "128", "tokens per validation row"},
        {"int8", FLAG_BOOL, &int8, "false", "int8 weights (per-channel scales); with --val-loss also the fp32 loss"},
        threads_flag(&threads),
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && !*names && !want_loss)
        st = sx_fail(SX_ERR_ARG, "--task is required (cloze, choice, choice_pmi or arith), or --val-loss");
    if (!st && (batches < 1 || batch < 1 || seq < 1)) st = sx_fail(SX_ERR_ARG, "--batches, --batch and --seq must be positive");
    // Each kind's settings given without it would be ignored without a word.
    const char *unused = NULL;
    if (!st && !*names && (unused = flags_first_given(&a, "n,seed,vocab")))
        st = sx_fail(SX_ERR_ARG, "--%s is a setting of --task", unused);
    if (!st && !want_loss && (unused = flags_first_given(&a, "batches,batch,seq")))
        st = sx_fail(SX_ERR_ARG, "--%s is a setting of --val-loss", unused);
    if (!st && a.npos != 1) st = sx_fail(SX_ERR_ARG, "give one checkpoint");
    if (!st && n < 1) st = sx_fail(SX_ERR_ARG, "--n must be positive");
    if (!st) st = threads_start(threads, 0, "eval");
    if (st) return cli_report("eval", st);
    char val_path[4096];
    snprintf(val_path, sizeof val_path, "%s", val);
    if (!*val_path) recorded_val(a.pos[0], val_path, sizeof val_path);
    task_suite s = {0};
    model m = {0};
    st = checkpoint_open_model(a.pos[0], &m);
    if (!st && want_loss && !*val_path) st = sx_fail(SX_ERR_ARG, "--val-loss needs --val SHARD (the run records none)");
    if (!st && !*val && *val_path && !mixture_is_spec(val_path))
        st = rundir_recorded_path_check(val_path, "validation data", "--val");
    if (!st && want_loss) {
        batch_source *src = NULL;
        int32_t *tokens = sx_alloc((size_t)batch * (size_t)(seq + 1) * sizeof *tokens, "eval tokens");
        double fp32 = 0, q8 = 0;
        st = tokens ? batch_source_open(&src, val_path, (size_t)seq, false, 1) : sx_fail(SX_ERR_NOMEM, "out of memory");
        if (!st && batch_source_vocab(src) > m.cfg.vocab)
            st = sx_fail(SX_ERR_MISMATCH, "%s has token ids up to %zu, the model %zu", val_path, batch_source_vocab(src), m.cfg.vocab);
        double have = st ? 0 : batch_source_tokens(src), need = (double)batches * (double)batch * (double)(seq + 1);
        if (!st && have > 0 && need > have)   // the windows are spread over the shard: more than it holds overlap
            fprintf(stderr, "sextant eval: note: %ld x %ld windows of %ld tokens read %.0f tokens, more than the %.0f of %s: "
                    "they overlap, so the loss rests on fewer distinct tokens than it reads\n", batches, batch, seq + 1, need,
                    have, val_path);
        if (!st) st = val_loss(&m, src, (size_t)batches, (size_t)batch, (size_t)seq, tokens, &fp32);
        if (!st && int8) st = model_quantize_int8(&m);
        if (!st && int8) st = val_loss(&m, src, (size_t)batches, (size_t)batch, (size_t)seq, tokens, &q8);
        if (!st && as_json) {
            json_t *o = json_pack("{s:f, s:I, s:I, s:I, s:s}", "val_loss", fp32, "batches", (json_int_t)batches, "batch",
                                  (json_int_t)batch, "seq", (json_int_t)seq, "val", val_path);
            if (o && int8) json_object_set_new(o, "val_loss_int8", json_real(q8));
            if (o) json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10));
            if (o) putchar('\n');
            json_decref(o);
        } else if (!st && int8)
            printf("val_loss fp32 %.4f int8 %.4f (%+.3f%%; int8 weights %.2f MB) on %ld batches of %ld x %ld tokens of %s\n",
                   fp32, q8, 100 * (q8 - fp32) / fp32, (double)model_int8_bytes(&m) / 1e6, batches, batch, seq, val_path);
        else if (!st)
            printf("val_loss %.4f on %ld batches of %ld x %ld tokens of %s\n", fp32, batches, batch, seq, val_path);
        batch_source_close(src);
        sx_free(tokens);
    } else if (!st && int8) st = model_quantize_int8(&m);
    if (!st && *names) st = task_suite_open(&s, names, val_path, vocab, (size_t)n, (uint64_t)seed);
    if (st || !*names) { model_free(&m); return cli_report("eval", st); }
    for (size_t k = 0; k < s.n && !st; k++) {
        task_score r;
        if ((st = task_suite_score(&s, k, &m, &r))) break;
        double acc = (double)r.correct / (double)r.n, lo, hi;
        task_wilson(r.correct, r.n, 1.96, &lo, &hi);
        const task_def *t = s.def[k];
        if (as_json) {
            json_t *o = json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:f, s:s, s:f, s:I, s:s}", "task", t->name, "n",
                                  (json_int_t)r.n, "correct", (json_int_t)r.correct, "acc", acc, "acc_lo", lo, "acc_hi",
                                  hi, "loss", r.loss, "loss_unit", t->loss_unit, "chance", t->chance, "seed",
                                  (json_int_t)seed, "val", t->text ? val_path : "");
            json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(10));
            putchar('\n');
            json_decref(o);
        } else
            printf("%-10s acc %.4f [%.4f, %.4f] (%zu/%zu, 95%% Wilson; chance %.2f) | loss %.4f %s\n", t->name, acc, lo,
                   hi, r.correct, r.n, t->chance, r.loss, t->loss_unit);
    }
    task_suite_free(&s);
    model_free(&m);
    return cli_report("eval", st);
}
