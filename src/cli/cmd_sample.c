// sextant sample: loads a checkpoint and generates text with the KV-cache decoder. The prompt is prefilled
// once and forked into --n samples decoded together in one batch. Text in and out: with the BPE vocabulary
// the model was trained with (--vocab, else the one recorded in the run's config.json, else the .sxv beside
// the training shard whose hash the shard names), the prompt is encoded after an end-of-text token (as every
// document starts in a shard) and the prompt and samples print as text; with the task's byte vocabulary
// (257) as bytes; otherwise, or with --ids, as comma-separated token ids. One sample per line unless
// --verbose, which adds a header line per sample and the decoding statistics.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>
#include "core/status.h"
#include "cli/commands.h"
#include "core/flags.h"
#include "data/shard.h"
#include "infer/generate.h"
#include "infer/task_arith.h"
#include "tok/vocab_io.h"
#include "train/checkpoint.h"

// The vocabulary for a checkpoint of a model with `vocab` ids: --vocab when given, else the run's
// config.json ("vocab", or the .sxv beside "train_data" with the shard's hash). *out stays NULL when none
// is found (not an error: prompts and samples are then token ids); *path names where it came from.
static sx_status find_vocab(const char *ckpt, const char *given, size_t vocab, bpe_vocab **out, char *path, size_t size) {
    *out = NULL;
    path[0] = 0;
    if (*given) snprintf(path, size, "%s", given);
    else {
        char cfg[4200];
        snprintf(cfg, sizeof cfg, "%s", ckpt);
        char *slash = strrchr(cfg, '/');
        snprintf(slash ? slash + 1 : cfg, sizeof cfg - (size_t)(slash ? slash + 1 - cfg : 0), "config.json");
        json_t *c = json_load_file(cfg, 0, NULL);
        const char *rec = json_string_value(json_object_get(c, "vocab"));
        const char *data = json_string_value(json_object_get(c, "train_data"));
        shard_header h;
        if (rec && *rec) snprintf(path, size, "%s", rec);
        else if (data && strncmp(data, "synthetic:", 10) && shard_read_header(data, &h) == SX_OK)
            vocab_find_beside(data, h.vocab_hash, path, size);
        json_decref(c);
        if (!path[0]) return SX_OK;
    }
    sx_status st = vocab_load(path, out);
    if (!st && (*out)->n_ids != vocab)
        st = sx_fail(SX_ERR_MISMATCH, "vocabulary %s has %zu tokens, the model in %s has %zu: give the --vocab its "
                     "training shards were written with", path, (*out)->n_ids, ckpt, vocab);
    if (st) { bpe_vocab_free(*out); *out = NULL; }
    return st;
}

// Comma-separated token ids below vocab into ids (appended at *n, at most cap); what names the flag. A bad
// --prompt gets the hint to give a vocabulary unless no_hint (--ids was asked for).
static sx_status parse_ids(const char *text, size_t vocab, int32_t *ids, size_t *n, size_t cap, const char *what,
                           bool no_hint) {
    for (char *e, *s = (char *)text; *s && *n < cap; s = *e ? e + 1 : e) {
        long v = strtol(s, &e, 10);
        if (e == s || (*e && *e != ',') || v < 0 || (size_t)v >= vocab)
            return sx_fail(SX_ERR_ARG, "%s: '%s' is not comma-separated token ids below %zu%s", what, text, vocab,
                           no_hint || strcmp(what, "--prompt") ? "" : "; for a text prompt give --vocab FILE "
                           "(the .sxv vocabulary the training shards were written with)");
        ids[(*n)++] = (int32_t)v;
    }
    return SX_OK;
}

