#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "core/status.h"
#include "data/loader.h"
#include "data/mixture.h"
#include "train/batches.h"

struct batch_source {
    bool is_shard, is_mixture;
    data_loader ld;         // shard
    mixture_sampler *mix;   // mixture spec (*.mix)
    synthetic_source syn;   // synthetic
    rng_state rng;          // synthetic
    size_t T;
    char spec[512];
};

// RNG states travel through JSON as hex strings (uint64 does not fit JSON's integers).
static json_t *rng_to_json(const rng_state *r) {
    json_t *a = json_array();
    char buf[24];
    for (int i = 0; i < 4; i++) {
        snprintf(buf, sizeof buf, "%016llx", (unsigned long long)r->s[i]);
        json_array_append_new(a, json_string(buf));
    }
    return a;
}

static int rng_from_json(json_t *a, rng_state *r) {
    if (json_array_size(a) != 4) return 0;
    for (int i = 0; i < 4; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        char *end;
        if (!s || strlen(s) != 16) return 0;
        r->s[i] = strtoull(s, &end, 16);
        if (*end) return 0;
    }
    return 1;
}

sx_status batch_source_open(batch_source **out, const char *spec, size_t T, bool epoch_order, uint64_t seed) {
    batch_source *s = sx_calloc_n(1, sizeof *s, "batches s");
    if (!s) return sx_fail(SX_ERR_NOMEM, "out of memory");
    snprintf(s->spec, sizeof s->spec, "%s", spec);
    s->T = T;
    rng_seed(&s->rng, seed);
    loader_mode mode = epoch_order ? LOADER_EPOCH : LOADER_RANDOM;
    sx_status st;
    if (!strncmp(spec, "synthetic:", 10)) st = synthetic_open(spec, &s->syn);
    else if (mixture_is_spec(spec)) {
        s->is_mixture = true;
        s->mix = sx_calloc(sizeof *s->mix, "data mixture");
        st = s->mix ? mixture_open(s->mix, spec, T, mode, seed, 0) : sx_fail(SX_ERR_NOMEM, "out of memory");
        if (st) free(s->mix);
    } else {
        s->is_shard = true;
        st = loader_open(&s->ld, spec, T, mode, seed, 0);
    }
    if (st) { free(s); return st; }
    *out = s;
    return SX_OK;
}

void batch_source_close(batch_source *s) {
    if (!s) return;
    if (s->is_shard) loader_close(&s->ld);
    else if (s->is_mixture) { mixture_close(s->mix); free(s->mix); }
    else synthetic_close(&s->syn);
    free(s);
}

size_t batch_source_vocab(const batch_source *s) {
    return s->is_shard ? s->ld.shard.h.vocab_size : s->is_mixture ? s->mix->ld[0].shard.h.vocab_size : s->syn.vocab;
}

double batch_source_tokens(const batch_source *s) {
    return s->is_shard ? (double)s->ld.n_used : s->is_mixture ? (double)mixture_tokens(s->mix) : 0;
}

sx_status batch_source_cap(batch_source *s, double max_tokens) {
    if (!(max_tokens >= 1)) return sx_fail(SX_ERR_ARG, "a cap on unique tokens must be at least 1, not %g", max_tokens);
    if (s->is_shard) return loader_cap_tokens(&s->ld, (uint64_t)max_tokens);
    if (s->is_mixture) return mixture_cap_tokens(s->mix, (uint64_t)max_tokens);
    return sx_fail(SX_ERR_ARG, "%s: synthetic data has no unique tokens to cap", s->spec);
}

sx_status batch_source_next(batch_source *s, size_t B, int32_t *tokens) {
    if (s->is_shard) loader_next(&s->ld, B, tokens);
    else if (s->is_mixture) mixture_next(s->mix, B, tokens);
    else synthetic_batch(&s->syn, &s->rng, B, s->T, tokens);
    return SX_OK;
}

// Evaluation window j starts at frac(j·φ) of the shard: a low-discrepancy spread over the whole shard that
// does not depend on how many windows are evaluated.
sx_status batch_source_eval(batch_source *s, size_t index, size_t B, int32_t *tokens) {
    size_t T = s->T;
    if (s->is_mixture)
        return sx_fail(SX_ERR_ARG, "%s: a mixture is evaluated per source (its validation shards), not as one stream", s->spec);
    if (!s->is_shard) {
        rng_state r;
        rng_seed(&r, 0xe7a1 + index);
        synthetic_batch(&s->syn, &r, B, T, tokens);
        return SX_OK;
    }
    const shard_file *sh = &s->ld.shard;
    uint64_t span = sh->h.n_tokens - T - 1;
    for (size_t b = 0; b < B; b++) {
        double j = (double)(index * B + b), frac = fmod(j * 0.6180339887498949, 1.0);
        uint64_t start = (uint64_t)(frac * (double)(span + 1));
        if (start > span) start = span;
        for (size_t t = 0; t <= T; t++) tokens[b * (T + 1) + t] = (int32_t)shard_token(sh, start + t);
    }
    return SX_OK;
}

