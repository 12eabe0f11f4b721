#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core/status.h"
#include "data/synthetic.h"

sx_status synthetic_open(const char *spec, synthetic_source *s) {
    memset(s, 0, sizeof *s);
    const char *p = spec + strlen("synthetic:");
    char *end;
    errno = 0;
    long v = strncmp(spec, "synthetic:", 10) ? 0 : strtol(p, &end, 10);
    if (v < 8 || v > (1 << 20) || errno || *end)
        return sx_fail(SX_ERR_ARG, "'%s': expected synthetic:V with 8 <= V <= 1048576", spec);
    s->vocab = (size_t)v;
    s->next = sx_alloc(s->vocab * SYNTHETIC_FANOUT * sizeof *s->next, "synthetic s.next");
    if (!s->next) return sx_fail(SX_ERR_NOMEM, "out of memory");
    rng_state r;
    rng_seed(&r, 0x5e71a7);
    for (size_t i = 0; i < s->vocab * SYNTHETIC_FANOUT; i++) s->next[i] = (int32_t)rng_below(&r, s->vocab);
    return SX_OK;
}

void synthetic_close(synthetic_source *s) {
    free(s->next);
    memset(s, 0, sizeof *s);
}

void synthetic_batch(const synthetic_source *s, rng_state *r, size_t B, size_t T, int32_t *tokens) {
    for (size_t b = 0; b < B; b++) {
        int32_t *row = tokens + b * (T + 1);
        row[0] = (int32_t)rng_below(r, s->vocab);
        for (size_t t = 1; t <= T; t++)
            row[t] = s->next[(size_t)row[t - 1] * SYNTHETIC_FANOUT + rng_below(r, SYNTHETIC_FANOUT)];
    }
}
