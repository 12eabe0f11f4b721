// cmd_tokenize: `sextant tokenize train|encode|decode|shard`, the command-line edge of the tokenizer
// (src/tok) and the shard writer (src/data/shard). Reads files or stdin, prints one-line errors.
// Not responsible for any tokenization logic.
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/commands.h"
#include "core/flags.h"
#include "core/fsutil.h"
#include "data/mixture.h"
#include "data/shard.h"
#include "tok/bpe_train.h"
#include "tok/corpus.h"
#include "tok/vocab_io.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fail(sx_status st) { return cli_report("tokenize", st); }

// Reads a file ("-" or NULL: stdin) into out (overwritten).
static sx_status read_input(const char *path, tok_bytes *out) {
    if (path && strcmp(path, "-")) return vocab_read_file(path, out);
    out->n = 0;
    uint8_t buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, stdin)) > 0) {
        sx_status st = tok_bytes_append(out, buf, got);
        if (st) return st;
    }
    return ferror(stdin) ? sx_fail(SX_ERR_IO, "cannot read standard input") : SX_OK;
}

static sx_status write_output(const char *path, const void *data, size_t n) {
    if (path && *path && strcmp(path, "-")) return fs_write_bytes(path, data, n);
    bool bad = fwrite(data, 1, n, stdout) != n || fflush(stdout) != 0;
    return bad ? sx_fail(SX_ERR_IO, "cannot write standard output") : SX_OK;
}

// flags_start, and on a usage error the message and the usage on stderr. Returns the exit code when the
// command ends here (0 after --help, 2), else -1.
static int usage_or_parse(const flags_command *c, const flag_def *defs, size_t n, int argc, char **argv, flags_args *a) {
    if (flags_start(c, defs, n, argc, argv, a)) return 0;
    if (a->st) { fail(a->st); flags_usage(stderr, c->synopsis, c->about, defs, n); return 2; }
    return -1;
}

static int do_train(int argc, char **argv) {
    static const flags_command cmd = {
        "tokenize train [flags] CORPUS...",
        "Learns a byte-level BPE vocabulary from corpus files (documents separated by "
        "<|endoftext|> lines; - for stdin).",
        0, FLAGS_MAX_POS, NULL};
    const char *out = NULL, *pretok = NULL, *name = NULL;
    long vocab_size = 0;
    flag_def defs[] = {
        { "out", FLAG_STR, &out, "vocab.sxv", "vocabulary file to write" },
        { "vocab-size", FLAG_INT, &vocab_size, "8192", "tokens: 256 bytes + merges + <|endoftext|>" },
        { "pretok", FLAG_STR, &pretok, "gpt2", "pre-tokenizer: gpt2, cl100k or o200k" },
        { "name", FLAG_STR, &name, "", "vocabulary name (default sextant-bpe-SIZE)" },
    };
    flags_args a;
    int rc = usage_or_parse(&cmd, defs, FLAGS_COUNT(defs), argc, argv, &a);
    if (rc >= 0) return rc;
    int kind = pretok_from_name(pretok);
    if (kind < 0) return fail(sx_fail(SX_ERR_ARG, "--pretok %s: use gpt2, cl100k or o200k", pretok));
    if (a.npos == 0) a.pos[a.npos++] = "-";
    char def_name[64];
    snprintf(def_name, sizeof def_name, "sextant-bpe-%ld", vocab_size);
    double t0 = now_s();
    bpe_trainer *tr = NULL;
    bpe_vocab *v = NULL;
    tok_bytes text = {0};
    uint64_t bytes = 0;
    sx_status st = bpe_trainer_create(&tr, (pretok_kind)kind);
    for (int i = 0; i < a.npos && !st; i++) {
        if ((st = read_input(a.pos[i], &text))) break;
        bytes += text.n;
        size_t p = 0, len;
        const uint8_t *doc;
        while (!st && corpus_next_doc(text.data, text.n, &p, &doc, &len)) st = bpe_trainer_add_text(tr, doc, len);
    }
    tok_bytes_free(&text);
    double t1 = now_s();
    size_t uniq = 0, merges = 0;
    uint64_t words = 0;
    if (!st) {
        bpe_trainer_stats(tr, &uniq, &words);
        if (!words) st = sx_fail(SX_ERR_ARG, "the corpus has no text to learn a vocabulary from (%llu bytes)",
                                 (unsigned long long)bytes);
    }
    if (!st) {
        st = bpe_trainer_run(tr, vocab_size < 0 ? 0 : (size_t)vocab_size, *name ? name : def_name, &v, NULL, &merges);
    }
    if (!st) st = vocab_save_sx(v, out);
    double t2 = now_s();
    if (!st)
        fprintf(stderr, "trained %s: %zu merges from %.1f MB (%llu words, %zu unique); counting %.2f s, merging "
                "%.2f s, total %.2f s\n", out, merges, bytes / 1e6, (unsigned long long)words, uniq, t1 - t0,
                t2 - t1, t2 - t0);
    if (!st && vocab_size > 257 && merges < (size_t)vocab_size - 257)
        fprintf(stderr, "warning: the corpus gave only %zu merges: the vocabulary has %zu tokens, not the %ld asked\n",
                merges, merges + 257, vocab_size);
    bpe_trainer_free(tr);
    bpe_vocab_free(v);
    return st ? fail(st) : 0;
}

