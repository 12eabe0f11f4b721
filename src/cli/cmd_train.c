// sextant train: flags -> train_options -> train_run.
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/fsutil.h"
#include "dist/dist.h"
#include "train/train.h"

int cmd_train(int argc, char **argv) {
    train_options o = {0};
    const char *optimizer = NULL;
    double lr, beta1, beta2, eps, wd, muon_lr, muon_mom, muon_wd, clip;
    bool decay_embed;
    const flag_def flags[] = {
        {"model", FLAG_STR, &o.model, "d4", "model descriptor (docs/MODEL.md), e.g. d6-kv2-swiglu"},
        {"train", FLAG_STR, &o.train_data, "", "training token shard, or synthetic:V"},
        {"val", FLAG_STR, &o.val_data, "", "validation token shard (default: fixed windows of --train)"},
        {"data-order", FLAG_STR, &o.data_order, "random", "random windows, or epoch: every window once per epoch"},
        {"batch", FLAG_INT, &o.batch, "8", "sequences per micro-batch"},
        {"seq", FLAG_INT, &o.seq, "256", "tokens per sequence (context length)"},
        {"grad-accum", FLAG_INT, &o.grad_accum, "1", "micro-batches per optimizer step"},
        {"steps", FLAG_INT, &o.steps, "0", "optimizer steps (0: from --tokens)"},
        {"tokens", FLAG_DOUBLE, &o.tokens, "0", "token budget when --steps is 0"},
        {"schedule", FLAG_STR, &o.schedule, "cosine:min=0.1", "LR schedule: constant|cosine|linear|wsd|file:PATH[:k=v,...]"},
        {"warmup", FLAG_STR, &o.warmup, "", "warmup: a fraction (<1) or a number of steps"},
        {"optimizer", FLAG_STR, &optimizer, "adamw", "adamw, or muon (Muon for hidden matrices, AdamW for the rest)"},
        {"lr", FLAG_DOUBLE, &lr, "3e-3", "AdamW peak learning rate"},
        {"beta1", FLAG_DOUBLE, &beta1, "0.9", "AdamW beta1"},
        {"beta2", FLAG_DOUBLE, &beta2, "0.95", "AdamW beta2"},
        {"eps", FLAG_DOUBLE, &eps, "1e-8", "AdamW epsilon"},
        {"wd", FLAG_DOUBLE, &wd, "0.1", "AdamW weight decay (hidden matrices and untied head)"},
        {"decay-embed", FLAG_BOOL, &decay_embed, "false", "also decay the embedding"},
        {"muon-lr", FLAG_DOUBLE, &muon_lr, "0.02", "Muon peak learning rate"},
        {"muon-momentum", FLAG_DOUBLE, &muon_mom, "0.95", "Muon momentum"},
        {"muon-wd", FLAG_DOUBLE, &muon_wd, "0", "Muon weight decay"},
        {"clip", FLAG_DOUBLE, &clip, "1.0", "global gradient-norm clip (0: off)"},
        {"seed", FLAG_INT, &o.seed, "1", "seed for initialisation and data order"},
        {"init-by-name", FLAG_BOOL, &o.init_by_name, "false", "draw each tensor's initial weights from (seed, its name), "
                                                               "not one stream: variants sharing a tensor start it alike"},
        {"eval-every", FLAG_INT, &o.eval_every, "0", "evaluate every N steps (0: off)"},
        {"eval-at", FLAG_STR, &o.eval_at, "", "also evaluate at these fractions of the run, e.g. 0.25,0.5,0.75"},
        {"eval-batches", FLAG_INT, &o.eval_batches, "8", "batches per evaluation"},
        {"ckpt-every", FLAG_INT, &o.ckpt_every, "0", "checkpoint every N steps (0: only at the end)"},
        {"out", FLAG_STR, &o.out, "", "run directory (config.json, metrics.jsonl, checkpoint.sxt)"},
        {"dtype", FLAG_STR, &o.dtype, "fp32", "fp32, or bf16 (bf16 matmul operands, fp32 accumulation and master weights)"},
        {"threads", FLAG_INT, &o.threads, "0", "OpenMP threads (0: the cores other processes leave free, rechecked as it runs)"},
        {"resume", FLAG_BOOL, &o.resume, "false", "continue the run in --out from its checkpoint"},
        {"override", FLAG_STR, &o.override, "", "with --resume: flags that may differ from the run's (e.g. steps)"},
        {"resume-or-start", FLAG_BOOL, &o.resume_or_start, "false", "continue the run in --out if it has a checkpoint, else start it (a job that may be killed and rerun)"},
        {"branch-from", FLAG_STR, &o.branch_from, "", "start from another run's checkpoint (e.g. a cooldown branch)"},
        {"save-at", FLAG_STR, &o.save_at, "", "keep checkpoint copies ckpt-<step>.sxt at these fractions"},
        {"forecast", FLAG_STR, &o.forecast, "", "forecast.json to verify against while training"},
        {"peak-gflops", FLAG_DOUBLE, &o.peak_gflops, "0", "peak for MFU (0: this machine's fp32/bf16 peak)"},
        {"quiet", FLAG_BOOL, &o.quiet, "false", "no progress line"},
        {"on-spike", FLAG_STR, &o.on_spike, "stop", "on a non-finite or spiking loss: stop, or rollback to the last checkpoint and skip the batch"},
        {"spike-threshold", FLAG_DOUBLE, &o.spike_threshold, "0", "a loss above X times its running average is a spike (0: off)"},
    };
    size_t n = sizeof flags / sizeof *flags;
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, n, argc, argv, NULL, 0, &npos, "train --model d4 --train SHARD --out DIR [flags]",
                            "Trains a model; writes config.json, metrics.jsonl (one line per step) and checkpoint.sxt to --out.",
                            &st))
        return 0;
    if (!st && !*o.train_data) st = sx_fail(SX_ERR_ARG, "--train is required (a token shard or synthetic:V)");
    if (!st && *o.forecast && o.steps <= 0 && o.tokens <= 0) {
        // Verifying a forecast: the run length defaults to the forecast's.
        json_t *fc = NULL;
        st = fs_load_json(o.forecast, &fc);
        o.steps = fc ? (long)json_integer_value(json_object_get(json_object_get(fc, "hero"), "steps")) : 0;
        json_decref(fc);
    }
    if (o.resume_or_start) o.resume = true;
    optimizer_config_default(&o.opt);
    if (!st) st = optimizer_kind_parse(optimizer, &o.opt.kind);
    o.opt.lr = (float)lr;
    o.opt.beta1 = (float)beta1;
    o.opt.beta2 = (float)beta2;
    o.opt.eps = (float)eps;
    o.opt.weight_decay = (float)wd;
    o.opt.decay_embed = decay_embed;
    o.opt.muon_lr = (float)muon_lr;
    o.opt.muon_momentum = (float)muon_mom;
    o.opt.muon_weight_decay = (float)muon_wd;
    o.opt.clip_norm = (float)clip;
    if (!st) st = optimizer_config_check(&o.opt);
    if (!st) st = dist_init();   // under mpirun: joins the ranks (docs/DISTRIBUTED.md)
    if (st) return cli_report("train", st);
    o.echo = flags_to_json(flags, n);
    st = train_run(&o);
    json_decref(o.echo);
    int rc = cli_report("train", st);   // before dist_finalize, which may abort the job
    dist_finalize();
    return rc;
}
