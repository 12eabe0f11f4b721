// prefixmap: for every token of a vocabulary, the longest other token whose bytes are a proper prefix of its
// bytes (" banana" for " bananas"): the extra target of the prefix-token auxiliary loss (train --prefix-aux,
// docs/MODEL.md "Loss"). Works on any bpe_vocab (sextant's own, GPT-2, tiktoken rank files).
// Not responsible for loading vocabularies (vocab_io) or for the loss (kernels/xent.h).
#ifndef SEXTANT_PREFIXMAP_H
#define SEXTANT_PREFIXMAP_H
#include "tok/bpe.h"

// out (V), overwritten: out[id] = the longest normal token below V that is a proper prefix of token id, or
// −1 for none: special tokens, unused ids, ids the vocabulary lacks, and tokens without one (single bytes).
// Returns how many tokens have a prefix.
size_t tok_prefix_map(const bpe_vocab *v, size_t V, int32_t *out);
#endif
