// libFuzzer target: lr_schedule_parse. The first line is the spec; when it starts with "file" the rest of
// the input becomes the schedule file and the spec becomes "file:PATH" followed by what came after "file".
#include <math.h>
#include "optim/schedule.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 16384) return 0;
    size_t n1, off2;
    fuzz_split(data, n, "\n", &n1, &off2);
    char *line = fuzz_str(data, n1), spec[1024];
    long total = 1 + (long)(n % 977);
    if (!strncmp(line, "file", 4)) {
        const char *path = fuzz_file(0, "sched.txt", data + off2, n - off2);
        snprintf(spec, sizeof spec, "file:%s%s", path, line + 4);
    } else {
        snprintf(spec, sizeof spec, "%s", line);
    }
    lr_schedule s;
    if (lr_schedule_parse(spec, total, &s) == SX_OK) {
        double m[64];
        lr_schedule_fill(&s, m, total < 64 ? total : 64);
        for (long i = 1; i <= total; i += 1 + total / 16)
            if (!(lr_schedule_mult(&s, i) >= 0)) abort(); // a multiplier must be a number >= 0
        (void)lr_schedule_set_warmup(&s, line);
        json_decref(lr_schedule_to_json(&s));
        char buf[256];
        lr_schedule_describe(&s, buf, sizeof buf);
    }
    free(line);
    return 0;
}
