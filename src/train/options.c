// train/options: see options.h.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "core/threads.h"
#include "dist/dist.h"
#include "train/options.h"

size_t train_options_flags(train_options *o, flag_def defs[TRAIN_MAX_FLAGS]) {
    // The defaults of the optimizer's settings are optimizer_config_default's (test_train checks they agree).
    const flag_def table[] = {
        {"model", FLAG_STR, &o->model, "d4", "model descriptor (docs/MODEL.md), e.g. d6-kv2-swiglu"},
        {"train", FLAG_STR, &o->train_data, "", "training token shard, or synthetic:V"},
        {"val", FLAG_STR, &o->val_data, "", "validation token shard (default: fixed windows of --train)"},
        {"data-order", FLAG_STR, &o->data_order, "random", "random windows, or epoch: every window once per epoch"},
        {"batch", FLAG_INT, &o->batch, "8", "sequences per micro-batch"},
        {"seq", FLAG_INT, &o->seq, "256", "tokens per sequence (context length)"},
        {"grad-accum", FLAG_INT, &o->grad_accum, "1", "micro-batches per optimizer step"},
        {"steps", FLAG_INT, &o->steps, "0", "optimizer steps (0: from --tokens)"},
        {"tokens", FLAG_DOUBLE, &o->tokens, "0", "token budget, instead of --steps"},
        {"unique-tokens", FLAG_DOUBLE, &o->unique_tokens, "0", "train on only N tokens of --train (windows spread evenly "
                                                               "over it), repeating them (data-limited runs; 0: all)"},
        {"schedule", FLAG_STR, &o->schedule, "cosine:min=0.1", "LR schedule: constant|cosine|linear|wsd|file:PATH[:k=v,...]"},
        {"warmup", FLAG_STR, &o->warmup, "", "warmup: a fraction (<1) or a number of steps"},
        {"optimizer", FLAG_STR, &o->optimizer, "adamw", "adamw; muon (Muon for hidden matrices, AdamW for the rest); "
                                                        "adamh, muonh (hidden matrices on a hyperball along the Adam / "
                                                        "Muon direction, AdamW for the rest)"},
        {"lr", FLAG_FLOAT, &o->opt.lr, "3e-3", "AdamW peak learning rate"},
        {"beta1", FLAG_FLOAT, &o->opt.beta1, "0.9", "AdamW beta1"},
        {"beta2", FLAG_FLOAT, &o->opt.beta2, "0.95", "AdamW beta2"},
        {"eps", FLAG_FLOAT, &o->opt.eps, "1e-8", "AdamW epsilon"},
        {"wd", FLAG_FLOAT, &o->opt.weight_decay, "0.1", "AdamW weight decay (hidden matrices and untied head)"},
        {"decay-embed", FLAG_BOOL, &o->opt.decay_embed, "false", "also decay the embedding"},
        {"muon-lr", FLAG_FLOAT, &o->opt.muon_lr, "0.02", "Muon peak learning rate"},
        {"muon-momentum", FLAG_FLOAT, &o->opt.muon_momentum, "0.95", "Muon momentum"},
        {"muon-wd", FLAG_FLOAT, &o->opt.muon_weight_decay, "0", "Muon weight decay"},
        {"hyper-lr", FLAG_FLOAT, &o->opt.hyper_lr, "0.02", "adamh/muonh: peak fraction of each hidden matrix's norm "
                                                          "moved per step"},
        {"cautious-wd", FLAG_BOOL, &o->opt.cautious_wd, "false", "decay (AdamW, Muon) only where the update and the "
                                                                 "weight have the same sign"},
        {"clip", FLAG_FLOAT, &o->opt.clip_norm, "1.0", "global gradient-norm clip (0: off)"},
        {"seed", FLAG_INT, &o->seed, "1", "seed for initialisation and data order"},
        {"init-by-name", FLAG_BOOL, &o->init_by_name, "false", "draw each tensor's initial weights from (seed, its name), "
                                                                "not one stream: variants sharing a tensor start it alike"},
        {"eval-every", FLAG_INT, &o->eval_every, "0", "evaluate every N steps (0: off)"},
        {"eval-at", FLAG_STR, &o->eval_at, "", "also evaluate at these fractions of the run, e.g. 0.25,0.5,0.75"},
        {"eval-batches", FLAG_INT, &o->eval_batches, "8", "batches per evaluation"},
        {"eval-tasks", FLAG_STR, &o->eval_tasks, "", "also measure these downstream tasks at every evaluation "
                                                     "(cloze,choice,choice_pmi from --val; arith for ttc models; docs/TASKS.md)"},
        {"eval-task-items", FLAG_INT, &o->eval_task_items, "200", "items per task and evaluation (--eval-tasks)"},
        {"eval-tasks-val", FLAG_STR, &o->eval_tasks_val, "", "token shard the text tasks are built from (default: "
                                                             "--val; needed when --val is a mixture)"},
        {"ckpt-every", FLAG_INT, &o->ckpt_every, "0", "checkpoint every N steps (0: only at the end)"},
        {"out", FLAG_STR, &o->out, "", "run directory (config.json, metrics.jsonl, checkpoint.sxt)"},
        {"dtype", FLAG_STR, &o->dtype, "fp32", "fp32, or bf16 (bf16 matmul operands, fp32 accumulation and master weights)"},
        threads_flag(&o->threads),
        {"resume", FLAG_BOOL, &o->resume, "false", "continue the run in --out from its checkpoint"},
        {"override", FLAG_STR, &o->override, "", "with --resume: flags that may differ from the run's (e.g. steps)"},
        {"resume-or-start", FLAG_BOOL, &o->resume_or_start, "false", "continue the run in --out if it has a checkpoint, else start it (a job that may be killed and rerun)"},
        {"branch-from", FLAG_STR, &o->branch_from, "", "start from another run's checkpoint (e.g. a cooldown branch)"},
        {"init-from", FLAG_STR, &o->init_from, "", "start from another run's weights (same tensor shapes) with a fresh "
                                                   "optimizer at step 0, e.g. a curriculum's next stage"},
        {"save-at", FLAG_STR, &o->save_at, "", "keep checkpoint copies ckpt-<step>.sxt at these fractions"},
        {"forecast", FLAG_STR, &o->forecast, "", "forecast.json to verify against while training"},
        {"peak-gflops", FLAG_DOUBLE, &o->peak_gflops, "0", "peak for MFU (0: this machine's fp32/bf16 peak)"},
        {"quiet", FLAG_BOOL, &o->quiet, "false", "no progress line"},
        {"bucket-mb", FLAG_DOUBLE, &o->bucket_mb, "4", "under mpirun: gradients are summed over the ranks in buckets "
                                                      "of this many MiB, each started during the backward as soon as "
                                                      "it is final (0: one all-reduce after the backward)"},
        {"zero1", FLAG_BOOL, &o->zero1, "false", "under mpirun: shard the optimizer state over the ranks (ZeRO-1): "
                                                 "each updates its part of the tensors, then the parameters are "
                                                 "all-gathered (same results, less memory per rank)"},
        {"on-spike", FLAG_STR, &o->on_spike, "stop", "on a non-finite or spiking loss: stop, or rollback to the last checkpoint and skip the batch"},
        {"spike-threshold", FLAG_DOUBLE, &o->spike_threshold, "0", "a loss above X times its running average is a spike (0: off)"},
        {"mtp", FLAG_INT, &o->mtp, "0", "multi-token prediction: each position also predicts the tokens 1..K further "
                                        "ahead, weights 2^-k decaying to 0 by --aux-end (0: off; docs/MODEL.md Loss)"},
        {"prefix-aux", FLAG_DOUBLE, &o->prefix_aux, "0", "weight of the prefix-token auxiliary loss (credit for the "
                                                         "target's longest prefix token; modded-nanogpt uses 0.25), 0 by --aux-end"},
        {"aux-end", FLAG_DOUBLE, &o->aux_end, "0.667", "fraction of the run at which the --mtp and --prefix-aux weights reach 0"},
        {"prefix-vocab", FLAG_STR, &o->prefix_vocab, "", "vocabulary for --prefix-aux's prefix map (default: the .sxv beside --train)"},
    };
    size_t n = sizeof table / sizeof *table;
    _Static_assert(sizeof table / sizeof *table <= TRAIN_MAX_FLAGS, "raise TRAIN_MAX_FLAGS");
    memcpy(defs, table, sizeof table);
    return n;
}

