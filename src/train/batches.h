// batches: where training and evaluation batches come from — a token shard (data/loader) or the synthetic
// stream (data/synthetic) — behind one small interface, with a position that checkpoints can store and
// restore exactly. Evaluation windows are fixed: the same windows at every evaluation of a run.
#ifndef SEXTANT_TRAIN_BATCHES_H
#define SEXTANT_TRAIN_BATCHES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/rng.h"
#include "core/status.h"
#include "data/synthetic.h"

typedef struct batch_source batch_source;

// spec: a shard path or "synthetic:V"; windows of T+1 tokens. seed drives the order of training windows;
// epoch_order: every window of a shard once per epoch in a seeded order (else uniform random windows).
sx_status batch_source_open(batch_source **out, const char *spec, size_t T, bool epoch_order, uint64_t seed);
void batch_source_close(batch_source *s);
size_t batch_source_vocab(const batch_source *s);
// Draws training windows only from the first max_tokens tokens (a mixture: each source its weight's share):
// a cap on unique data. Before the first batch; SX_ERR_ARG for a synthetic source.
sx_status batch_source_cap(batch_source *s, double max_tokens);
// Tokens in the source (after a cap): the shard's count, or 0 for a synthetic (endless) source.
double batch_source_tokens(const batch_source *s);
// Overwrites tokens (B, T+1) with the next training batch.
sx_status batch_source_next(batch_source *s, size_t B, int32_t *tokens);
// Overwrites tokens (B, T+1) with evaluation batch `index` (same windows for the same index, always).
sx_status batch_source_eval(batch_source *s, size_t index, size_t B, int32_t *tokens);
// The position (new reference) and its restoration, every field checked (from names the checkpoint in
// messages).
json_t *batch_source_state(const batch_source *s);
sx_status batch_source_restore(batch_source *s, json_t *state, const char *from);

#endif
