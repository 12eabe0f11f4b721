// bytemap: an open-addressing hash map from byte strings to uint64 values, with the keys copied into an
// arena it owns. Used for vocabulary ranks, the encoder's word cache and BPE training word counts.
// Not responsible for what the values mean; not thread-safe; keys cannot be removed (only the whole
// map cleared).
#ifndef SEXTANT_TOK_BYTEMAP_H
#define SEXTANT_TOK_BYTEMAP_H
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"

typedef struct {
    uint64_t hash;   // 0 marks an empty slot
    uint64_t value;
    uint64_t key_off; // offset of the key in the arena
    uint32_t key_len;
} bytemap_slot;

typedef struct {
    bytemap_slot *slots; // capacity entries, capacity a power of two
    size_t capacity, count;
    uint8_t *arena;      // keys, back to back
    size_t arena_len, arena_cap;
} bytemap;

// A fast 64-bit hash of n bytes (never 0).
uint64_t bytemap_hash(const uint8_t *key, size_t n);
// Prepares an empty map sized for about expected keys.
sx_status bytemap_init(bytemap *m, size_t expected);
void bytemap_free(bytemap *m);
// Removes every key (keeps the allocations).
void bytemap_clear(bytemap *m);
// Returns the slot holding key, or NULL.
bytemap_slot *bytemap_find(const bytemap *m, const uint8_t *key, size_t n, uint64_t hash);
// Returns the slot for key, inserting it with value 0 (and *inserted = 1) if absent; NULL on OOM.
bytemap_slot *bytemap_upsert(bytemap *m, const uint8_t *key, size_t n, uint64_t hash, int *inserted);
// The bytes of a slot's key.
static inline const uint8_t *bytemap_key(const bytemap *m, const bytemap_slot *s) { return m->arena + s->key_off; }

#endif
