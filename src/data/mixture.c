#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"
#include "core/lines.h"
#include "data/mixture.h"

bool mixture_is_spec(const char *path) {
    size_t n = path ? strlen(path) : 0;
    return n > 4 && !strcmp(path + n - 4, ".mix");
}

// dir of spec + rel into out, unless rel is absolute.
static int join_path(char *out, size_t size, const char *spec, const char *rel) {
    const char *slash = strrchr(spec, '/');
    if (rel[0] == '/' || !slash) return snprintf(out, size, "%s", rel) < (int)size;
    return snprintf(out, size, "%.*s/%s", (int)(slash - spec), spec, rel) < (int)size;
}

static bool good_name(const char *s) {
    if (!*s || strlen(s) >= MIXTURE_NAME_MAX) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-') return false;
    return true;
}

sx_status mixture_spec_load(const char *path, mixture_spec *m) {
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f) return sx_fail(SX_ERR_IO, "cannot open mixture spec %s (%s)", path, strerror(errno));
    line_reader r;
    line_reader_init(&r, f);
    double total = 0;
    sx_status st = SX_OK;
    while (!st && line_reader_next(&r)) {
        const char *line = line_reader_uncomment(&r);
        char key[32], name[64], train[1024], val[1024], extra[8];
        double w;
        int got = sscanf(line, "%31s %63s %lf %1023s %1023s %7s", key, name, &w, train, val, extra);
        if (got <= 0) continue;
        if (got != 5 || strcmp(key, "source"))
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: expected 'source NAME WEIGHT TRAIN_SHARD VAL_SHARD'", path, r.no);
        else if (!good_name(name))
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: source name '%s' must be 1-%d characters of [A-Za-z0-9_-]", path, r.no,
                         name, MIXTURE_NAME_MAX - 1);
        else if (!(w > 0 && isfinite(w)))
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: weight %g of %s must be positive", path, r.no, w, name);
        else if (m->n == MIXTURE_MAX_SOURCES)
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: more than %d sources", path, r.no, MIXTURE_MAX_SOURCES);
        if (st) break;
        for (size_t k = 0; k < m->n; k++)
            if (!strcmp(m->src[k].name, name)) st = sx_fail(SX_ERR_FORMAT, "%s:%zu: source %s appears twice", path, r.no, name);
        mixture_source *s = &m->src[m->n];
        if (!st && (!join_path(s->train, sizeof s->train, path, train) || !join_path(s->val, sizeof s->val, path, val)))
            st = sx_fail(SX_ERR_FORMAT, "%s:%zu: path too long", path, r.no);
        if (st) break;
        memcpy(s->name, name, strlen(name) + 1);   // good_name bounded it
        s->weight = w;
        total += w;
        m->n++;
    }
    line_reader_close(&r);
    if (!st && m->n == 0) st = sx_fail(SX_ERR_FORMAT, "%s: no 'source' lines (not a mixture spec?)", path);
    for (size_t k = 0; k < m->n && !st; k++) m->src[k].weight /= total;
    return st;
}

// fs_write_atomic's fill: the spec's lines.
static bool write_spec(FILE *f, void *arg) {
    const mixture_spec *m = arg;
    fprintf(f, "# sextant mixture v1: source NAME WEIGHT TRAIN_SHARD VAL_SHARD (paths relative to this file)\n");
    for (size_t k = 0; k < m->n; k++)
        fprintf(f, "source %s %.6g %s %s\n", m->src[k].name, m->src[k].weight, m->src[k].train, m->src[k].val);
    return !ferror(f);
}

sx_status mixture_spec_save(const char *path, const mixture_spec *m) {
    return fs_write_atomic(path, write_spec, (void *)m);
}

sx_status mixture_open(mixture_sampler *s, const char *spec_path, size_t T, loader_mode mode, uint64_t seed,
                       size_t expected_vocab) {
    memset(s, 0, sizeof *s);
    sx_status st = mixture_spec_load(spec_path, &s->spec);
    double c = 0;
    for (size_t k = 0; k < s->spec.n && !st; k++) {
        st = loader_open(&s->ld[k], s->spec.src[k].train, T, mode, seed ^ (0xD1B54A32D192ED03ULL * (k + 1)), expected_vocab);
        if (st) st = sx_fail(st, "%s: source %s: %s", spec_path, s->spec.src[k].name, sx_last_error());
        if (!st && k > 0 && s->ld[k].shard.h.vocab_size != s->ld[0].shard.h.vocab_size)
            st = sx_fail(SX_ERR_MISMATCH, "%s: source %s has vocabulary size %u, source %s has %u", spec_path,
                         s->spec.src[k].name, s->ld[k].shard.h.vocab_size, s->spec.src[0].name,
                         s->ld[0].shard.h.vocab_size);
        if (st) {
            for (size_t j = 0; j <= k; j++) loader_close(&s->ld[j]);
            return st;
        }
        c += s->spec.src[k].weight;
        s->cum[k] = c;
    }
    if (st) return st;
    s->cum[s->spec.n - 1] = 1.0;
    rng_seed(&s->pick, seed ^ 0x6A09E667F3BCC909ULL);
    return SX_OK;
}

void mixture_close(mixture_sampler *s) {
    for (size_t k = 0; k < s->spec.n; k++) loader_close(&s->ld[k]);
    memset(s, 0, sizeof *s);
}

sx_status mixture_cap_tokens(mixture_sampler *s, uint64_t max_tokens) {
    for (size_t k = 0; k < s->spec.n; k++) {
        uint64_t share = (uint64_t)llround(s->spec.src[k].weight * (double)max_tokens), one = s->ld[k].T + 1;
        sx_status st = loader_cap_tokens(&s->ld[k], share > one ? share : one);
        if (st) return st;
    }
    return SX_OK;
}

size_t mixture_pick(mixture_sampler *s) {
    double u = rng_uniform(&s->pick);
    size_t k = 0;
    while (k + 1 < s->spec.n && u >= s->cum[k]) k++;
    return k;
}

void mixture_next(mixture_sampler *s, size_t B, int32_t *out) {
    size_t T = s->ld[0].T;
    for (size_t b = 0; b < B; b++) {
        size_t k = mixture_pick(s);
        s->drawn[k]++;
        loader_next(&s->ld[k], 1, out + b * (T + 1));
    }
}

uint64_t mixture_tokens(const mixture_sampler *s) {
    uint64_t n = 0;
    for (size_t k = 0; k < s->spec.n; k++) n += s->ld[k].n_used;
    return n;
}