static sx_status load_vocab(const char *spec, bpe_vocab **v) {
    if (!spec || !*spec) return sx_fail(SX_ERR_ARG, "--vocab is required (a .sxv file, a GPT-2 directory or a "
                                        ".tiktoken file; scripts/fetch-data puts them in data/vocab)");
    return vocab_load(spec, v);
}

// The vocabulary and the one input (FILE, or stdin without one) of encode and decode.
static sx_status vocab_and_input(const char *action, const flags_args *a, const char *vocab, bpe_vocab **v,
                                 tok_bytes *text) {
    sx_status st = a->npos > 1 ? sx_fail(SX_ERR_ARG, "%s takes one input file", action) : load_vocab(vocab, v);
    return st ? st : read_input(a->npos ? a->pos[0] : NULL, text);
}

static int do_encode(int argc, char **argv) {
    static const flags_command cmd = {
        "tokenize encode --vocab V [FILE]",
        "Encodes a file (or stdin) to token ids.",
        0, FLAGS_MAX_POS, NULL};
    const char *vocab = NULL, *out = NULL;
    bool special = false, stats = false;
    flag_def defs[] = {
        { "vocab", FLAG_STR, &vocab, NULL, "vocabulary: .sxv file, GPT-2 directory, or [ENCODING:]FILE.tiktoken" },
        { "out", FLAG_STR, &out, "-", "where to write the ids (one line, space-separated)" },
        { "special", FLAG_BOOL, &special, NULL, "turn special-token strings such as <|endoftext|> into their ids" },
        { "stats", FLAG_BOOL, &stats, NULL, "print bytes, tokens and encoding speed to stderr" },
    };
    flags_args a;
    int rc = usage_or_parse(&cmd, defs, FLAGS_COUNT(defs), argc, argv, &a);
    if (rc >= 0) return rc;
    bpe_vocab *v = NULL;
    tok_bytes text = {0}, txt = {0};
    tok_ids ids = {0};
    sx_status st = vocab_and_input("encode", &a, vocab, &v, &text);
    double t0 = now_s();
    if (!st) st = bpe_encode(v, text.data, text.n, special, &ids);
    double dt = now_s() - t0;
    for (size_t i = 0; i < ids.n && !st; i++) {
        char num[16];
        int len = snprintf(num, sizeof num, i + 1 < ids.n ? "%u " : "%u", ids.ids[i]);
        st = tok_bytes_append(&txt, num, (size_t)len);
    }
    if (!st) st = tok_bytes_append(&txt, "\n", 1);
    if (!st) st = write_output(out, txt.data, txt.n);
    if (!st && stats)
        fprintf(stderr, "encoded %zu bytes into %zu tokens in %.3f s: %.2f MB/s\n", text.n, ids.n, dt,
                text.n / 1e6 / (dt > 0 ? dt : 1e-9));
    bpe_vocab_free(v);
    tok_bytes_free(&text);
    tok_bytes_free(&txt);
    tok_ids_free(&ids);
    return st ? fail(st) : 0;
}

// What separates token ids in decode's input: spaces, commas, line ends, and the brackets of a JSON array.
#define ID_SEPARATORS " ,\n\r\t[]"

