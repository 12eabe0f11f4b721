#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/fsutil.h"
#include "scale/look_record.h"

#define FORMAT "sextant-until-decided-looks"

// The checksum over the body's keys: "stages" from version 2 on.
static uint32_t body_crc(json_t *doc, int version) {
    json_t *body = json_object();
    const char *keys[] = {"ladders", "widths", "target_flops", "shared_linf", "looks", "last_final", "verdicts", "stages"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys - (version < 2); i++) {
        json_t *v = json_object_get(doc, keys[i]);
        json_object_set(body, keys[i], v ? v : json_null());
    }
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    uint32_t crc = text ? (uint32_t)crc32_z(0L, (const Bytef *)text, strlen(text)) : 0;
    free(text);
    json_decref(body);
    return crc;
}

static json_t *sizes(const size_t *x, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((json_int_t)x[i]));
    return a;
}

sx_status look_record_write(const char *dir, const look_key *k, const look_record *rec) {
    json_t *ladders = json_array(), *looks = json_array(), *verdicts = json_array();
    for (size_t i = 0; i < k->n; i++) {
        json_array_append_new(ladders, json_string(k->names[i]));
        const look_verdict *v = &rec->verdicts[i];
        json_array_append_new(verdicts, json_pack("{s:o, s:b, s:o}", "look", v->look >= 0 ? json_integer(v->look) : json_null(),
                                                  "better", v->better, "level", isfinite(v->level) ? json_real(v->level) : json_null()));
    }
    for (size_t j = 0; j < rec->n_looks; j++) json_array_append_new(looks, sizes(rec->seeds[j], k->R));
    int version = rec->n_stages ? LOOK_RECORD_VERSION : 1;
    json_t *doc = json_pack("{s:s, s:i, s:o, s:o, s:f, s:b, s:o, s:b, s:o}", "format", FORMAT, "version", version,
                            "ladders", ladders, "widths", sizes(k->widths, k->R), "target_flops", k->target_flops, "shared_linf",
                            k->shared_linf, "looks", looks, "last_final", rec->last_final, "verdicts", verdicts);
    if (doc && rec->n_stages) {
        json_t *stages = json_array();
        for (size_t s = 0; s < rec->n_stages; s++) {
            json_t *t = json_array();
            for (size_t i = 0; i < k->n; i++) {
                double x = rec->stage_t[s * k->n + i];
                json_array_append_new(t, isfinite(x) ? json_real(x) : json_null());
            }
            json_array_append_new(stages, json_pack("{s:I, s:o}", "from_look", (json_int_t)rec->stage_first[s], "t", t));
        }
        json_object_set_new(doc, "stages", stages);
    }
    if (doc) json_object_set_new(doc, "crc32", json_integer((json_int_t)body_crc(doc, version)));
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, LOOK_RECORD_FILE);
    sx_status st = doc ? fs_write_json(path, doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : sx_fail(SX_ERR_NOMEM, "out of memory");
    json_decref(doc);
    return st;
}

void look_record_free(look_record *rec) {
    free(rec->seeds);
    free(rec->verdicts);
    free(rec->stage_t);
    *rec = (look_record){0};
}

// Why the record is not of comparison k (NULL: it is).
static const char *mismatch(json_t *doc, const look_key *k) {
    json_t *ladders = json_object_get(doc, "ladders"), *w = json_object_get(doc, "widths");
    if (json_array_size(ladders) != k->n) return "it records a comparison of other ladders";
    for (size_t i = 0; i < k->n; i++)
        if (!json_is_string(json_array_get(ladders, i)) || strcmp(json_string_value(json_array_get(ladders, i)), k->names[i]))
            return "it records a comparison of other ladders";
    if (json_array_size(w) != k->R) return "its rungs are not these";
    for (size_t r = 0; r < k->R; r++)
        if (json_integer_value(json_array_get(w, r)) != (json_int_t)k->widths[r]) return "its rungs are not these";
    double C = json_number_value(json_object_get(doc, "target_flops"));
    if (!(fabs(C - k->target_flops) <= 1e-9 * k->target_flops)) return "it records a comparison at another target compute";
    if (json_is_true(json_object_get(doc, "shared_linf")) != k->shared_linf) return "it records a comparison with other Linf pinning";
    return NULL;
}

