// corpus: the document layout of sextant's corpus files (scripts/fetch-data writes them): UTF-8 text where
// each document is followed by a line holding exactly "<|endoftext|>". A file without such lines is one
// document. Not responsible for reading files or tokenizing.
#ifndef SEXTANT_TOK_CORPUS_H
#define SEXTANT_TOK_CORPUS_H
#include <stddef.h>
#include <stdint.h>

#define CORPUS_DELIMITER "<|endoftext|>"

// Finds the next document at or after *pos in text[0..n): sets *doc/*len (the text before the delimiter
// line, including its final newline), advances *pos past the delimiter line and returns 1; returns 0 when
// no document is left. Empty documents are skipped.
int corpus_next_doc(const uint8_t *text, size_t n, size_t *pos, const uint8_t **doc, size_t *len);

#endif