int cmd_sample(int argc, char **argv) {
    static const flags_command cmd = {
        "sample --checkpoint CKPT --prompt TEXT [flags]",
        "Generates samples with the KV-cache decoder; with a BPE vocabulary each line is the prompt and its continuation.",
        0, 0, NULL};
    const char *ckpt, *prompt, *stop, *vocab_path;
    long n, max_new, top_k, seed, ctx;
    double temperature, top_p;
    bool ids, verbose;
    const flag_def flags[] = {
        {"checkpoint", FLAG_STR, &ckpt, "", "checkpoint.sxt to load"},
        {"prompt", FLAG_STR, &prompt, "", "prompt text (\\n allowed), or token ids with --ids"},
        {"vocab", FLAG_STR, &vocab_path, "", "BPE vocabulary for text in and out (default: the run's, from its config.json)"},
        {"ids", FLAG_BOOL, &ids, "false", "prompt and output as comma-separated token ids"},
        {"verbose", FLAG_BOOL, &verbose, "false", "a header line per sample and the decoding statistics"},
        {"n", FLAG_INT, &n, "1", "samples (share the prompt's prefill and KV cache)"},
        {"max-new", FLAG_INT, &max_new, "64", "tokens to generate per sample at most"},
        {"temperature", FLAG_DOUBLE, &temperature, "1.0", "0: greedy"},
        {"top-k", FLAG_INT, &top_k, "0", "keep the k most likely tokens (0: all)"},
        {"top-p", FLAG_DOUBLE, &top_p, "1.0", "keep the smallest set with this probability mass"},
        {"stop", FLAG_STR, &stop, "", "comma-separated stop token ids (the end-of-text id of byte models is always one)"},
        {"seed", FLAG_INT, &seed, "1", "sampling seed"},
        {"ctx", FLAG_INT, &ctx, "512", "context positions per sequence"},
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && !*ckpt) st = sx_fail(SX_ERR_ARG, "--checkpoint is required");
    if (!st && (n < 1 || max_new < 1 || ctx < 2 || top_k < 0 || temperature < 0 || top_p <= 0 || top_p > 1))
        st = sx_fail(SX_ERR_ARG, "bad --n, --max-new, --ctx, --top-k, --temperature or --top-p");
    model m = {0};
    if (!st) st = checkpoint_open_model(ckpt, &m);
    if (st) return cli_report("sample", st);
    size_t vocab = m.cfg.vocab;
    bool bytes = !ids && vocab == ARITH_VOCAB;
    bpe_vocab *tok = NULL;
    char tok_path[4096];
    if (!ids && !bytes) st = find_vocab(ckpt, vocab_path, vocab, &tok, tok_path, sizeof tok_path);
    if (!st && tok && verbose) fprintf(stderr, "vocabulary %s (%s)\n", tok_path, tok->name);
    tok_ids enc = {0};
    if (!st && tok) st = bpe_encode(tok, (const uint8_t *)prompt, strlen(prompt), false, &enc);
    size_t cap = strlen(prompt) + enc.n + 2, np = 0, nstop = 0;
    int32_t *ptok = sx_alloc(cap * sizeof *ptok, "cmd_sample ptok"), stops[64];
    if (!st && bytes) {
        ptok[np++] = ARITH_EOT;
        for (const char *s = prompt; *s; s++) {
            if (s[0] == '\\' && s[1] == 'n') { ptok[np++] = '\n'; s++; continue; }
            ptok[np++] = (unsigned char)*s;
        }
        stops[nstop++] = ARITH_EOT;
    } else if (!st && tok) {
        if (tok->eot != TOK_NONE) ptok[np++] = (int32_t)tok->eot, stops[nstop++] = (int32_t)tok->eot;
        for (size_t i = 0; i < enc.n; i++) ptok[np++] = (int32_t)enc.ids[i];
    } else if (!st) st = parse_ids(prompt, vocab, ptok, &np, cap, "--prompt", ids);
    tok_ids_free(&enc);
    size_t before = nstop;
    if (!st) st = parse_ids(stop, vocab, stops + nstop, &nstop, 64 - before, "--stop", true);
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
        if (verbose) printf("--- sample %ld (%zu tokens%s)\n", i, s[i].len, s[i].stopped ? ", stopped" : "");
        size_t len = s[i].len;
        if (s[i].stopped && len && tok && (uint32_t)s[i].tok[len - 1] == tok->eot) len--;   // the stop token
        if (tok) {
            tok_bytes text = {0};
            uint32_t *all = sx_alloc((np + len) * sizeof *all, "cmd_sample all");
            size_t k = 0;
            for (size_t j = 0; j < np; j++)
                if ((uint32_t)ptok[j] != tok->eot) all[k++] = (uint32_t)ptok[j];
            for (size_t j = 0; j < len; j++) all[k++] = (uint32_t)s[i].tok[j];
            st = all ? bpe_decode(tok, all, k, &text) : sx_fail(SX_ERR_NOMEM, "out of memory");
            if (!st) fwrite(text.data, 1, text.n, stdout);
            if (!st && (!text.n || text.data[text.n - 1] != '\n')) putchar('\n');
            tok_bytes_free(&text);
            free(all);
            continue;
        }
        for (size_t j = 0; j < len; j++) {
            if (bytes && s[i].tok[j] < 256) putchar(s[i].tok[j]);
            else if (!bytes) printf(j ? ",%d" : "%d", s[i].tok[j]);
        }
        if (!bytes || (len && s[i].tok[len - 1] != '\n')) putchar('\n');
    }
    if (!st && verbose)
        fprintf(stderr, "%zu positions decoded (%zu prompt, prefilled once), %.3g GFLOP, %.2f s CPU\n", d.tokens, np,
                d.flops / 1e9, secs);
    gen_streams_free(&d, s, st ? 0 : (size_t)n);
    decoder_free(&d);
    model_free(&m);
    free(ptok);
    bpe_vocab_free(tok);
    return cli_report("sample", st);
}
