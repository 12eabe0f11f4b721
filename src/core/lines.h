// lines: a text file read one line at a time with its line number: the loop behind the line-oriented
// readers (ladder specs, mixture specs, schedule files, metrics.jsonl, imported tables, the public-data
// CSVs, the ladder's status). Not responsible for opening the file (each caller says in its own words why
// it cannot) or for what a line means.
#ifndef SEXTANT_CORE_LINES_H
#define SEXTANT_CORE_LINES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f;
    char *line;    // the current line, its '\n' kept (a partial last line has none)
    size_t len;    // bytes in line
    size_t no;     // 1-based number of the current line
    size_t cap;
} line_reader;

// Reads from f, which line_reader_close closes (f may be NULL: no lines).
void line_reader_init(line_reader *r, FILE *f);
// The next line into r->line, r->len and r->no; false at the end of the file.
bool line_reader_next(line_reader *r);
// Whether the current line ends with '\n' (a writer killed mid-line leaves a partial last line).
bool line_reader_complete(const line_reader *r);
// Whether nothing follows the current line.
bool line_reader_at_end(line_reader *r);
// Cuts the current line at its first '#' (a comment) and returns it.
char *line_reader_uncomment(line_reader *r);
// Frees the buffer and closes the file.
void line_reader_close(line_reader *r);

#endif
