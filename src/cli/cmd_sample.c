// sextant sample: loads a checkpoint and generates text with the KV-cache decoder. The prompt is prefilled
// once and forked into --n samples decoded together in one batch. Text in and out: with the BPE vocabulary
// the model was trained with (--vocab, else the one recorded in the run's config.json, else the .sxv beside
// the training shard whose hash the shard names), the prompt is encoded after an end-of-text token (as every
// document starts in a shard) and the prompt and samples print as text; with the task's byte vocabulary
// (257) as bytes; otherwise, or with --ids, as comma-separated token ids. One sample per line unless
// --verbose, which adds a header line per sample and the decoding statistics. With --draft CKPT (a smaller
// model with the same vocabulary, e.g. a lower rung of the same ladder) the samples are decoded one after
// another by speculative decoding (infer/speculative) and the acceptance rate and tokens/s are printed;
// --vs-plain also decodes them plainly and prints the speed-up (and, greedy, whether the tokens agree).
// --int8 decodes with int8 weights (model/quant: per-channel scales), the draft's too.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>
#include "core/status.h"
#include "cli/commands.h"
#include "core/flags.h"
#include "core/threads.h"
#include "data/shard.h"
#include "infer/generate.h"
#include "infer/speculative.h"
#include "infer/task_arith.h"
#include "model/quant.h"
#include "runs/rundir.h"
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
        json_t *c = rundir_config_beside(ckpt);
        const char *rec = json_string_value(json_object_get(c, "vocab"));
        const char *data = json_string_value(json_object_get(c, "train_data"));
        shard_header h;
        sx_status st = rec && *rec ? rundir_recorded_path_check(rec, "vocabulary", "--vocab") : SX_OK;
        if (rec && *rec) snprintf(path, size, "%s", rec);
        else if (data && strncmp(data, "synthetic:", 10) && shard_read_header(data, &h) == SX_OK)
            vocab_find_beside(data, h.vocab_hash, path, size);
        json_decref(c);
        if (st || !path[0]) return st;
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

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The process's CPU time: on a shared machine it moves far less with the load than wall time does.
static double cpu_s(void) { return (double)clock() / CLOCKS_PER_SEC; }

// A progress line on a terminal, at most twice a second: long generations (many samples, long ones) said as
// they go, not only at the end.
typedef struct {
    size_t n, max_new;
    double t0, last;
    bool shown;
    const char *one_by_one;   // "speculative", "plain": samples decoded one after another (NULL: together)
    size_t sample;            // then the one being decoded
} sample_progress;

static void show_progress(void *ctx, size_t step, size_t live) {
    sample_progress *p = ctx;
    double now = wall_s();
    if (now - p->last < 0.5 && step < p->max_new) return;
    p->last = now;
    p->shown = true;
    if (p->one_by_one)
        fprintf(stderr, "\rsample: sample %zu of %zu (%s), step %zu of %zu, %.0f s   ", p->sample + 1, p->n, p->one_by_one,
                step, p->max_new, now - p->t0);
    else
        fprintf(stderr, "\rsample: step %zu of %zu, %zu of %zu samples generating, %.0f s", step, p->max_new, live, p->n,
                now - p->t0);
}

// Ends the progress line (if one was shown) before other output.
static void progress_end(sample_progress *p) {
    if (p->shown) fputc('\n', stderr);
    p->shown = false;
}

