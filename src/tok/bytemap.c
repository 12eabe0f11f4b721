#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "tok/bytemap.h"

uint64_t bytemap_hash(const uint8_t *key, size_t n) {
    const uint64_t m = 0x9E3779B97F4A7C15ULL;
    uint64_t h = 0x243F6A8885A308D3ULL ^ (n * m);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, key + i, 8);
        h = (h ^ w) * m;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, key + i, n - i);
    h = (h ^ w) * m;
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ULL;
    h ^= h >> 32;
    return h ? h : 1;
}

sx_status bytemap_init(bytemap *m, size_t expected) {
    memset(m, 0, sizeof *m);
    size_t cap = 64;
    while (cap < expected * 2) cap *= 2;
    m->slots = sx_calloc_n(cap, sizeof *m->slots, "bytemap m.slots");
    m->arena_cap = expected * 8 + 64;
    m->arena = sx_alloc(m->arena_cap, "bytemap m.arena");
    if (!m->slots || !m->arena) {
        bytemap_free(m);
        return sx_fail(SX_ERR_NOMEM, "cannot allocate a hash map for %zu keys", expected);
    }
    m->capacity = cap;
    return SX_OK;
}

void bytemap_free(bytemap *m) {
    free(m->slots);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

void bytemap_clear(bytemap *m) {
    memset(m->slots, 0, m->capacity * sizeof *m->slots);
    m->count = 0;
    m->arena_len = 0;
}

static size_t probe(const bytemap *m, const uint8_t *key, size_t n, uint64_t hash) {
    size_t mask = m->capacity - 1, i = hash & mask;
    for (;;) {
        const bytemap_slot *s = &m->slots[i];
        if (!s->hash) return i;
        if (s->hash == hash && s->key_len == n && !memcmp(m->arena + s->key_off, key, n)) return i;
        i = (i + 1) & mask;
    }
}

bytemap_slot *bytemap_find(const bytemap *m, const uint8_t *key, size_t n, uint64_t hash) {
    bytemap_slot *s = &m->slots[probe(m, key, n, hash)];
    return s->hash ? s : NULL;
}

static int grow(bytemap *m) {
    size_t cap = m->capacity * 2;
    bytemap_slot *slots = sx_calloc_n(cap, sizeof *slots, "bytemap slots");
    if (!slots) return 0;
    for (size_t i = 0; i < m->capacity; i++) {
        bytemap_slot *s = &m->slots[i];
        if (!s->hash) continue;
        size_t j = s->hash & (cap - 1);
        while (slots[j].hash) j = (j + 1) & (cap - 1);
        slots[j] = *s;
    }
    free(m->slots);
    m->slots = slots;
    m->capacity = cap;
    return 1;
}

bytemap_slot *bytemap_upsert(bytemap *m, const uint8_t *key, size_t n, uint64_t hash, int *inserted) {
    *inserted = 0;
    size_t i = probe(m, key, n, hash);
    if (m->slots[i].hash) return &m->slots[i];
    if ((m->count + 1) * 4 > m->capacity * 3) {
        if (!grow(m)) goto oom;
        i = probe(m, key, n, hash);
    }
    if (m->arena_len + n > m->arena_cap) {
        size_t cap = m->arena_cap * 2 + n;
        uint8_t *a = sx_realloc(m->arena, cap, "bytemap a");
        if (!a) goto oom;
        m->arena = a;
        m->arena_cap = cap;
    }
    memcpy(m->arena + m->arena_len, key, n);
    bytemap_slot *s = &m->slots[i];
    s->hash = hash;
    s->value = 0;
    s->key_off = m->arena_len;
    s->key_len = (uint32_t)n;
    m->arena_len += n;
    m->count++;
    *inserted = 1;
    return s;
oom:
    sx_fail(SX_ERR_NOMEM, "cannot grow a hash map beyond %zu keys", m->count);
    return NULL;
}
