#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "core/fsutil.h"
#include "scale/ladder_seeds.h"

#define FORMAT "sextant-ladder-seeds"

static uint32_t rungs_crc(json_t *rungs) {
    char *text = json_dumps(rungs, JSON_COMPACT | JSON_PRESERVE_ORDER);
    uint32_t crc = text ? (uint32_t)crc32_z(0L, (const Bytef *)text, strlen(text)) : 0;
    free(text);
    return crc;
}

// The width of every rung, plan order (largest first). widths (n_rungs) overwritten.
static sx_status rung_widths(const ladder_spec *spec, size_t *widths) {
    ladder_run *runs;
    size_t n;
    sx_status st = ladder_plan(spec, &runs, &n);
    if (st) return st;
    for (size_t r = 0; r < spec->n_rungs; r++) widths[r] = runs[ladder_rung_start(spec, r)].width;
    free(runs);
    return SX_OK;
}

sx_status ladder_add_rung(ladder_spec *spec, size_t width, size_t seeds) {
    if (spec->budgets[0] > 0) return sx_fail(SX_ERR_ARG, "%s: its rungs are budgets, not widths: no rung can be added", spec->name);
    if (spec->n_rungs >= LADDER_MAX_RUNGS)
        return sx_fail(SX_ERR_ARG, "%s: already %d rungs, the most a ladder holds", spec->name, LADDER_MAX_RUNGS);
    for (size_t r = 0; r < spec->n_rungs; r++)
        if (spec->widths[r] == width) return sx_fail(SX_ERR_ARG, "%s: already has a rung of width %zu", spec->name, width);
    memmove(spec->rung_seeds + 1, spec->rung_seeds, spec->n_rungs * sizeof *spec->rung_seeds);
    spec->rung_seeds[0] = seeds;
    spec->widths[spec->n_rungs++] = width;
    spec->n_added_rungs++;
    return SX_OK;
}

// The rungs of a seeds file marked added (version 2) that the spec lacks, added in plan order from the back: the
// file's first (largest) added rung ends up in front of the plan.
static sx_status add_marked(ladder_spec *spec, json_t *rungs, int version, const char *path) {
    for (size_t i = json_array_size(rungs); i-- > 0;) {
        json_t *e = json_array_get(rungs, i);
        if (!json_is_true(json_object_get(e, "added"))) continue;
        json_int_t w = json_integer_value(json_object_get(e, "width"));
        if (version < 2 || w < 1 || w > 1000000)
            return sx_fail(SX_ERR_FORMAT, "%s: rung %zu: an added rung needs version 2 and a width in 1..1e6", path, i);
        bool have = false, wider = true;   // rungs are added above the ladder, so the plan stays largest first
        for (size_t r = 0; r < spec->n_rungs; r++) {
            have = have || spec->widths[r] == (size_t)w;
            wider = wider && spec->widths[r] < (size_t)w;
        }
        if (!have && !wider)
            return sx_fail(SX_ERR_FORMAT, "%s: rung %zu: an added rung (w%lld) must be wider than the ladder's rungs", path, i,
                           (long long)w);
        if (!have && ladder_add_rung(spec, (size_t)w, 0))
            return sx_fail(SX_ERR_FORMAT, "%s: %s", path, sx_last_error());
    }
    return SX_OK;
}

sx_status ladder_seeds_read(ladder_spec *spec, const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_SEEDS_FILE);
    json_t *doc;
    int version = 0;
    sx_status st = fs_load_json_upto(path, FORMAT, LADDER_SEEDS_VERSION, "seeds file", &doc, &version);
    if (st || !doc) return st;
    json_t *rungs = json_object_get(doc, "rungs"), *crc = json_object_get(doc, "crc32");
    if (!json_is_array(rungs) || !json_is_integer(crc) || (uint32_t)json_integer_value(crc) != rungs_crc(rungs))
        st = sx_fail(SX_ERR_FORMAT, "%s: checksum does not match its rungs (edited or corrupt): remove it to keep the spec's seeds", path);
    if (!st) st = add_marked(spec, rungs, version, path);
    size_t widths[LADDER_MAX_RUNGS];
    if (!st) st = rung_widths(spec, widths);
    for (size_t i = 0; !st && i < json_array_size(rungs); i++) {
        json_t *e = json_array_get(rungs, i);
        json_int_t w = json_integer_value(json_object_get(e, "width")), k = json_integer_value(json_object_get(e, "seeds"));
        if (k < 1 || k > 1000) { st = sx_fail(SX_ERR_FORMAT, "%s: rung %zu: seeds must be in 1..1000", path, i); break; }
        for (size_t r = 0; r < spec->n_rungs; r++)
            if ((json_int_t)widths[r] == w) spec->rung_seeds[r] = (size_t)k;
    }
    json_decref(doc);
    return st;
}

sx_status ladder_open(const char *spec_path, const char *runs_dir, ladder_spec *spec, char *dir, size_t size) {
    *dir = 0;
    sx_status st = ladder_spec_read(spec_path, spec);
    if (st) return st;
    int len = runs_dir && *runs_dir ? snprintf(dir, size, "%s", runs_dir) : snprintf(dir, size, "runs/%s", spec->name);
    if (len < 0 || (size_t)len >= size) return sx_fail(SX_ERR_ARG, "%s: the ladder's run directory path is too long", spec_path);
    return ladder_seeds_read(spec, dir);
}

sx_status ladder_seeds_write(const ladder_spec *spec, const char *dir) {
    size_t widths[LADDER_MAX_RUNGS];
    sx_status st = rung_widths(spec, widths);
    if (st) return st;
    json_t *rungs = json_array();
    for (size_t r = 0; r < spec->n_rungs; r++) {   // plan rung r < n_added_rungs: the spec's widths from the back
        json_t *e = json_pack("{s:I, s:I}", "width", (json_int_t)widths[r], "seeds", (json_int_t)ladder_rung_seeds(spec, r));
        if (r < spec->n_added_rungs) json_object_set_new(e, "added", json_true());
        json_array_append_new(rungs, e);
    }
    json_t *doc = json_pack("{s:s, s:i, s:s, s:o, s:I}", "format", FORMAT, "version", spec->n_added_rungs ? LADDER_SEEDS_VERSION : 1,
                            "ladder", spec->name,
                            "rungs", rungs, "crc32", (json_int_t)rungs_crc(rungs));
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_SEEDS_FILE);
    st = doc ? fs_write_json(path, doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : sx_fail(SX_ERR_NOMEM, "out of memory");
    json_decref(doc);
    return st;
}
