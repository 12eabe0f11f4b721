// libFuzzer target: rundir_read (a run directory as fit, forecast and compare read it) and the resume
// check of a run's config.json (train_config_check_resume against fixed flags, with its resolved_paths).
// The input is config.json, a line "=====", then metrics.jsonl.
#include "runs/rundir.h"
#include "train/progress.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 65536) return 0;
    size_t n1, off2;
    fuzz_split(data, n, "\n=====\n", &n1, &off2);
    fuzz_file(0, "config.json", data, n1);
    fuzz_file(1, "metrics.jsonl", data + off2, n - off2);
    rundir_run r;
    (void)rundir_read(fuzz_dir(), &r);
    rundir_free(&r);
    json_t *config = json_loadb((const char *)data, n1, 0, NULL);
    json_t *mine = json_pack("{s:s, s:i, s:f, s:s, s:b}", "model", "d1-w8-hd8", "batch", 2, "lr", 0.003, "train",
                             "synthetic:16", "resume", 1);
    (void)train_config_check_resume(json_object_get(config, "flags"), json_object_get(config, "resolved_paths"), mine,
                                    "steps,lr", fuzz_dir());
    json_decref(mine);
    json_decref(config);
    return 0;
}