void train_options_default(train_options *o) {
    memset(o, 0, sizeof *o);
    optimizer_config_default(&o->opt);   // kind, and any setting the table does not name
    flag_def defs[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(o, defs);
    SX_CHECK(flags_set_defaults(defs, n) == SX_OK, "fix the default in train_options_flags that does not parse");
}

sx_status train_options_parse_args(train_options *o, int argc, char **argv) {
    flag_def defs[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(o, defs);
    int npos;
    bool help;
    sx_status st = flags_parse_args(defs, n, argc, argv, NULL, 0, &npos, &help, NULL);
    if (!st && help) st = sx_fail(SX_ERR_ARG, "--help is not a training option");
    return st;
}

sx_status train_options_check(train_options *o) {
    sx_status st = optimizer_kind_parse(o->optimizer, &o->opt.kind);
    if (!st) st = optimizer_config_check(&o->opt);
    if (!st) st = optimizer_config_check_used(&o->opt);
    // A setting of a feature that is off would be ignored: refused.
    train_options d;
    train_options_default(&d);
    if (!st && !*o->eval_tasks && (o->eval_task_items != d.eval_task_items || *o->eval_tasks_val))
        st = sx_fail(SX_ERR_ARG, "--eval-task-items and --eval-tasks-val are settings of --eval-tasks (none given)");
    if (!st && o->mtp == 0 && o->prefix_aux == 0 && o->aux_end != d.aux_end)
        st = sx_fail(SX_ERR_ARG, "--aux-end is when the --mtp and --prefix-aux weights reach 0: neither is on");
    if (!st && o->prefix_aux == 0 && *o->prefix_vocab)
        st = sx_fail(SX_ERR_ARG, "--prefix-vocab is the vocabulary of --prefix-aux's prefix map: --prefix-aux is 0");
    return st;
}

sx_status train_spawn(const train_options *o, char *const *extra, int n_extra, const char *exe, const char *log_path,
                      pid_t *pid) {
    train_options copy = *o;   // the table's targets are writable; the values are only read
    flag_def defs[TRAIN_MAX_FLAGS];
    size_t n = train_options_flags(&copy, defs);
    enum { MAX_ARGS = 2 * TRAIN_MAX_FLAGS + 3 + 128 };
    char buf[16384], *argv[MAX_ARGS] = {(char *)exe, "train"};
    int argc = 2;
    sx_status st = flags_to_argv(defs, n, buf, sizeof buf, argv, &argc, MAX_ARGS - 128);
    if (st) return st;
    if (n_extra > 128) return sx_fail(SX_ERR_ARG, "more than 128 extra training arguments");
    for (int i = 0; i < n_extra; i++) argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t parent = getpid();
    *pid = fork();
    if (*pid < 0) return sx_fail(SX_ERR_IO, "cannot start a trainer for %s (fork failed)", o->out);
    if (*pid > 0) return SX_OK;
    // A trainer stops (with a checkpoint, as on SIGTERM) when its parent (the ladder) dies, even by SIGKILL:
    // killing only the ladder once left orphans training on, and a second `ladder run` then saw their locks
    // as failures.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);   // the parent died before the line above
    int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    dist_forget_launcher();   // the child is a plain process, not another rank
    execv(exe, argv);
    dprintf(2, "sextant: cannot start the trainer %s: %s\n", exe, strerror(errno));   // the run's log says why
    _exit(127);
}
