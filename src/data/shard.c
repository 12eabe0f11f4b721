#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "data/shard.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shards are little-endian; port the readers");

static void put32(uint8_t *p, uint32_t x) { memcpy(p, &x, 4); }
static void put64(uint8_t *p, uint64_t x) { memcpy(p, &x, 8); }
static uint32_t get32(const uint8_t *p) { uint32_t x; memcpy(&x, p, 4); return x; }
static uint64_t get64(const uint8_t *p) { uint64_t x; memcpy(&x, p, 8); return x; }

static void encode_header(const shard_header *h, uint8_t out[SHARD_HEADER_BYTES]) {
    memset(out, 0, SHARD_HEADER_BYTES);
    memcpy(out, "SXSHARD\0", 8);
    put32(out + 8, h->version);
    put32(out + 12, h->token_bytes);
    put32(out + 16, h->vocab_size);
    put32(out + 20, h->eot);
    put64(out + 24, h->vocab_hash);
    put64(out + 32, h->n_tokens);
    put64(out + 40, h->n_docs);
    put32(out + 48, h->crc);
    put32(out + 52, (uint32_t)crc32(0, out, 52));
}

sx_status shard_writer_open(shard_writer *w, const char *path, uint32_t vocab_size, uint32_t eot,
                            uint64_t vocab_hash) {
    memset(w, 0, sizeof *w);
    if (vocab_size == 0 || eot >= vocab_size)
        return sx_fail(SX_ERR_ARG, "shard %s: end-of-text id %u must be below the vocabulary size %u", path, eot,
                       vocab_size);
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp_path, sizeof w->tmp_path, "%s.tmp", path);
    w->h = (shard_header){ SHARD_VERSION, vocab_size <= 65536 ? 2 : 4, vocab_size, eot, vocab_hash, 0, 0, 0 };
    w->crc = (uint32_t)crc32(0, NULL, 0);
    w->f = fopen(w->tmp_path, "wb");
    if (!w->f) return sx_fail(SX_ERR_IO, "cannot create %s: %s", w->tmp_path, strerror(errno));
    uint8_t hdr[SHARD_HEADER_BYTES] = {0};
    if (fwrite(hdr, 1, sizeof hdr, w->f) != sizeof hdr) {
        shard_writer_abort(w);
        return sx_fail(SX_ERR_IO, "cannot write %s: %s", w->tmp_path, strerror(errno));
    }
    return SX_OK;
}

static sx_status flush_buf(shard_writer *w) {
    w->crc = (uint32_t)crc32(w->crc, w->buf, (uInt)w->buf_n);
    if (w->buf_n && fwrite(w->buf, 1, w->buf_n, w->f) != w->buf_n)
        return sx_fail(SX_ERR_IO, "cannot write %s: %s", w->tmp_path, strerror(errno));
    w->buf_n = 0;
    return SX_OK;
}

sx_status shard_writer_append(shard_writer *w, const uint32_t *ids, size_t n) {
    const size_t tb = w->h.token_bytes;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= w->h.vocab_size)
            return sx_fail(SX_ERR_ARG, "shard %s: token %u is outside the vocabulary (%u ids)", w->path, ids[i],
                           w->h.vocab_size);
        if (w->buf_n + tb > sizeof w->buf) {
            sx_status st = flush_buf(w);
            if (st) return st;
        }
        if (tb == 2) { uint16_t x = (uint16_t)ids[i]; memcpy(w->buf + w->buf_n, &x, 2); }
        else memcpy(w->buf + w->buf_n, &ids[i], 4);
        w->buf_n += tb;
        w->h.n_docs += ids[i] == w->h.eot;
    }
    w->h.n_tokens += n;
    return SX_OK;
}

void shard_writer_abort(shard_writer *w) {
    if (w->f) fclose(w->f);
    w->f = NULL;
    remove(w->tmp_path);
}

sx_status shard_writer_close(shard_writer *w) {
    sx_status st = flush_buf(w);
    uint8_t hdr[SHARD_HEADER_BYTES];
    w->h.crc = w->crc;
    encode_header(&w->h, hdr);
    if (!st && (fseek(w->f, 0, SEEK_SET) != 0 || fwrite(hdr, 1, sizeof hdr, w->f) != sizeof hdr ||
                fflush(w->f) != 0 || fsync(fileno(w->f)) != 0))
        st = sx_fail(SX_ERR_IO, "cannot write %s: %s", w->tmp_path, strerror(errno));
    if (fclose(w->f) != 0 && !st) st = sx_fail(SX_ERR_IO, "cannot close %s: %s", w->tmp_path, strerror(errno));
    w->f = NULL;
    if (!st && rename(w->tmp_path, w->path) != 0)
        st = sx_fail(SX_ERR_IO, "cannot rename %s to %s: %s", w->tmp_path, w->path, strerror(errno));
    if (st) remove(w->tmp_path);
    return st;
}

sx_status shard_check_vocab(const shard_file *s, size_t model_vocab) {
    if (s->h.vocab_size != model_vocab)
        return sx_fail(SX_ERR_MISMATCH, "shard was tokenized with a %u-token vocabulary but the model has %zu "
                       "(re-run `sextant tokenize shard` with the model's vocabulary)", s->h.vocab_size, model_vocab);
    return SX_OK;
}