// The n samples by speculative decoding, one after another, into *out (as generate_samples makes them);
// prints the acceptance and speed, and with vs_plain the same samples decoded plainly for comparison. prog:
// g's progress line's state, told which sample is being decoded.
static sx_status speculate(decoder *dt, const char *draft_path, size_t k, const int32_t *prompt, size_t np, size_t n,
                           const gen_config *g, sample_progress *prog, uint64_t seed, bool vs_plain, bool int8,
                           gen_stream **out) {
    model dm = {0};
    decoder dd = {0};
    sx_status st = checkpoint_open_model(draft_path, &dm);
    if (!st && int8) st = model_quantize_int8(&dm);
    if (!st) st = decoder_init(&dd, &dm, dt->max_ctx);
    *out = st ? NULL : sx_calloc_n(n, sizeof **out, "cmd_sample spec");
    if (!st && !*out) st = sx_fail(SX_ERR_NOMEM, "out of memory");
    spec_config sc = {.gen = *g, .k = k};
    rng_state rng;
    rng_seed(&rng, seed);
    // One untimed prefill through each model first: the first forwards of a process pay for page faults
    // and the GEMM path's setup, which would count against whichever decoding ran first.
    for (decoder *d = dt; d && !st && vs_plain; d = d == dt ? &dd : NULL) {
        int w = kvcache_new_seq(&d->cache);
        st = w < 0 ? SX_ERR_NOMEM : decoder_forward(d, 1, &w, prompt, NULL);
        if (w >= 0) kvcache_release(&d->cache, w);
    }
    size_t tokens = 0, proposed = 0, accepted = 0, rejected = 0, rounds = 0;
    double t0 = wall_s(), c0 = cpu_s();
    prog->one_by_one = "speculative";
    for (size_t i = 0; i < n && !st; i++) {
        spec_result r;
        prog->sample = i;
        st = spec_generate(dt, &dd, prompt, np, &sc, &rng, &r);
        if (st) break;
        (*out)[i] = (gen_stream){.tok = r.tok, .len = r.len, .cap = r.len, .stopped = r.stopped, .full = r.full};
        tokens += r.len, proposed += r.proposed, accepted += r.accepted, rejected += r.rejected, rounds += r.rounds;
    }
    double secs = wall_s() - t0, cpu = cpu_s() - c0;
    progress_end(prog);
    if (!st)
        fprintf(stderr, "speculative: draft %s (%zu params), k %zu: %zu of %zu examined proposals kept (acceptance %.3f; "
                "%zu proposed), %.2f tokens per target forward, %zu tokens in %.3f s = %.1f tokens/s (%.3f s CPU = %.1f "
                "per CPU second)\n", draft_path, model_param_count(&dm), k, accepted, accepted + rejected,
                accepted + rejected ? (double)accepted / (double)(accepted + rejected) : 0, proposed,
                rounds ? (double)tokens / (double)rounds : 0, tokens, secs, (double)tokens / secs, cpu,
                (double)tokens / cpu);
    if (!st && vs_plain) {   // the same samples decoded plainly, one stream at a time like the speculative ones
        rng_seed(&rng, seed);
        size_t plain_tokens = 0, same = 0;
        double p0 = wall_s(), pc0 = cpu_s();
        prog->one_by_one = "plain";
        for (size_t i = 0; i < n && !st; i++) {
            gen_stream *s = NULL;
            prog->sample = i;
            st = generate_samples(dt, prompt, np, 1, g, &rng, &s);
            if (!st) {
                plain_tokens += s->len;
                same += s->len == (*out)[i].len && !memcmp(s->tok, (*out)[i].tok, s->len * sizeof *s->tok);
            }
            gen_streams_free(dt, s, st ? 0 : 1);
        }
        double plain_s = wall_s() - p0, plain_cpu = cpu_s() - pc0;
        progress_end(prog);
        if (!st)
            fprintf(stderr, "plain: %zu tokens in %.3f s = %.1f tokens/s (%.3f s CPU = %.1f per CPU second); "
                    "speculative/plain %.2fx in CPU time, %.2fx wall%s%zu of %zu samples identical\n", plain_tokens,
                    plain_s, (double)plain_tokens / plain_s, plain_cpu, (double)plain_tokens / plain_cpu,
                    ((double)tokens / cpu) / ((double)plain_tokens / plain_cpu),
                    ((double)tokens / secs) / ((double)plain_tokens / plain_s), g->sampler.temperature > 0 ?
                    " (sampled: different draws of the same law); " : " (greedy); ", same, n);
    }
    if (st && *out) { gen_streams_free(dt, *out, n); *out = NULL; }
    decoder_free(&dd);
    model_free(&dm);
    return st;
}

