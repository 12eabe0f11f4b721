#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "core/rng.h"
#include "model/params.h"

sx_status param_table_add(param_table *t, const char *name, size_t rows, size_t cols, param_init init, float std,
                          param_group group) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 32;
        param_spec *v = sx_realloc(t->v, cap * sizeof *v, "params v");
        if (!v) return sx_fail(SX_ERR_NOMEM, "out of memory building the parameter table");
        t->v = v;
        t->cap = cap;
    }
    param_spec *p = &t->v[t->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->rows = rows;
    p->cols = cols;
    p->init = init;
    p->std = std;
    p->group = group;
    // Round every tensor to 16 floats so each starts 64-byte aligned in the arena.
    p->offset = t->total;
    t->total += (rows * cols + 15) & ~(size_t)15;
    return SX_OK;
}

void param_table_free(param_table *t) {
    free(t->v);
    memset(t, 0, sizeof *t);
}

long param_table_find(const param_table *t, const char *name) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].name, name)) return (long)i;
    return -1;
}

static void init_one(const param_spec *p, float *x, rng_state *r) {
    size_t n = p->rows * p->cols;
    switch (p->init) {
    case INIT_NORMAL: rng_fill_normal(r, x, n, p->std); break;
    case INIT_ZERO: memset(x, 0, n * sizeof *x); break;
    case INIT_ONES: for (size_t j = 0; j < n; j++) x[j] = 1.0f; break;
    }
}

void param_table_init_values(const param_table *t, float *params, uint64_t seed) {
    rng_state r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < t->n; i++) init_one(&t->v[i], params + t->v[i].offset, &r);
}

// A generator seeded by (seed, name).
static void seed_by_name(rng_state *r, uint64_t seed, const char *name) {
    uint64_t h = 0xcbf29ce484222325ULL;   // FNV-1a of the name
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
    rng_seed(r, seed * 0x9E3779B97F4A7C15ULL ^ h);
}

void param_table_init_by_name(const param_table *t, float *params, uint64_t seed) {
    for (size_t i = 0; i < t->n; i++) {
        rng_state r;
        seed_by_name(&r, seed, t->v[i].name);
        init_one(&t->v[i], params + t->v[i].offset, &r);
    }
}

void param_table_init_zero_matrices(const param_table *t, float *params, uint64_t seed) {
    for (size_t i = 0; i < t->n; i++) {
        const param_spec *p = &t->v[i];
        if (p->group != PGROUP_MATRIX || p->init != INIT_ZERO) continue;
        rng_state r;
        seed_by_name(&r, seed, p->name);
        rng_fill_normal(&r, params + p->offset, p->rows * p->cols, 1.0f / sqrtf((float)p->cols));
    }
}
