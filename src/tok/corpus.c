#include <string.h>
#include "tok/corpus.h"

int corpus_next_doc(const uint8_t *text, size_t n, size_t *pos, const uint8_t **doc, size_t *len) {
    static const char delim[] = CORPUS_DELIMITER "\n";
    const size_t dl = sizeof delim - 1;
    while (*pos < n) {
        size_t start = *pos, i = start, end = n, next = n;
        // A delimiter counts only at the start of a line and followed by a newline (or the end of the text).
        while (i < n) {
            const uint8_t *hit = memmem(text + i, n - i, delim, dl - 1);
            if (!hit) break;
            size_t at = (size_t)(hit - text);
            int line_start = at == 0 || text[at - 1] == '\n';
            int line_end = at + dl - 1 == n || text[at + dl - 1] == '\n';
            if (line_start && line_end) {
                end = at;
                next = at + dl - 1 == n ? n : at + dl;
                break;
            }
            i = at + 1;
        }
        *pos = next;
        if (end > start) {
            *doc = text + start;
            *len = end - start;
            return 1;
        }
    }
    return 0;
}
