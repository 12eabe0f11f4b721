// mixture: a data mixture — several named token sources, each with a train and a validation shard and a
// sampling weight — and the sampler that draws training windows from it. Each window's source is drawn by
// weight from a seeded generator; the window itself comes from that source's own loader (data/loader.h),
// so every source keeps its random or epoch order. Deterministic per seed; the position (the picker's
// generator and every loader's position) can be saved and restored exactly. Not responsible for
// tokenizing (cli tokenize mixture writes the shards and the spec) or for evaluation (train/).
//
// Spec file (text, written by `sextant tokenize mixture`, editable by hand):
//   # sextant mixture v1
//   source NAME WEIGHT TRAIN_SHARD VAL_SHARD      (one line per source; '#' starts a comment)
// Shard paths are relative to the spec's directory unless absolute. Weights are positive and normalised
// to sum to 1 when loaded.
#ifndef SEXTANT_DATA_MIXTURE_H
#define SEXTANT_DATA_MIXTURE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/rng.h"
#include "core/status.h"
#include "data/loader.h"

#define MIXTURE_MAX_SOURCES 16
#define MIXTURE_NAME_MAX 32

typedef struct {
    char name[MIXTURE_NAME_MAX];
    double weight;              // normalised: the weights of a spec sum to 1
    char train[1024], val[1024];
} mixture_source;

typedef struct {
    mixture_source src[MIXTURE_MAX_SOURCES];
    size_t n;
} mixture_spec;

// True for a path naming a mixture spec (it ends in ".mix").
bool mixture_is_spec(const char *path);
// Reads and checks a spec (names [A-Za-z0-9_-], unique; weights positive and finite; at least one source).
sx_status mixture_spec_load(const char *path, mixture_spec *m);
// Writes a spec (weights as given, paths as given) atomically.
sx_status mixture_spec_save(const char *path, const mixture_spec *m);

typedef struct {
    mixture_spec spec;
    data_loader ld[MIXTURE_MAX_SOURCES];
    double cum[MIXTURE_MAX_SOURCES];  // cumulative weights; cum[n-1] == 1
    rng_state pick;                   // the source picker
    uint64_t drawn[MIXTURE_MAX_SOURCES]; // windows drawn from each source (statistics, not state)
} mixture_sampler;

// Opens every source's train shard for windows of T+1 tokens (loader mode and expected vocabulary as in
// loader_open); all shards must share one vocabulary. Source k's loader is seeded from (seed, k).
sx_status mixture_open(mixture_sampler *s, const char *spec_path, size_t T, loader_mode mode, uint64_t seed,
                       size_t expected_vocab);
void mixture_close(mixture_sampler *s);
// Caps the unique data at max_tokens in all, source k at its weight's share (at least one window): see
// loader_cap_tokens. Call before the first draw.
sx_status mixture_cap_tokens(mixture_sampler *s, uint64_t max_tokens);
// Index of the source of the next window (advances the picker).
size_t mixture_pick(mixture_sampler *s);
// Overwrites out (B, T+1) with B windows, each from a source drawn by weight.
void mixture_next(mixture_sampler *s, size_t B, int32_t *out);
// Train tokens windows are drawn from, over the sources (after a cap).
uint64_t mixture_tokens(const mixture_sampler *s);

#endif