static int do_decode(int argc, char **argv) {
    static const flags_command cmd = {
        "tokenize decode --vocab V [FILE]",
        "Decodes token ids (decimal, separated by spaces, commas or newlines) to bytes.",
        0, FLAGS_MAX_POS, NULL};
    const char *vocab = NULL, *out = NULL;
    flag_def defs[] = {
        { "vocab", FLAG_STR, &vocab, NULL, "vocabulary: .sxv file, GPT-2 directory, or [ENCODING:]FILE.tiktoken" },
        { "out", FLAG_STR, &out, "-", "where to write the bytes" },
    };
    flags_args a;
    int rc = usage_or_parse(&cmd, defs, FLAGS_COUNT(defs), argc, argv, &a);
    if (rc >= 0) return rc;
    bpe_vocab *v = NULL;
    tok_bytes text = {0}, bytes = {0};
    tok_ids ids = {0};
    sx_status st = vocab_and_input("decode", &a, vocab, &v, &text);
    if (!st) st = tok_bytes_append(&text, "", 1);
    for (char *p = (char *)text.data; !st && p && *p;) {
        while (*p && strchr(ID_SEPARATORS, *p)) p++;
        if (!*p) break;
        char *end;
        unsigned long id = strtoul(p, &end, 10);
        if (end == p || id > UINT32_MAX || (*end && !strchr(ID_SEPARATORS, *end))) {   // the word, printably
            char word[96] = "";
            size_t len = 0, k = 0;
            for (const unsigned char *q = (const unsigned char *)p; *q && k < 20 && !strchr(ID_SEPARATORS, *q); q++, k++)
                len += (size_t)snprintf(word + len, sizeof word - len, isprint(*q) ? "%c" : "\\x%02x", *q);
            st = sx_fail(SX_ERR_ARG, "not a token id: '%s' (id %zu of the input)", word, ids.n + 1);
        } else
            st = tok_ids_push(&ids, (uint32_t)id);
        p = end;
    }
    if (!st) st = bpe_decode(v, ids.ids, ids.n, &bytes);
    if (!st) st = write_output(out, bytes.data, bytes.n);
    bpe_vocab_free(v);
    tok_bytes_free(&text);
    tok_bytes_free(&bytes);
    tok_ids_free(&ids);
    return st ? fail(st) : 0;
}

// Tokenizes the corpus files paths[0..n) into the shard out, every document preceded by <|endoftext|>;
// *h gets the shard's header, *bytes the text read.
static sx_status shard_corpus(bpe_vocab *v, const char *out, const char **paths, int n, shard_header *h,
                              uint64_t *bytes) {
    tok_bytes text = {0};
    tok_ids ids = {0};
    shard_writer w;
    *bytes = 0;
    if (v->eot == TOK_NONE) return sx_fail(SX_ERR_ARG, "vocabulary %s has no <|endoftext|> token", v->name);
    sx_status st = shard_writer_open(&w, out, (uint32_t)v->n_ids, v->eot, v->hash);
    if (st) return st;
    for (int i = 0; i < n && !st; i++) {
        if ((st = read_input(paths[i], &text))) break;
        *bytes += text.n;
        size_t p = 0, len;
        const uint8_t *doc;
        while (!st && corpus_next_doc(text.data, text.n, &p, &doc, &len)) {
            ids.n = 0;
            st = tok_ids_push(&ids, v->eot);
            if (!st) st = bpe_encode(v, doc, len, false, &ids);
            if (!st) st = shard_writer_append(&w, ids.ids, ids.n);
        }
    }
    *h = w.h;
    if (!st && !w.h.n_docs)
        st = sx_fail(SX_ERR_ARG, "%s%s: no text to tokenize, so no shard written", paths[0], n > 1 ? " and the rest" : "");
    if (st) shard_writer_abort(&w);
    else st = shard_writer_close(&w);
    if (!st) *h = w.h;
    tok_bytes_free(&text);
    tok_ids_free(&ids);
    return st;
}

static int do_shard(int argc, char **argv) {
    static const flags_command cmd = {
        "tokenize shard --vocab V --out SHARD CORPUS...",
        "Tokenizes corpus files into a token shard; every document is preceded by "
        "<|endoftext|>.",
        0, FLAGS_MAX_POS, NULL};
    const char *vocab = NULL, *out = NULL;
    flag_def defs[] = {
        { "vocab", FLAG_STR, &vocab, NULL, "vocabulary: .sxv file, GPT-2 directory, or [ENCODING:]FILE.tiktoken" },
        { "out", FLAG_STR, &out, NULL, "shard file to write" },
    };
    flags_args a;
    int rc = usage_or_parse(&cmd, defs, FLAGS_COUNT(defs), argc, argv, &a);
    if (rc >= 0) return rc;
    bpe_vocab *v = NULL;
    shard_header h = {0};
    uint64_t bytes = 0;
    double t0 = now_s();
    sx_status st = (!out || !*out) ? sx_fail(SX_ERR_ARG, "--out is required") : load_vocab(vocab, &v);
    if (a.npos == 0) a.pos[a.npos++] = "-";
    if (!st) st = shard_corpus(v, out, a.pos, a.npos, &h, &bytes);
    double dt = now_s() - t0;
    if (!st)
        fprintf(stderr, "wrote %s: %llu documents, %llu tokens (%u-bit) from %.1f MB in %.2f s, vocab %s (%zu ids)\n",
                out, (unsigned long long)h.n_docs, (unsigned long long)h.n_tokens, h.token_bytes * 8,
                bytes / 1e6, dt, v->name, v->n_ids);
    bpe_vocab_free(v);
    return st ? fail(st) : 0;
}

