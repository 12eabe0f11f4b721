// libFuzzer target: the forecast/fit JSON readers: forecast_points_load (forecast.json as the trainer reads
// it) and forecast_make (fit.json, as `sextant forecast` reads it) with a fixed small hero whose schedule
// is the input's "_hero_schedule" string (default: the ladder's).
#include "scale/forecast.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 65536) return 0;
    const char *path = fuzz_file(0, "f.json", data, n);
    forecast_points p;
    if (forecast_points_load(path, 100, &p) == SX_OK) {
        (void)forecast_points_find(&p, 50);
        forecast_points_free(&p);
    }
    json_t *fit = json_loadb((const char *)data, n, 0, NULL);
    if (fit) {
        hero_spec h = {.model = "d2-w64-hd16", .tokens = 1e6, .schedule = json_string_value(json_object_get(fit, "_hero_schedule")), .warmup = -1};
        json_t *out = NULL;
        if (forecast_make(fit, &h, &out) == SX_OK) json_decref(out);
        (void)forecast_verify_hash(fit, path);
        json_decref(fit);
    }
    return 0;
}
