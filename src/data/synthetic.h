// synthetic: a deterministic, learnable token stream for tests and smoke runs when no corpus is wanted.
// Tokens follow a fixed random first-order Markov chain in which every token has 4 possible successors,
// so a model can drive the loss from ln V towards ln 4. Spec: "synthetic:V" (V = vocabulary size).
#ifndef SEXTANT_DATA_SYNTHETIC_H
#define SEXTANT_DATA_SYNTHETIC_H
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"
#include "core/status.h"

#define SYNTHETIC_FANOUT 4

typedef struct {
    size_t vocab;
    int32_t *next;      // (vocab, SYNTHETIC_FANOUT) successors of each token
} synthetic_source;

// Parses "synthetic:V" and builds the chain (fixed; independent of any seed).
sx_status synthetic_open(const char *spec, synthetic_source *s);
void synthetic_close(synthetic_source *s);
// Overwrites tokens (B, T+1) with B independent windows drawn with r.
void synthetic_batch(const synthetic_source *s, rng_state *r, size_t B, size_t T, int32_t *tokens);

#endif
