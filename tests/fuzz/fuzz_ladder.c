// libFuzzer target: ladder_spec_read (ladder spec text), then ladder_plan when the data is synthetic.
#include <string.h>
#include "scale/ladder.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 8192) return 0;
    const char *path = fuzz_file(0, "l.ladder", data, n);
    ladder_spec *s = malloc(sizeof *s);
    if (s && ladder_spec_read(path, s) == SX_OK && !strncmp(s->train, "synthetic:", 10)) {
        ladder_run *runs = NULL;
        size_t nr = 0;
        if (ladder_plan(s, &runs, &nr) == SX_OK) free(runs);
    }
    free(s);
    return 0;
}