// The "stages" array (NULL: none) of a record of k looks and n ladders into rec: each stage's first look (after
// the one before's, at most k: a rung round interrupted before its look) and its n fractions (in (0, 1], or null).
static sx_status read_stages(json_t *stages, size_t k, size_t n, const char *path, look_record *rec) {
    size_t m = json_array_size(stages);
    if (m > LADDER_MAX_RUNGS) return sx_fail(SX_ERR_FORMAT, "%s: more than %d stages", path, LADDER_MAX_RUNGS);
    if (m && !(rec->stage_t = malloc(m * n * sizeof *rec->stage_t))) return SX_ERR_NOMEM;
    for (size_t s = 0; s < m; s++) {
        json_t *e = json_array_get(stages, s), *t = json_object_get(e, "t");
        json_int_t from = json_integer_value(json_object_get(e, "from_look"));
        if (from < 1 || (size_t)from > k || (s && (size_t)from <= rec->stage_first[s - 1]) || json_array_size(t) != n)
            return sx_fail(SX_ERR_FORMAT, "%s: stage %zu: from_look must follow the stage before, within the %zu looks, with %zu "
                           "fractions", path, s + 1, k, n);
        rec->stage_first[s] = (size_t)from;
        for (size_t i = 0; i < n; i++) {
            json_t *x = json_array_get(t, i);
            double v = json_is_number(x) ? json_number_value(x) : NAN;
            if (!json_is_null(x) && !(v > 0 && v <= 1))
                return sx_fail(SX_ERR_FORMAT, "%s: stage %zu: fractions must be in (0, 1] or null", path, s + 1);
            rec->stage_t[s * n + i] = v;
        }
    }
    rec->n_stages = m;
    return SX_OK;
}

sx_status look_record_read(const char *dir, const look_key *key, look_record *rec, const char **why) {
    size_t n = key->n, R = key->R;
    *rec = (look_record){0};
    if (why) *why = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, LOOK_RECORD_FILE);
    json_t *doc;
    int version = 0;
    sx_status st = fs_load_json_upto(path, FORMAT, LOOK_RECORD_VERSION, "record", &doc, &version);
    if (st || !doc) return st;
    json_t *crc = json_object_get(doc, "crc32"), *looks = json_object_get(doc, "looks"), *verdicts = json_object_get(doc, "verdicts");
    const char *off = NULL;
    if (!json_is_integer(crc) || (uint32_t)json_integer_value(crc) != body_crc(doc, version))
        st = sx_fail(SX_ERR_FORMAT, "%s: checksum does not match (edited or corrupt): remove it to start the looks afresh", path);
    else if ((off = mismatch(doc, key))) {
        if (why) *why = off;
    } else {
        size_t k = json_array_size(looks);
        rec->seeds = malloc((k ? k : 1) * sizeof *rec->seeds);
        rec->verdicts = malloc(n * sizeof *rec->verdicts);
        if (!rec->seeds || !rec->verdicts) st = SX_ERR_NOMEM;
        if (!st && json_array_size(verdicts) != n) st = sx_fail(SX_ERR_FORMAT, "%s: %zu verdicts for %zu ladders", path, json_array_size(verdicts), n);
        if (!st) st = read_stages(version >= 2 ? json_object_get(doc, "stages") : NULL, k, n, path, rec);   // v1: unchecked
        size_t current = rec->n_stages ? rec->stage_first[rec->n_stages - 1] : 0;   // looks from here see every rung
        for (size_t j = 0; j < k && !st; j++)
            for (size_t r = 0; r < R && !st; r++) {
                json_int_t s = json_integer_value(json_array_get(json_array_get(looks, j), r)), least = j >= current;
                if (json_array_size(json_array_get(looks, j)) != R || s < least || s > 1000)
                    st = sx_fail(SX_ERR_FORMAT, "%s: look %zu: seeds per rung must be %zu numbers in %lld..1000", path, j + 1, R,
                                 (long long)least);
                else rec->seeds[j][r] = (size_t)s;
            }
        for (size_t i = 0; i < n && !st; i++) {
            json_t *v = json_array_get(verdicts, i), *look = json_object_get(v, "look"), *level = json_object_get(v, "level");
            rec->verdicts[i] = (look_verdict){.look = json_is_integer(look) ? (int)json_integer_value(look) : -1,
                                              .better = json_is_true(json_object_get(v, "better")),
                                              .level = json_is_number(level) ? json_number_value(level) : NAN};
            if ((json_is_integer(look) && (json_integer_value(look) < 0 || json_integer_value(look) >= (json_int_t)k)) ||
                (!json_is_integer(look) && !json_is_null(look)))
                st = sx_fail(SX_ERR_FORMAT, "%s: verdict %zu: look must be null or one of the %zu looks", path, i + 1, k);
        }
        rec->last_final = json_is_true(json_object_get(doc, "last_final"));
        if (!st) rec->n_looks = k;
        else look_record_free(rec);
    }
    json_decref(doc);
    return st;
}
