// loader: draws training batches from a memory-mapped token shard. A batch is B windows of T+1 consecutive
// tokens written as int32 into a (B, T+1) row-major buffer (inputs are [:, :T], targets [:, 1:]).
// Two modes:
//   LOADER_RANDOM: each window starts at a uniform random position in [0, n_tokens - T - 1] (seeded rng).
//   LOADER_EPOCH:  the shard is cut into n_windows = (n_tokens - 1) / T windows starting at w*T (neighbours
//                  share one token), so every token up to n_windows*T is a target exactly once per epoch; the
//                  windows are visited in a fresh seeded permutation each epoch. The last < T tokens are not
//                  used.
// The position is a loader_pos of plain integers; saving it in a checkpoint and restoring it with
// loader_set_pos continues the exact same sequence of batches. Not responsible for tokenizing or for
// spreading windows across processes.
#ifndef SEXTANT_DATA_LOADER_H
#define SEXTANT_DATA_LOADER_H
#include <stdint.h>
#include "core/rng.h"
#include "data/shard.h"

typedef enum { LOADER_RANDOM = 0, LOADER_EPOCH = 1 } loader_mode;

typedef struct {
    uint64_t mode;   // loader_mode
    uint64_t seed;
    uint64_t epoch;  // epochs completed (LOADER_EPOCH)
    uint64_t cursor; // windows drawn in this epoch (LOADER_EPOCH) / in total (LOADER_RANDOM)
    uint64_t rng[4]; // window-start generator state (LOADER_RANDOM)
} loader_pos;

typedef struct {
    shard_file shard;
    size_t T;
    loader_mode mode;
    uint64_t seed, epoch, cursor;
    rng_state rng;
    uint64_t n_used;     // tokens windows are drawn from: the whole shard, or the spread windows of the cap
    uint64_t n_spread;   // capped: n_spread windows of T + 1 tokens, window i at i * spread_stride; 0: no cap
    uint64_t spread_stride;
    uint64_t n_windows;  // LOADER_EPOCH: windows per epoch
    uint64_t *perm;      // LOADER_EPOCH: (n_windows) this epoch's order
} data_loader;

// Opens and validates the shard at path (expected_vocab != 0: it must match, see shard_open) for windows
// of T+1 tokens. Fails if the shard has fewer than T+1 tokens.
sx_status loader_open(data_loader *ld, const char *path, size_t T, loader_mode mode, uint64_t seed,
                      size_t expected_vocab);
void loader_close(data_loader *ld);
// Draws windows only from max_tokens of the shard's tokens (a cap on unique data: training longer than that
// repeats it): max_tokens / (T + 1) windows spaced evenly from the shard's start to its end, so the capped
// data is a sample of the whole shard as diverse as it, not its first documents (a shard is written in
// document order: its first tokens are one book, or one source's first files) nor a few long pieces of it.
// Both modes draw from those windows: epochs visit each once, random draws pick one uniformly. n_used is
// their total, at most max_tokens and within a window of it. Call before the first loader_next. SX_ERR_ARG
// if max_tokens < T + 1.
sx_status loader_cap_tokens(data_loader *ld, uint64_t max_tokens);
// Overwrites out (B, T+1) with the next B windows.
void loader_next(data_loader *ld, size_t B, int32_t *out);
void loader_get_pos(const data_loader *ld, loader_pos *pos);
// Restores a position saved by loader_get_pos on a loader opened on the same shard with the same T;
// SX_ERR_MISMATCH if the mode or the position does not fit.
sx_status loader_set_pos(data_loader *ld, const loader_pos *pos);

#endif
