#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "core/fsutil.h"
#include "tok/vocab_io.h"

sx_status vocab_read_file(const char *path, tok_bytes *out) { return vocab_read_checked(path, SIZE_MAX, NULL, out); }

sx_status vocab_read_checked(const char *path, size_t cap, const char *magic, tok_bytes *out) {
    out->n = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open %s: %s", path, strerror(errno ? errno : ENOENT));
    gzbuffer(f, 1 << 17);
    uint8_t buf[1 << 16];
    sx_status st = SX_OK;
    size_t magic_len = magic && *magic ? strlen(magic) + 1 : 0;   // with its NUL
    for (;;) {
        int got = gzread(f, buf, sizeof buf);
        if (got < 0) {
            int err;
            st = sx_fail(SX_ERR_IO, "cannot read %s: %s", path, gzerror(f, &err));
            break;
        }
        if (got == 0) break;
        // The content is checked as it arrives, before it is kept: a small gzip of zeros would otherwise cost
        // gigabytes before the first check.
        if (magic_len && out->n == 0 && ((size_t)got < magic_len || memcmp(buf, magic, magic_len))) {
            st = sx_fail(SX_ERR_FORMAT, "%s is not a sextant vocabulary (bad magic)", path);
            break;
        }
        if (magic && !*magic && memchr(buf, 0, (size_t)got)) {
            st = sx_fail(SX_ERR_FORMAT, "%s: a NUL byte at offset %zu: not a text vocabulary file", path,
                         out->n + (size_t)((uint8_t *)memchr(buf, 0, (size_t)got) - buf));
            break;
        }
        if ((size_t)got > cap - out->n) {
            st = sx_fail(SX_ERR_FORMAT, "%s: more than %zu MiB once decompressed: not a vocabulary file", path, cap >> 20);
            break;
        }
        if ((st = tok_bytes_append(out, buf, (size_t)got))) break;
    }
    gzclose(f);
    return st;
}

// Tries path, then path.gz; returns the status of the last attempt.
static sx_status read_maybe_gz(const char *dir, const char *file, tok_bytes *out) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (access(path, R_OK) == 0) return vocab_read_checked(path, VOCAB_MAX_BYTES, "", out);
    snprintf(path, sizeof path, "%s/%s.gz", dir, file);
    if (access(path, R_OK) == 0) return vocab_read_checked(path, VOCAB_MAX_BYTES, "", out);
    return sx_fail(SX_ERR_IO, "cannot find %s/%s (or .gz); run scripts/fetch-data", dir, file);
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves, the rest to U+0100 upward.
static void gpt2_unicode_to_byte(int32_t map[324]) {
    for (int i = 0; i < 324; i++) map[i] = -1;
    int extra = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        map[printable ? b : 256 + extra++] = b;
    }
}

// Decodes a GPT-2 token string (UTF-8 of mapped code points) into bytes; returns the length or -1.
static long gpt2_token_bytes(const char *s, const int32_t map[324], uint8_t *out, size_t cap) {
    size_t n = 0;
    const uint8_t *p = (const uint8_t *)s;
    while (*p) {
        int32_t c;
        if (*p < 0x80) c = *p++;
        else if ((*p & 0xE0) == 0xC0 && (p[1] & 0xC0) == 0x80) { c = ((p[0] & 0x1F) << 6) | (p[1] & 0x3F); p += 2; }
        else return -1;
        if (c >= 324 || map[c] < 0 || n >= cap) return -1;
        out[n++] = (uint8_t)map[c];
    }
    return (long)n;
}

