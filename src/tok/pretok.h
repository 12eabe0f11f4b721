// pretok: the pre-tokenizers that cut text into pieces before BPE, as hand-written scanners equivalent to
// the regular expressions of GPT-2/r50k/p50k, cl100k and o200k (as gpt-tokenizer 4.0.0 writes them).
// Character classes come from utf8proc (Unicode general categories); \s is JavaScript's whitespace set.
// Bytes that are not valid UTF-8 are treated one at a time as "other" characters (neither letter, number
// nor space), so any byte string is cut into pieces that tile it exactly. Not responsible for BPE or
// special tokens.
#ifndef SEXTANT_TOK_PRETOK_H
#define SEXTANT_TOK_PRETOK_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PRETOK_GPT2 = 0,   // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    PRETOK_CL100K = 1, // cl100k_base pattern (case-insensitive contractions, digits in groups of 1-3)
    PRETOK_O200K = 2,  // o200k_base pattern (case-aware letter runs, contractions attached)
} pretok_kind;

// Returns the end (exclusive) of the piece that starts at pos (pos < n); the result is > pos and <= n.
size_t pretok_next(pretok_kind kind, const uint8_t *s, size_t n, size_t pos);
// The kind's name ("gpt2", "cl100k", "o200k") and its inverse (-1 if unknown).
const char *pretok_name(pretok_kind kind);
int pretok_from_name(const char *name);

#endif