// Parses "a=0.3,b=0.2" into w[k] for the spec's sources by name, before anything is tokenized: each source
// once, every source or none (a weight beside a token share would mix two units).
static sx_status parse_weights(const char *s, const mixture_spec *m, double *w) {
    char copy[1024], *save = NULL;
    snprintf(copy, sizeof copy, "%s", s);
    for (size_t k = 0; k < m->n; k++) w[k] = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq) return sx_fail(SX_ERR_ARG, "--weights: '%s' is not NAME=WEIGHT", tok);
        *eq = 0;
        double v = strtod(eq + 1, &end);
        if (*end || !(v > 0) || !isfinite(v))
            return sx_fail(SX_ERR_ARG, "--weights: weight of %s must be a positive, finite number", tok);
        size_t k = 0;
        while (k < m->n && strcmp(m->src[k].name, tok)) k++;
        if (k == m->n) return sx_fail(SX_ERR_ARG, "--weights: %s is not one of --sources", tok);
        if (w[k] > 0) return sx_fail(SX_ERR_ARG, "--weights: %s is weighted twice", tok);
        w[k] = v;
    }
    for (size_t k = 0; k < m->n; k++)
        if (!(w[k] > 0))
            return sx_fail(SX_ERR_ARG, "--weights gives every source's weight or none (the token shares): %s has none",
                           m->src[k].name);
    return SX_OK;
}

// The default --sources: the names TEXT_DIR/STATS lists (scripts/fetch-data --mixture writes it: a header
// line "source<TAB>...", then one line per source whose first field is its name), in that order,
// comma-separated into list (overwritten).
static sx_status sources_from_stats(const char *dir, char *list, size_t cap) {
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/STATS", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return sx_fail(SX_ERR_IO, "cannot open %s (%s): without it, name the sources with --sources a,b,...", path,
                       strerror(errno));
    sx_status st = SX_OK;
    size_t len = 0;
    list[0] = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "source\t", 7))
        st = sx_fail(SX_ERR_FORMAT, "%s: expected a header line starting with \"source<TAB>\"", path);
    while (!st && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\t\r\n")] = 0;
        if (!*line) continue;
        int w = snprintf(list + len, cap - len, "%s%s", len ? "," : "", line);
        if (w < 0 || (size_t)w >= cap - len) st = sx_fail(SX_ERR_ARG, "%s: too many sources", path);
        else len += (size_t)w;
    }
    fclose(f);
    if (!st && !len) st = sx_fail(SX_ERR_FORMAT, "%s lists no sources", path);
    return st;
}