sx_status vocab_load_gpt2(const char *dir, bpe_vocab **out) {
    tok_bytes enc = {0}, merges = {0};
    bpe_vocab *v = NULL;
    json_t *root = NULL;
    sx_status st = read_maybe_gz(dir, "encoder.json", &enc);
    if (!st) st = read_maybe_gz(dir, "vocab.bpe", &merges);
    if (!st) st = bpe_vocab_create(&v, "gpt2", PRETOK_GPT2, 1 << 16);
    if (st) goto done;
    json_error_t jerr;
    root = json_loadb((const char *)enc.data, enc.n, 0, &jerr);
    if (!root || !json_is_object(root)) {
        st = sx_fail(SX_ERR_FORMAT, "%s/encoder.json: not a JSON object (line %d: %s)", dir, jerr.line, jerr.text);
        goto done;
    }
    int32_t map[324];
    gpt2_unicode_to_byte(map);
    const char *key;
    json_t *val;
    uint8_t buf[1024];
    json_object_foreach(root, key, val) {
        json_int_t id = json_integer_value(val);
        int special = !strcmp(key, "<|endoftext|>");
        long n = special ? 13 : gpt2_token_bytes(key, map, buf, sizeof buf);
        if (!json_is_integer(val) || id < 0 || id > (1 << 24) || n <= 0) {
            st = sx_fail(SX_ERR_FORMAT, "%s/encoder.json: bad entry \"%.40s\"", dir, key);
            goto done;
        }
        st = bpe_vocab_add(v, (uint32_t)id, special ? (const uint8_t *)key : buf, (size_t)n,
                           special ? TOK_KIND_SPECIAL : TOK_KIND_NORMAL);
        if (st) goto done;
    }
    // vocab.bpe: "#version" line, then merge i = "a b" must produce token 256 + i.
    {
        char *text = (char *)merges.data;
        size_t pos = 0, line_no = 0, merge = 0;
        while (pos < merges.n) {
            char *nl = memchr(text + pos, '\n', merges.n - pos);
            size_t end = nl ? (size_t)(nl - text) : merges.n;
            char line[2048];
            size_t len = end - pos < sizeof line - 1 ? end - pos : sizeof line - 1;
            memcpy(line, text + pos, len);
            line[len] = 0;
            pos = end + 1;
            line_no++;
            if (len == 0 || (line_no == 1 && !strncmp(line, "#version", 8))) continue;
            char *sp = strchr(line, ' ');
            uint8_t a[1024];
            long na = -1, nb = -1;
            if (sp) {
                *sp = 0;
                na = gpt2_token_bytes(line, map, a, sizeof a);
                nb = na < 0 ? -1 : gpt2_token_bytes(sp + 1, map, a + na, sizeof a - (size_t)na);
            }
            uint32_t id = (uint32_t)(256 + merge);
            if (na <= 0 || nb <= 0 || id >= v->n_ids || v->kind[id] != TOK_KIND_NORMAL ||
                v->len[id] != (uint32_t)(na + nb) || memcmp(v->blob + v->off[id], a, (size_t)(na + nb))) {
                st = sx_fail(SX_ERR_FORMAT, "%s/vocab.bpe line %zu: merge %zu does not make token %u of encoder.json",
                             dir, line_no, merge, id);
                goto done;
            }
            merge++;
        }
    }
    st = bpe_vocab_finish(v);
done:
    json_decref(root);
    tok_bytes_free(&enc);
    tok_bytes_free(&merges);
    if (st) bpe_vocab_free(v);
    else *out = v;
    return st;
}

typedef struct { const char *name; pretok_kind pretok; const char *specials[6]; uint32_t ids[6]; } tiktoken_spec;

static const tiktoken_spec tiktoken_specs[] = {
    { "r50k_base", PRETOK_GPT2, { "<|endoftext|>" }, { 50256 } },
    { "p50k_base", PRETOK_GPT2, { "<|endoftext|>" }, { 50256 } },
    { "p50k_edit", PRETOK_GPT2, { "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>" },
      { 50256, 50281, 50282, 50283 } },
    { "cl100k_base", PRETOK_CL100K,
      { "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>" },
      { 100257, 100258, 100259, 100260, 100276 } },
    { "o200k_base", PRETOK_O200K, { "<|endoftext|>", "<|endofprompt|>" }, { 199999, 200018 } },
};

static int b64_value(uint8_t c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// Decodes standard base64 (with '=' padding) of s[0..n); returns the byte count or -1.
static long b64_decode(const uint8_t *s, size_t n, uint8_t *out, size_t cap) {
    uint32_t acc = 0;
    int bits = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=') break;
        int d = b64_value(s[i]);
        if (d < 0) return -1;
        acc = (acc << 6) | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (m >= cap) return -1;
            out[m++] = (uint8_t)(acc >> bits);
        }
    }
    return (long)m;
}

