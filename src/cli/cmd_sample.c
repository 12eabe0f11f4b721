// sextant sample: loads a checkpoint and generates text with the KV-cache decoder. The prompt is prefilled
// once and forked into --n samples decoded together in one batch. Text in and out is bytes when the model's
// vocabulary is the task's byte vocabulary (257); otherwise prompts and outputs are token ids.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/status.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "infer/generate.h"
#include "infer/task_arith.h"
#include "train/checkpoint.h"

int cmd_sample(int argc, char **argv) {
    const char *ckpt, *prompt, *stop;
    long n, max_new, top_k, seed, ctx;
    double temperature, top_p;
    bool ids;
    const flag_def flags[] = {
        {"checkpoint", FLAG_STR, &ckpt, "", "checkpoint.sxt to load"},
        {"prompt", FLAG_STR, &prompt, "", "prompt text (bytes; \\n allowed), or token ids with --ids"},
        {"ids", FLAG_BOOL, &ids, "false", "prompt and output as comma-separated token ids"},
        {"n", FLAG_INT, &n, "1", "samples (share the prompt's prefill and KV cache)"},
        {"max-new", FLAG_INT, &max_new, "64", "tokens to generate per sample at most"},
        {"temperature", FLAG_DOUBLE, &temperature, "1.0", "0: greedy"},
        {"top-k", FLAG_INT, &top_k, "0", "keep the k most likely tokens (0: all)"},
        {"top-p", FLAG_DOUBLE, &top_p, "1.0", "keep the smallest set with this probability mass"},
        {"stop", FLAG_STR, &stop, "", "comma-separated stop token ids (the end-of-text id of byte models is always one)"},
        {"seed", FLAG_INT, &seed, "1", "sampling seed"},
        {"ctx", FLAG_INT, &ctx, "512", "context positions per sequence"},
    };
    size_t nf = sizeof flags / sizeof *flags;
    int npos;
    sx_status st;
    if (flags_help_or_parse(flags, nf, argc, argv, NULL, 0, &npos,
                            "sample --checkpoint CKPT --prompt TEXT [flags]", "Generates samples with the KV-cache decoder.", &st))
        return 0;
    if (!st && !*ckpt) st = sx_fail(SX_ERR_ARG, "--checkpoint is required");
    if (!st && (n < 1 || max_new < 1 || ctx < 2 || top_k < 0 || temperature < 0 || top_p <= 0 || top_p > 1))
        st = sx_fail(SX_ERR_ARG, "bad --n, --max-new, --ctx, --top-k, --temperature or --top-p");
    char desc[128];
    size_t vocab = 0;
    model_config c;
    model m = {0};
    if (!st) st = checkpoint_peek_model(ckpt, desc, sizeof desc, &vocab);
    if (!st) st = model_config_parse(desc, vocab, &c);
    if (!st) st = model_init(&m, &c);
    if (!st) st = checkpoint_load(ckpt, &m, NULL, NULL);
    if (st) return cli_report("sample", st);
    bool bytes = !ids && vocab == ARITH_VOCAB;
    size_t cap = strlen(prompt) + 2, np = 0, nstop = 0;
    int32_t *ptok = sx_alloc(cap * sizeof *ptok, "cmd_sample ptok"), stops[64];
    if (bytes) {
        ptok[np++] = ARITH_EOT;
        for (const char *s = prompt; *s; s++) {
            if (s[0] == '\\' && s[1] == 'n') { ptok[np++] = '\n'; s++; continue; }
            ptok[np++] = (unsigned char)*s;
        }
        stops[nstop++] = ARITH_EOT;
    } else {
        for (char *e, *s = (char *)prompt; *s; s = *e ? e + 1 : e) {
            long v = strtol(s, &e, 10);
            if (e == s || v < 0 || (size_t)v >= vocab) { st = sx_fail(SX_ERR_ARG, "--prompt: bad token id near '%s'", s); break; }
            ptok[np++] = (int32_t)v;
        }
    }
    for (char *e, *s = (char *)stop; !st && *s && nstop < 64; s = *e ? e + 1 : e) {
        long v = strtol(s, &e, 10);
        if (e == s || v < 0 || (size_t)v >= vocab) { st = sx_fail(SX_ERR_ARG, "--stop: bad token id near '%s'", s); break; }
        stops[nstop++] = (int32_t)v;
    }
    if (!st && np == 0) st = sx_fail(SX_ERR_ARG, "--prompt is empty");
    decoder d = {0};
    if (!st) st = decoder_init(&d, &m, (size_t)ctx);
    gen_config g = {.sampler = {.temperature = temperature, .top_k = (size_t)top_k, .top_p = top_p},
                    .max_new = (size_t)max_new, .stop = stops, .n_stop = nstop};
    rng_state rng;
    rng_seed(&rng, (uint64_t)seed);
    gen_stream *s = NULL;
    clock_t t0 = clock();
    if (!st) st = generate_samples(&d, ptok, np, (size_t)n, &g, &rng, &s);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    for (long i = 0; i < n && !st; i++) {
        printf("--- sample %ld (%zu tokens%s)\n", i, s[i].len, s[i].stopped ? ", stopped" : "");
        for (size_t j = 0; j < s[i].len; j++) {
            if (bytes && s[i].tok[j] < 256) putchar(s[i].tok[j]);
            else if (!bytes) printf(j ? ",%d" : "%d", s[i].tok[j]);
        }
        if (!bytes || (s[i].len && s[i].tok[s[i].len - 1] != '\n')) putchar('\n');
    }
    if (!st)
        fprintf(stderr, "%zu positions decoded (%zu prompt, prefilled once), %.3g GFLOP, %.2f s CPU\n", d.tokens, np,
                d.flops / 1e9, secs);
    gen_streams_free(&d, s, st ? 0 : (size_t)n);
    decoder_free(&d);
    model_free(&m);
    free(ptok);
    return cli_report("sample", st);
}
