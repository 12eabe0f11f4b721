// libFuzzer target: rundir_read. The input is config.json, a line "=====", then metrics.jsonl.
#include "scale/rundir.h"
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
    return 0;
}