sx_status vocab_load_tiktoken(const char *path, const char *encoding, bpe_vocab **out) {
    char base[256];
    if (!encoding) {
        const char *slash = strrchr(path, '/');
        snprintf(base, sizeof base, "%s", slash ? slash + 1 : path);
        char *dot = strstr(base, ".tiktoken");
        if (dot) *dot = 0;
        encoding = base;
    }
    const tiktoken_spec *spec = NULL;
    for (size_t i = 0; i < sizeof tiktoken_specs / sizeof *tiktoken_specs; i++)
        if (!strcmp(encoding, tiktoken_specs[i].name)) spec = &tiktoken_specs[i];
    if (!spec)
        return sx_fail(SX_ERR_ARG, "unknown tiktoken encoding '%s' (r50k_base, p50k_base, p50k_edit, "
                       "cl100k_base, o200k_base)", encoding);
    tok_bytes file = {0};
    bpe_vocab *v = NULL;
    sx_status st = vocab_read_checked(path, VOCAB_MAX_BYTES, "", &file);
    if (!st) st = bpe_vocab_create(&v, spec->name, spec->pretok, 1 << 18);
    size_t line_no = 0;
    for (size_t pos = 0; !st && pos < file.n;) {
        const uint8_t *line = file.data + pos;
        const uint8_t *nl = memchr(line, '\n', file.n - pos);
        size_t len = nl ? (size_t)(nl - line) : file.n - pos;
        pos += len + 1;
        line_no++;
        if (len == 0) continue;
        const uint8_t *sp = memchr(line, ' ', len);
        uint8_t bytes[512];
        long nb = sp ? b64_decode(line, (size_t)(sp - line), bytes, sizeof bytes) : -1;
        char num[16] = {0};
        size_t numlen = sp ? len - (size_t)(sp - line) - 1 : 0;
        char *end = NULL;
        unsigned long rank = 0;
        if (numlen > 0 && numlen < sizeof num) {
            memcpy(num, sp + 1, numlen);
            rank = strtoul(num, &end, 10);
        }
        if (nb <= 0 || !end || *end || rank >= (1u << 24))
            st = sx_fail(SX_ERR_FORMAT, "%s line %zu: expected 'base64 rank'", path, line_no);
        else
            st = bpe_vocab_add(v, (uint32_t)rank, bytes, (size_t)nb, TOK_KIND_NORMAL);
    }
    for (int k = 0; !st && k < 6 && spec->specials[k]; k++)
        st = bpe_vocab_add(v, spec->ids[k], (const uint8_t *)spec->specials[k], strlen(spec->specials[k]),
                           TOK_KIND_SPECIAL);
    if (!st) st = bpe_vocab_finish(v);
    tok_bytes_free(&file);
    if (st) bpe_vocab_free(v);
    else *out = v;
    return st;
}

static sx_status put_u32(tok_bytes *b, uint32_t x) {
    uint8_t le[4] = { (uint8_t)x, (uint8_t)(x >> 8), (uint8_t)(x >> 16), (uint8_t)(x >> 24) };
    return tok_bytes_append(b, le, 4);
}

