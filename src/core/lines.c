// lines: see lines.h.
#include <stdlib.h>
#include <string.h>
#include "core/lines.h"

void line_reader_init(line_reader *r, FILE *f) {
    memset(r, 0, sizeof *r);
    r->f = f;
}

bool line_reader_next(line_reader *r) {
    ssize_t len = r->f ? getline(&r->line, &r->cap, r->f) : -1;
    if (len <= 0) return false;
    r->len = (size_t)len;
    r->no++;
    return true;
}

bool line_reader_complete(const line_reader *r) { return r->len && r->line[r->len - 1] == '\n'; }

bool line_reader_at_end(line_reader *r) {
    int c = r->f ? fgetc(r->f) : EOF;
    if (c == EOF) return true;
    ungetc(c, r->f);
    return false;
}

char *line_reader_uncomment(line_reader *r) {
    char *hash = strchr(r->line, '#');
    if (hash) {
        *hash = 0;
        r->len = (size_t)(hash - r->line);
    }
    return r->line;
}

void line_reader_close(line_reader *r) {
    free(r->line);
    if (r->f) fclose(r->f);
    memset(r, 0, sizeof *r);
}