// A loader's position as JSON (new reference), and back.
static json_t *loader_state(const data_loader *ld) {
    loader_pos p;
    loader_get_pos(ld, &p);
    rng_state r;
    memcpy(r.s, p.rng, sizeof r.s);
    char seed[24];
    snprintf(seed, sizeof seed, "%016llx", (unsigned long long)p.seed);
    return json_pack("{s:I, s:s, s:I, s:I, s:o}", "mode", (json_int_t)p.mode, "seed", seed, "epoch",
                     (json_int_t)p.epoch, "cursor", (json_int_t)p.cursor, "rng", rng_to_json(&r));
}

static sx_status loader_restore(data_loader *ld, json_t *state, const char *from) {
    rng_state r;
    if (!rng_from_json(json_object_get(state, "rng"), &r))
        return sx_fail(SX_ERR_FORMAT, "%s: the data position (train.data.rng) is missing or malformed", from);
    const char *seed = json_string_value(json_object_get(state, "seed"));
    json_t *mode = json_object_get(state, "mode"), *epoch = json_object_get(state, "epoch"), *cursor = json_object_get(state, "cursor");
    char *end = NULL;
    uint64_t seed_value = seed ? strtoull(seed, &end, 16) : 0;
    if (!seed || !*seed || *end || !json_is_integer(mode) || !json_is_integer(epoch) || !json_is_integer(cursor) ||
        json_integer_value(mode) < 0 || json_integer_value(epoch) < 0 || json_integer_value(cursor) < 0)
        return sx_fail(SX_ERR_FORMAT, "%s: the data position (train.data: mode, seed, epoch, cursor) is malformed, or "
                       "the checkpoint was trained on synthetic data and this run reads a shard", from);
    loader_pos p = {.mode = (uint64_t)json_integer_value(mode), .seed = seed_value,
                    .epoch = (uint64_t)json_integer_value(epoch), .cursor = (uint64_t)json_integer_value(cursor)};
    memcpy(p.rng, r.s, sizeof p.rng);
    sx_status st = loader_set_pos(ld, &p);
    if (!st) return SX_OK;
    char why[512];
    snprintf(why, sizeof why, "%s", sx_last_error());
    return sx_fail(st, "%s: %s", from, why);
}

json_t *batch_source_state(const batch_source *s) {
    if (s->is_mixture) {
        json_t *srcs = json_array();
        for (size_t k = 0; k < s->mix->spec.n; k++) json_array_append_new(srcs, loader_state(&s->mix->ld[k]));
        return json_pack("{s:s, s:o, s:o}", "spec", s->spec, "pick", rng_to_json(&s->mix->pick), "sources", srcs);
    }
    if (!s->is_shard) return json_pack("{s:s, s:o}", "spec", s->spec, "rng", rng_to_json(&s->rng));
    json_t *o = loader_state(&s->ld);
    json_object_set_new(o, "spec", json_string(s->spec));
    return o;
}

sx_status batch_source_restore(batch_source *s, json_t *state, const char *from) {
    if (s->is_mixture) {
        json_t *srcs = json_object_get(state, "sources");
        if (!rng_from_json(json_object_get(state, "pick"), &s->mix->pick) || json_array_size(srcs) != s->mix->spec.n)
            return sx_fail(SX_ERR_MISMATCH, "%s: the data position is not one of mixture %s (%zu sources)", from, s->spec,
                           s->mix->spec.n);
        for (size_t k = 0; k < s->mix->spec.n; k++) {
            sx_status st = loader_restore(&s->mix->ld[k], json_array_get(srcs, k), from);
            if (st) return st;
        }
        return SX_OK;
    }
    if (s->is_shard) return loader_restore(&s->ld, state, from);
    rng_state r;
    if (!rng_from_json(json_object_get(state, "rng"), &r))
        return sx_fail(SX_ERR_FORMAT, "%s: the data position (train.data.rng) is missing or malformed", from);
    s->rng = r;
    return SX_OK;
}