// fs_write_atomic's fill: the encoded vocabulary.
static bool write_bytes(FILE *f, void *arg) {
    const tok_bytes *b = arg;
    return fwrite(b->data, 1, b->n, f) == b->n;
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

sx_status vocab_save_sx(const bpe_vocab *v, const char *path) {
    tok_bytes b = {0};
    size_t name_len = strlen(v->name);
    sx_status st = tok_bytes_append(&b, "SXVOCAB\0", 8);
    if (!st) st = put_u32(&b, VOCAB_FILE_VERSION);
    if (!st) st = put_u32(&b, (uint32_t)v->pretok);
    if (!st) st = put_u32(&b, (uint32_t)v->n_ids);
    if (!st) st = put_u32(&b, (uint32_t)name_len);
    if (!st) st = tok_bytes_append(&b, v->name, name_len);
    for (size_t id = 0; id < v->n_ids && !st; id++) {
        st = tok_bytes_append(&b, &v->kind[id], 1);
        if (!st) st = put_u32(&b, v->len[id]);
        if (!st) st = tok_bytes_append(&b, v->blob + v->off[id], v->len[id]);
    }
    if (!st) st = put_u32(&b, (uint32_t)crc32(0, b.data, (uInt)b.n));
    if (st) { tok_bytes_free(&b); return st; }
    st = fs_write_atomic(path, write_bytes, &b);
    tok_bytes_free(&b);
    return st;
}

sx_status vocab_load_sx(const char *path, bpe_vocab **out) {
    tok_bytes b = {0};
    bpe_vocab *v = NULL;
    sx_status st = vocab_read_checked(path, VOCAB_MAX_BYTES, "SXVOCAB", &b);
    if (st) return st;
    const uint8_t *p = b.data;
    size_t n = b.n;
    if (n < 28 || memcmp(p, "SXVOCAB\0", 8)) {
        st = sx_fail(SX_ERR_FORMAT, "%s is not a sextant vocabulary (bad magic)", path);
        goto done;
    }
    if (get_u32(p + n - 4) != (uint32_t)crc32(0, p, (uInt)(n - 4))) {
        st = sx_fail(SX_ERR_FORMAT, "%s: checksum mismatch (truncated or corrupted vocabulary)", path);
        goto done;
    }
    uint32_t version = get_u32(p + 8), pretok = get_u32(p + 12), n_ids = get_u32(p + 16), name_len = get_u32(p + 20);
    if (version != VOCAB_FILE_VERSION) {
        st = sx_fail(SX_ERR_FORMAT, "%s: vocabulary version %u, this build reads %d", path, version, VOCAB_FILE_VERSION);
        goto done;
    }
    // Every id takes at least 5 bytes, so a small file cannot claim (and allocate for) millions of ids.
    if (pretok > PRETOK_O200K || name_len > 63 || 24 + (size_t)name_len > n - 4 || n_ids > (1u << 24) ||
        n_ids > (n - 28 - name_len) / 5) {
        st = sx_fail(SX_ERR_FORMAT, "%s: bad vocabulary header", path);
        goto done;
    }
    char name[64];
    memcpy(name, p + 24, name_len);
    name[name_len] = 0;
    if ((st = bpe_vocab_create(&v, name, (pretok_kind)pretok, n_ids))) goto done;
    size_t pos = 24 + name_len;
    for (uint32_t id = 0; id < n_ids && !st; id++) {
        if (pos + 5 > n - 4) { st = sx_fail(SX_ERR_FORMAT, "%s: truncated at token %u", path, id); break; }
        uint8_t kind = p[pos];
        uint32_t len = get_u32(p + pos + 1);
        pos += 5;
        if (kind > TOK_KIND_SPECIAL || len > n - 4 - pos || (kind != TOK_KIND_HOLE) != (len > 0)) {
            st = sx_fail(SX_ERR_FORMAT, "%s: bad token %u", path, id);
            break;
        }
        if (kind != TOK_KIND_HOLE) st = bpe_vocab_add(v, id, p + pos, len, kind);
        pos += len;
    }
    if (!st && pos != n - 4) st = sx_fail(SX_ERR_FORMAT, "%s: %zu stray bytes after the tokens", path, n - 4 - pos);
    if (!st && v->n_ids < n_ids) st = sx_fail(SX_ERR_FORMAT, "%s: the last ids are unused", path);
    if (!st) st = bpe_vocab_finish(v);
done:
    tok_bytes_free(&b);
    if (st) bpe_vocab_free(v);
    else *out = v;
    return st;
}

sx_status vocab_load(const char *spec, bpe_vocab **out) {
    struct stat sb;
    if (stat(spec, &sb) == 0 && S_ISDIR(sb.st_mode)) return vocab_load_gpt2(spec, out);
    if (strstr(spec, ".tiktoken")) {
        const char *colon = strchr(spec, ':');
        if (colon && access(spec, R_OK) != 0) {
            char enc[64];
            snprintf(enc, sizeof enc, "%.*s", (int)(colon - spec), spec);
            return vocab_load_tiktoken(colon + 1, enc, out);
        }
        return vocab_load_tiktoken(spec, NULL, out);
    }
    return vocab_load_sx(spec, out);
}

bool vocab_find_beside(const char *shard_path, uint64_t hash, char *out, size_t size) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", shard_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    out[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return false;
    for (struct dirent *e; !out[0] && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".sxv")) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        bpe_vocab *v = NULL;
        if (vocab_load_sx(path, &v) == SX_OK && v->hash == hash) snprintf(out, size, "%s", path);
        bpe_vocab_free(v);
    }
    closedir(d);
    return out[0] != 0;
}
