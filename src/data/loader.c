#include <stdlib.h>
#include <string.h>
#include "data/loader.h"

// The permutation of windows for ld->epoch (Fisher-Yates from a generator seeded by (seed, epoch)).
static void shuffle_epoch(data_loader *ld) {
    rng_state r;
    rng_seed(&r, ld->seed ^ (0x9E3779B97F4A7C15ULL * (ld->epoch + 1)));
    for (uint64_t i = 0; i < ld->n_windows; i++) ld->perm[i] = i;
    for (uint64_t i = ld->n_windows; i > 1; i--) {
        uint64_t j = rng_below(&r, i), t = ld->perm[i - 1];
        ld->perm[i - 1] = ld->perm[j];
        ld->perm[j] = t;
    }
}

sx_status loader_open(data_loader *ld, const char *path, size_t T, loader_mode mode, uint64_t seed,
                      size_t expected_vocab) {
    memset(ld, 0, sizeof *ld);
    if (T == 0) return sx_fail(SX_ERR_ARG, "loader: sequence length must be positive");
    sx_status st = shard_open(&ld->shard, path, expected_vocab);
    if (st) return st;
    if (ld->shard.h.n_tokens < (uint64_t)T + 1) {
        st = sx_fail(SX_ERR_ARG, "%s has %llu tokens, fewer than one window of %zu", path,
                     (unsigned long long)ld->shard.h.n_tokens, T + 1);
        shard_close(&ld->shard); // after the message: closing clears the header
        return st;
    }
    ld->T = T;
    ld->n_used = ld->shard.h.n_tokens;
    ld->mode = mode;
    ld->seed = seed;
    rng_seed(&ld->rng, seed);
    if (mode == LOADER_EPOCH) {
        ld->n_windows = (ld->shard.h.n_tokens - 1) / T;
        ld->perm = sx_alloc(ld->n_windows * sizeof *ld->perm, "the loader's window order");
        if (!ld->perm) { shard_close(&ld->shard); return SX_ERR_NOMEM; }   // sx_alloc said what
        shuffle_epoch(ld);
    }
    return SX_OK;
}

sx_status loader_cap_tokens(data_loader *ld, uint64_t max_tokens) {
    if (max_tokens >= ld->shard.h.n_tokens) return SX_OK;
    if (max_tokens < ld->T + 1)
        return sx_fail(SX_ERR_ARG, "a cap of %llu unique tokens is less than one window of %zu", (unsigned long long)max_tokens,
                       ld->T + 1);
    ld->n_spread = max_tokens / (ld->T + 1);
    ld->spread_stride = ld->shard.h.n_tokens / ld->n_spread;   // >= T + 1, as n_spread * (T + 1) < n_tokens
    ld->n_used = ld->n_spread * (ld->T + 1);
    if (ld->mode == LOADER_EPOCH) {
        ld->n_windows = ld->n_spread;
        shuffle_epoch(ld);
    }
    return SX_OK;
}

void loader_close(data_loader *ld) {
    shard_close(&ld->shard);
    sx_free(ld->perm);
    memset(ld, 0, sizeof *ld);
}

void loader_next(data_loader *ld, size_t B, int32_t *out) {
    const size_t T = ld->T;
    for (size_t b = 0; b < B; b++) {
        uint64_t start;
        if (ld->mode == LOADER_EPOCH) {
            if (ld->cursor == ld->n_windows) {
                ld->epoch++;
                ld->cursor = 0;
                shuffle_epoch(ld);
            }
            start = ld->perm[ld->cursor++] * (ld->n_spread ? ld->spread_stride : T);
        } else if (ld->n_spread) {
            start = rng_below(&ld->rng, ld->n_spread) * ld->spread_stride;
            ld->cursor++;
        } else {
            start = rng_below(&ld->rng, ld->n_used - T);
            ld->cursor++;
        }
        int32_t *row = out + b * (T + 1);
        for (size_t t = 0; t <= T; t++) row[t] = (int32_t)shard_token(&ld->shard, start + t);
    }
}

void loader_get_pos(const data_loader *ld, loader_pos *pos) {
    pos->mode = ld->mode;
    pos->seed = ld->seed;
    pos->epoch = ld->epoch;
    pos->cursor = ld->cursor;
    memcpy(pos->rng, ld->rng.s, sizeof pos->rng);
}

sx_status loader_set_pos(data_loader *ld, const loader_pos *pos) {
    static const char *const order[] = {"random windows", "epochs (every window once per epoch)"};
    if (pos->mode != ld->mode)
        return sx_fail(SX_ERR_MISMATCH, "the checkpoint read its data as %s, this run reads it as %s: resume with the "
                       "same --data-order", pos->mode == LOADER_EPOCH ? order[1] : pos->mode == LOADER_RANDOM ? order[0] :
                       "an unknown order", order[ld->mode == LOADER_EPOCH]);
    if (ld->mode == LOADER_EPOCH && pos->cursor > ld->n_windows)
        return sx_fail(SX_ERR_MISMATCH, "loader position %llu is past the %llu windows of this shard",
                       (unsigned long long)pos->cursor, (unsigned long long)ld->n_windows);
    ld->seed = pos->seed;
    ld->epoch = pos->epoch;
    ld->cursor = pos->cursor;
    memcpy(ld->rng.s, pos->rng, sizeof pos->rng);
    if (ld->mode == LOADER_EPOCH) shuffle_epoch(ld);
    return SX_OK;
}
