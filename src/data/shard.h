// shard: sextant's token shard file: a 64-byte header and the token ids as little-endian uint16 (vocab of
// at most 65536 ids) or uint32. Documents are separated by the end-of-text token (each document is
// preceded by it). The writer streams tokens to a temporary file and renames it into place on close; the
// reader memory-maps a shard and validates it. Not responsible for tokenizing or for batching (loader).
//
// Header, little-endian:
//   0 "SXSHARD\0" | 8 u32 version (1) | 12 u32 token bytes (2|4) | 16 u32 vocab size | 20 u32 eot id |
//   24 u64 vocab hash | 32 u64 token count | 40 u64 document count | 48 u32 crc32 of the tokens |
//   52 u32 crc32 of header bytes 0..51 | 56 u64 zero
#ifndef SEXTANT_DATA_SHARD_H
#define SEXTANT_DATA_SHARD_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/status.h"

#define SHARD_VERSION 1
#define SHARD_HEADER_BYTES 64
#define SHARD_MAX_TOKENS (1ULL << 40)

typedef struct {
    uint32_t version, token_bytes, vocab_size, eot;
    uint64_t vocab_hash, n_tokens, n_docs;
    uint32_t crc;
} shard_header;

typedef struct {
    FILE *f;
    char path[4096], tmp_path[4112];
    shard_header h;
    uint32_t crc;
    uint8_t buf[1 << 16];
    size_t buf_n;
} shard_writer;

// Starts a shard at path (written to path.tmp until shard_writer_close). Token width from vocab_size.
sx_status shard_writer_open(shard_writer *w, const char *path, uint32_t vocab_size, uint32_t eot,
                            uint64_t vocab_hash);
// Appends ids[0..n); each must be < vocab_size. Counts a document for every eot id appended.
sx_status shard_writer_append(shard_writer *w, const uint32_t *ids, size_t n);
// Writes the header, flushes, renames into place. On error the temporary file is removed.
sx_status shard_writer_close(shard_writer *w);
// Abandons a shard being written (removes the temporary file).
void shard_writer_abort(shard_writer *w);

typedef struct {
    shard_header h;
    const uint8_t *map; // whole file, read-only mapping
    size_t map_len;
    const void *tokens; // (n_tokens) uint16 or uint32
} shard_file;

// Maps and validates path: magic, version, header checksum, sizes (truncation, absurd counts), token
// checksum, every id < vocab size. expected_vocab != 0 also requires that vocab size (SX_ERR_MISMATCH).
sx_status shard_open(shard_file *s, const char *path, size_t expected_vocab);
void shard_close(shard_file *s);
// The header of the shard at path, checked as shard_open checks it but without reading the tokens: for a
// token count, in constant time whatever the shard's size.
sx_status shard_read_header(const char *path, shard_header *h);
// The trainer's check that the shard fits the model's embedding table.
sx_status shard_check_vocab(const shard_file *s, size_t model_vocab);
// Token i (i < n_tokens).
static inline uint32_t shard_token(const shard_file *s, uint64_t i) {
    return s->h.token_bytes == 2 ? ((const uint16_t *)s->tokens)[i] : ((const uint32_t *)s->tokens)[i];
}

#endif