// Decodes and checks the header at p (file_len bytes in all, at least SHARD_HEADER_BYTES): magic, version,
// header checksum, plausible fields, and a file size that matches the token count.
static sx_status parse_header(const uint8_t *p, size_t file_len, const char *path, shard_header *h) {
    if (file_len < SHARD_HEADER_BYTES || memcmp(p, "SXSHARD\0", 8))
        return sx_fail(SX_ERR_FORMAT, "%s is not a sextant token shard (bad magic)", path);
    h->version = get32(p + 8);
    if (h->version != SHARD_VERSION)
        return sx_fail(SX_ERR_FORMAT, "%s: shard version %u, this build reads %d", path, h->version, SHARD_VERSION);
    if (get32(p + 52) != (uint32_t)crc32(0, p, 52))
        return sx_fail(SX_ERR_FORMAT, "%s: header checksum mismatch (corrupted shard)", path);
    h->token_bytes = get32(p + 12);
    h->vocab_size = get32(p + 16);
    h->eot = get32(p + 20);
    h->vocab_hash = get64(p + 24);
    h->n_tokens = get64(p + 32);
    h->n_docs = get64(p + 40);
    h->crc = get32(p + 48);
    if ((h->token_bytes != 2 && h->token_bytes != 4) || h->vocab_size == 0 || h->vocab_size > (1u << 24) ||
        (h->token_bytes == 2) != (h->vocab_size <= 65536) || h->eot >= h->vocab_size ||
        h->n_tokens > SHARD_MAX_TOKENS || h->n_docs > h->n_tokens)
        return sx_fail(SX_ERR_FORMAT, "%s: implausible header (token bytes %u, vocab %u, %llu tokens)", path,
                       h->token_bytes, h->vocab_size, (unsigned long long)h->n_tokens);
    uint64_t want = SHARD_HEADER_BYTES + h->n_tokens * h->token_bytes;
    if (want != file_len)
        return sx_fail(SX_ERR_FORMAT, "%s: %s: header says %llu tokens (%llu bytes) but the file has %zu bytes", path,
                       want > file_len ? "truncated" : "trailing bytes", (unsigned long long)h->n_tokens,
                       (unsigned long long)want, file_len);
    return SX_OK;
}

static sx_status validate(shard_file *s, const char *path, size_t expected_vocab) {
    const uint8_t *p = s->map;
    shard_header *h = &s->h;
    sx_status st = parse_header(p, s->map_len, path, h);
    if (st) return st;
    s->tokens = p + SHARD_HEADER_BYTES;
    uint32_t crc = (uint32_t)crc32(0, NULL, 0);
    size_t left = s->map_len - SHARD_HEADER_BYTES;
    for (const uint8_t *q = s->tokens; left;) {
        uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
        crc = (uint32_t)crc32(crc, q, chunk);
        q += chunk;
        left -= chunk;
    }
    if (crc != h->crc) return sx_fail(SX_ERR_FORMAT, "%s: token checksum mismatch (corrupted shard)", path);
    uint32_t max = 0;
    for (uint64_t i = 0; i < h->n_tokens; i++) {
        uint32_t t = shard_token(s, i);
        max = t > max ? t : max;
    }
    if (h->n_tokens && max >= h->vocab_size)
        return sx_fail(SX_ERR_FORMAT, "%s: token id %u is outside the %u-token vocabulary", path, max, h->vocab_size);
    if (expected_vocab) {
        st = shard_check_vocab(s, expected_vocab);
        if (st) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", sx_last_error());
            return sx_fail(st, "%s: %s", path, msg);
        }
    }
    return SX_OK;
}

sx_status shard_open(shard_file *s, const char *path, size_t expected_vocab) {
    memset(s, 0, sizeof *s);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return sx_fail(SX_ERR_IO, "cannot open shard %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return sx_fail(SX_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    }
    s->map_len = (size_t)sb.st_size;
    if (s->map_len >= SHARD_HEADER_BYTES) {
        void *m = mmap(NULL, s->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return sx_fail(SX_ERR_IO, "cannot map %s: %s", path, strerror(errno));
        }
        s->map = m;
    }
    close(fd);
    sx_status st = s->map ? validate(s, path, expected_vocab)
                          : sx_fail(SX_ERR_FORMAT, "%s: truncated (%zu bytes, smaller than a shard header)", path,
                                    s->map_len);
    if (st) shard_close(s);
    return st;
}

sx_status shard_read_header(const char *path, shard_header *h) {
    uint8_t p[SHARD_HEADER_BYTES];
    FILE *f = fopen(path, "rb");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open shard %s: %s", path, strerror(errno));
    size_t got = fread(p, 1, sizeof p, f);
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    fclose(f);
    if (len < 0) return sx_fail(SX_ERR_IO, "cannot read %s", path);
    if (got < sizeof p)
        return sx_fail(SX_ERR_FORMAT, "%s: truncated (%ld bytes, smaller than a shard header)", path, len);
    return parse_header(p, (size_t)len, path, h);
}

void shard_close(shard_file *s) {
    if (s->map) munmap((void *)s->map, s->map_len);
    memset(s, 0, sizeof *s);
}