static int do_mixture(int argc, char **argv) {
    static const flags_command cmd = {
        "tokenize mixture --vocab V --out DIR TEXT_DIR",
        "Tokenizes TEXT_DIR/NAME.train.txt and NAME.val.txt of every source (scripts/fetch-data "
        "--mixture writes them) into DIR/NAME.{train,val}.shard and writes the mixture spec "
        "DIR/mixture.mix (src/data/mixture.h) that train --train/--val accept.",
        0, FLAGS_MAX_POS, NULL};
    const char *vocab = NULL, *out = NULL, *sources = NULL, *weights = NULL;
    flag_def defs[] = {
        { "vocab", FLAG_STR, &vocab, NULL, "vocabulary: .sxv file, GPT-2 directory, or [ENCODING:]FILE.tiktoken" },
        { "out", FLAG_STR, &out, NULL, "directory for the shards and mixture.mix" },
        { "sources", FLAG_STR, &sources, "", "source names, comma-separated (default: those TEXT_DIR/STATS lists)" },
        { "weights", FLAG_STR, &weights, "", "NAME=WEIGHT,... (default: each source's share of the train tokens)" },
    };
    flags_args a;
    int rc = usage_or_parse(&cmd, defs, FLAGS_COUNT(defs), argc, argv, &a);
    if (rc >= 0) return rc;
    bpe_vocab *v = NULL;
    mixture_spec m = {0};
    sx_status st = (!out || !*out) ? sx_fail(SX_ERR_ARG, "--out is required")
                 : a.npos != 1 ? sx_fail(SX_ERR_ARG, "give one TEXT_DIR") : load_vocab(vocab, &v);
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", sources);
    if (!st && !*list) st = sources_from_stats(a.pos[0], list, sizeof list);
    for (char *tok = strtok_r(list, ",", &save); tok && !st; tok = strtok_r(NULL, ",", &save)) {
        if (m.n == MIXTURE_MAX_SOURCES) st = sx_fail(SX_ERR_ARG, "--sources: more than %d", MIXTURE_MAX_SOURCES);
        else if (strlen(tok) >= MIXTURE_NAME_MAX) st = sx_fail(SX_ERR_ARG, "--sources: name '%s' is too long", tok);
        else snprintf(m.src[m.n++].name, MIXTURE_NAME_MAX, "%s", tok);
        for (size_t k = 0; k + 1 < m.n && !st; k++)
            if (!strcmp(m.src[k].name, tok)) st = sx_fail(SX_ERR_ARG, "--sources: %s is named twice", tok);
    }
    double given[MIXTURE_MAX_SOURCES];
    const bool weighted = weights && *weights;
    if (!st && weighted) st = parse_weights(weights, &m, given);
    if (!st) st = fs_mkdir_p(out);
    double t0 = now_s(), total = 0;
    uint64_t bytes_all = 0;
    for (size_t k = 0; k < m.n && !st; k++) {
        for (int split = 0; split < 2 && !st; split++) {
            const char *sp = split ? "val" : "train";
            char in[4096], shard[4096];
            snprintf(in, sizeof in, "%s/%s.%s.txt", a.pos[0], m.src[k].name, sp);
            snprintf(shard, sizeof shard, "%s/%s.%s.shard", out, m.src[k].name, sp);
            const char *paths[1] = {in};
            shard_header h;
            uint64_t bytes;
            if ((st = shard_corpus(v, shard, paths, 1, &h, &bytes))) break;
            bytes_all += bytes;
            if (!split) { m.src[k].weight = (double)h.n_tokens; total += (double)h.n_tokens; }
            fprintf(stderr, "wrote %s: %llu documents, %llu tokens from %.1f MB\n", shard, (unsigned long long)h.n_docs,
                    (unsigned long long)h.n_tokens, bytes / 1e6);
            snprintf(split ? m.src[k].val : m.src[k].train, sizeof m.src[k].val, "%s.%s.shard", m.src[k].name, sp);
        }
    }
    for (size_t k = 0; k < m.n && !st; k++) m.src[k].weight = weighted ? given[k] : m.src[k].weight / total;
    char spec[4096];
    snprintf(spec, sizeof spec, "%s/mixture.mix", out);
    if (!st) st = mixture_spec_save(spec, &m);
    if (!st)
        fprintf(stderr, "wrote %s: %zu sources, %.1f MB in %.2f s (%.2f MB/s)\n", spec, m.n, bytes_all / 1e6, now_s() - t0,
                bytes_all / 1e6 / (now_s() - t0));
    bpe_vocab_free(v);
    return st ? fail(st) : 0;
}

// argv[0] may be "tokenize" (skipped); then ACTION and its arguments.
int cmd_tokenize(int argc, char **argv) {
    if (argc > 0 && !strcmp(argv[0], "tokenize")) { argc--; argv++; }
    static const char usage[] =
        "usage: sextant tokenize ACTION [flags]   (ACTION --help for its flags)\n"
        "  train    learn a byte-level BPE vocabulary from corpus files\n"
        "  encode   text -> token ids\n"
        "  decode   token ids -> text\n"
        "  shard    corpus files -> token shard for training\n"
        "  mixture  per-source text files -> per-source shards + a mixture spec\n";
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    const char *action = argv[0];
    if (!strcmp(action, "train")) return do_train(argc - 1, argv + 1);
    if (!strcmp(action, "encode")) return do_encode(argc - 1, argv + 1);
    if (!strcmp(action, "decode")) return do_decode(argc - 1, argv + 1);
    if (!strcmp(action, "shard")) return do_shard(argc - 1, argv + 1);
    if (!strcmp(action, "mixture")) return do_mixture(argc - 1, argv + 1);
    fprintf(stderr, "sextant tokenize: unknown action '%s'\n%s", action, usage);
    return 2;
}