int cmd_sample(int argc, char **argv) {
    static const flags_command cmd = {
        "sample --checkpoint CKPT --prompt TEXT [flags]",
        "Generates samples with the KV-cache decoder; with a BPE vocabulary each line is the prompt and its continuation.",
        0, 0, NULL};
    const char *ckpt, *prompt, *stop, *vocab_path, *draft;
    long n, max_new, top_k, seed, ctx, draft_k, threads;
    double temperature, top_p;
    bool ids, verbose, vs_plain, int8;
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
        {"draft", FLAG_STR, &draft, "", "speculative decoding with this checkpoint as the draft (same vocabulary, smaller)"},
        {"draft-k", FLAG_INT, &draft_k, "4", "draft tokens proposed per target forward (with --draft)"},
        {"vs-plain", FLAG_BOOL, &vs_plain, "false", "with --draft: also decode plainly and print the speed-up"},
        {"int8", FLAG_BOOL, &int8, "false", "int8 weights (per-channel scales) for the model and the draft"},
        threads_flag(&threads),
    };
    flags_args a;
    if (flags_start(&cmd, flags, FLAGS_COUNT(flags), argc, argv, &a)) return 0;
    sx_status st = a.st;
    if (!st && !*ckpt) st = sx_fail(SX_ERR_ARG, "--checkpoint is required");
    if (!st && (n < 1 || max_new < 1)) st = sx_fail(SX_ERR_ARG, "--n and --max-new must be at least 1");
    if (!st && ctx < 2) st = sx_fail(SX_ERR_ARG, "--ctx must be at least 2 positions, not %ld", ctx);
    if (!st && (top_k < 0 || temperature < 0))
        st = sx_fail(SX_ERR_ARG, "--top-k and --temperature must not be negative (0: all tokens; greedy)");
    if (!st && !(top_p > 0 && top_p <= 1)) st = sx_fail(SX_ERR_ARG, "--top-p must be in (0, 1], not %g", top_p);
    if (!st && *draft && (draft_k < 1 || draft_k > 64)) st = sx_fail(SX_ERR_ARG, "--draft-k must be 1..64, not %ld", draft_k);
    if (!st && !*draft && vs_plain) st = sx_fail(SX_ERR_ARG, "--vs-plain compares speculative decoding: give --draft CKPT");
    if (!st && !*draft && flags_given(&a, "draft-k")) st = sx_fail(SX_ERR_ARG, "--draft-k is a setting of --draft CKPT");
    if (!st && ids && *vocab_path) st = sx_fail(SX_ERR_ARG, "--vocab turns text into ids: with --ids there is no text");
    if (!st) st = threads_start(threads, 0, "sample");
    model m = {0};
    if (!st) st = checkpoint_open_model(ckpt, &m);
    if (!st && int8) st = model_quantize_int8(&m);
    if (st) { model_free(&m); return cli_report("sample", st); }
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
    if (!st && !ptok) st = sx_fail(SX_ERR_NOMEM, "out of memory");
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
    if (!st && np > (size_t)ctx)
        st = sx_fail(SX_ERR_ARG, "the prompt is %zu tokens, more than the context of %ld positions: raise --ctx", np, ctx);
    decoder d = {0};
    if (!st) st = decoder_init(&d, &m, (size_t)ctx);
    gen_config g = {.sampler = {.temperature = temperature, .top_k = (size_t)top_k, .top_p = top_p},
                    .max_new = (size_t)max_new, .stop = stops, .n_stop = nstop};
    rng_state rng;
    rng_seed(&rng, (uint64_t)seed);
    gen_stream *s = NULL;
    double c0 = cpu_s(), w0 = wall_s();
    sample_progress prog = {(size_t)n, (size_t)max_new, w0, w0, false, NULL, 0};
    if (isatty(STDERR_FILENO)) g.progress = show_progress, g.progress_ctx = &prog;
    if (!st && *draft)
        st = speculate(&d, draft, (size_t)draft_k, ptok, np, (size_t)n, &g, &prog, (uint64_t)seed, vs_plain, int8, &s);
    else if (!st) st = generate_samples(&d, ptok, np, (size_t)n, &g, &rng, &s);
    progress_end(&prog);
    double secs = cpu_s() - c0, wall = wall_s() - w0;
    size_t generated = 0, cut = 0;
    for (long i = 0; i < n && !st; i++) generated += s[i].len, cut += s[i].full && s[i].len < (size_t)max_new;
    if (cut)   // a sample ended by the context, not by --max-new or a stop token, is said so
        fprintf(stderr, "sextant sample: %zu of %ld samples stopped short of --max-new %ld: the context of %ld positions "
                "(prompt %zu) is full; raise --ctx\n", cut, n, max_new, ctx, np);
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
    if (!st && verbose && !*draft)
        fprintf(stderr, "%zu positions decoded (%zu prompt, prefilled once), %.3g GFLOP, %.3f s CPU, %.3f s wall: %.1f "
                "generated tokens/s, %.1f per CPU second%s\n", d.tokens, np, d.flops / 1e9, secs, wall,
                (double)generated / wall, (double)generated / secs,
                int8 ? " (int8 weights)" : "");
    gen_streams_free(&d, s, st ? 0 : (size_t)n);
    decoder_free(&d);
    model_free(&m);
    free(ptok);
    bpe_vocab_free(tok);
    return cli_report("sample", st);
}
