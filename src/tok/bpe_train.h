// bpe_train: learns a byte-level BPE vocabulary from text. Text is pre-tokenized (GPT-2 pattern by default)
// and counted as unique words with frequencies; merges are then found with incremental pair counts: each
// pair keeps its count and the words it occurs in, a max-heap with lazy re-insertion picks the most frequent
// pair (ties: the smaller (left id, right id)), and a merge only revisits the words that contain the pair.
// Deterministic. The vocabulary is 256 byte tokens, then one token per merge (id 256 + merge index), then
// "<|endoftext|>". Not responsible for files (vocab_io) or encoding (bpe).
#ifndef SEXTANT_TOK_BPE_TRAIN_H
#define SEXTANT_TOK_BPE_TRAIN_H
#include "tok/bpe.h"

typedef struct bpe_trainer bpe_trainer;

sx_status bpe_trainer_create(bpe_trainer **out, pretok_kind pretok);
void bpe_trainer_free(bpe_trainer *t);
// Pre-tokenizes text[0..n) (one document; pieces never cross calls) and accumulates its word counts.
sx_status bpe_trainer_add_text(bpe_trainer *t, const uint8_t *text, size_t n);
// Number of unique words and total words seen so far.
void bpe_trainer_stats(const bpe_trainer *t, size_t *unique_words, uint64_t *total_words);
// Learns up to vocab_size - 257 merges (fewer if the words run out of pairs) and builds the vocabulary
// (caller frees it). If merges is not NULL it receives the merges as (left id, right id) pairs,
// (vocab_size - 257, 2) capacity; *n_merges gets the count. vocab_size must be >= 257.
sx_status bpe_trainer_run(bpe_trainer *t, size_t vocab_size, const char *name, bpe_vocab **out,
                          uint32_t (*merges)[2], size_t *n_merges);

#endif
