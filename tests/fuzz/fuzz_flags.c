// libFuzzer target: flags_parse with a table of every flag type; the input is NUL-separated arguments.
#include "core/flags.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n > 4096) return 0;
    char *buf = malloc(n + 1), *argv[64];
    memcpy(buf, data, n);
    buf[n] = 0;
    int argc = 0;
    for (size_t i = 0; i <= n && argc < 64;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    const char *s, *pos[2];
    long l;
    double d;
    bool b;
    const flag_def defs[] = {
        {"name", FLAG_STR, &s, "x", "a string"}, {"steps", FLAG_INT, &l, "3", "an integer"},
        {"lr", FLAG_DOUBLE, &d, "1e-3", "a number"}, {"quiet", FLAG_BOOL, &b, "false", "a switch"},
    };
    int npos;
    bool help;
    bool given[4] = {0};
    if (flags_parse(defs, 4, argc, argv, pos, 2, &npos, &help, given) == SX_OK) json_decref(flags_to_json(defs, 4));
    free(buf);
    return 0;
}
