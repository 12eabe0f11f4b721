// bpe: a byte-level BPE vocabulary (token id -> bytes, bytes -> rank, special tokens, pre-tokenizer) and
// the encoder/decoder over it. Merging follows tiktoken: within a pre-tokenized piece, repeatedly merge the
// adjacent pair whose concatenated bytes have the lowest rank (leftmost on ties); a token's rank is its id.
// Every one of the 256 single bytes is a token, so decode(encode(x)) == x for any byte string.
// Not responsible for reading or writing vocabulary files (vocab_io) or for learning merges (bpe_train).
// A vocabulary holds a cache of encoded pieces, so encoding with one vocabulary is not thread-safe.
#ifndef SEXTANT_TOK_BPE_H
#define SEXTANT_TOK_BPE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"
#include "tok/bytemap.h"
#include "tok/pretok.h"

#define TOK_NONE UINT32_MAX

enum { TOK_KIND_HOLE = 0, TOK_KIND_NORMAL = 1, TOK_KIND_SPECIAL = 2 };

typedef struct {
    char name[64];          // "r50k_base", "gpt2", "sextant-8192", ...
    pretok_kind pretok;
    size_t n_ids;           // ids are 0..n_ids-1 (normal, special, or unused holes)
    size_t ids_cap;         // allocated entries of kind/off/len
    uint8_t *kind;          // (n_ids) TOK_KIND_*
    uint64_t *off;          // (n_ids) offset of the token's bytes in blob
    uint32_t *len;          // (n_ids) byte length (0 for holes)
    uint8_t *blob;
    size_t blob_len, blob_cap;
    bytemap ranks;          // normal token bytes -> id (the lowest id if bytes repeat)
    size_t n_special;
    uint32_t *special_ids;  // (n_special)
    uint32_t eot;           // id of <|endoftext|>, TOK_NONE if absent
    uint64_t hash;          // content hash (pre-tokenizer, kinds, bytes), set by bpe_vocab_finish
    // encoder cache: piece bytes -> (offset << 16 | count) into cache_ids
    bytemap cache;
    uint32_t *cache_ids;
    size_t cache_len, cache_cap;
} bpe_vocab;

// A growable array of token ids the caller owns (free with tok_ids_free).
typedef struct { uint32_t *ids; size_t n, cap; } tok_ids;
// A growable byte buffer the caller owns (free with tok_bytes_free).
typedef struct { uint8_t *data; size_t n, cap; } tok_bytes;

sx_status tok_ids_push(tok_ids *v, uint32_t id);
void tok_ids_free(tok_ids *v);
sx_status tok_bytes_append(tok_bytes *b, const void *p, size_t n);
void tok_bytes_free(tok_bytes *b);

// Building a vocabulary: create, add tokens by id, then finish (checks all 256 bytes exist, computes the
// hash and finds <|endoftext|>). bpe_vocab_add overwrites any earlier token with the same id.
sx_status bpe_vocab_create(bpe_vocab **out, const char *name, pretok_kind pretok, size_t n_ids_hint);
sx_status bpe_vocab_add(bpe_vocab *v, uint32_t id, const uint8_t *bytes, size_t n, int kind);
sx_status bpe_vocab_finish(bpe_vocab *v);
void bpe_vocab_free(bpe_vocab *v);

// Encodes text[0..n) and appends the ids to out. With allow_special, exact occurrences of special-token
// strings become their ids; otherwise they are encoded as ordinary text.
sx_status bpe_encode(bpe_vocab *v, const uint8_t *text, size_t n, bool allow_special, tok_ids *out);
// Appends the BPE ids of one pre-tokenized piece (no special-token handling, no cache).
sx_status bpe_encode_piece(const bpe_vocab *v, const uint8_t *piece, size_t n, tok_ids *out);
// Appends the bytes of ids[0..n) to out. An id that is out of range or unused is SX_ERR_ARG.
sx_status bpe_decode(const bpe_vocab *v, const uint32_t *ids, size_t n, tok_bytes *out);
// Rank (= id) of a normal token's bytes, TOK_NONE if not a token.
uint32_t bpe_rank(const bpe_vocab *v, const uint8_t *bytes, size_t n);

#endif
