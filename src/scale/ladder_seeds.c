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

sx_status ladder_seeds_read(ladder_spec *spec, const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_SEEDS_FILE);
    json_t *doc;
    sx_status st = fs_load_versioned_json(path, FORMAT, LADDER_SEEDS_VERSION, "seeds file", &doc);
    if (st || !doc) return st;
    json_t *rungs = json_object_get(doc, "rungs"), *crc = json_object_get(doc, "crc32");
    if (!json_is_array(rungs) || !json_is_integer(crc) || (uint32_t)json_integer_value(crc) != rungs_crc(rungs))
        st = sx_fail(SX_ERR_FORMAT, "%s: checksum does not match its rungs (edited or corrupt): remove it to keep the spec's seeds", path);
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
    for (size_t r = 0; r < spec->n_rungs; r++)
        json_array_append_new(rungs, json_pack("{s:I, s:I}", "width", (json_int_t)widths[r], "seeds", (json_int_t)ladder_rung_seeds(spec, r)));
    json_t *doc = json_pack("{s:s, s:i, s:s, s:o, s:I}", "format", FORMAT, "version", LADDER_SEEDS_VERSION, "ladder", spec->name,
                            "rungs", rungs, "crc32", (json_int_t)rungs_crc(rungs));
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, LADDER_SEEDS_FILE);
    st = doc ? fs_write_json(path, doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : sx_fail(SX_ERR_NOMEM, "out of memory");
    json_decref(doc);
    return st;
}
