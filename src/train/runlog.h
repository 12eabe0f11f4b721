// runlog: what a training run writes besides checkpoints — metrics.jsonl (one JSON object per line,
// flushed as written), config.json, the DONE marker, and the live progress line on a terminal.
// Not responsible for deciding what to log.
#ifndef SEXTANT_TRAIN_RUNLOG_H
#define SEXTANT_TRAIN_RUNLOG_H
#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>
#include "core/status.h"

typedef struct {
    FILE *metrics;
    char path[4096]; // of metrics.jsonl, for messages
    bool tty;        // show the progress line in place
    bool lines;      // stderr is not a terminal: a progress line every `every` seconds instead
    double every, last;
    double start;    // wall clock at open (s)
} runlog;

// Seconds between progress lines when stderr is not a terminal (SEXTANT_PROGRESS_EVERY overrides; 0: every step).
#define RUNLOG_PROGRESS_EVERY 30.0

// Opens dir/metrics.jsonl for appending. When keep_until_step >= 0 the existing file is first cut to the
// lines with "step" <= keep_until_step (a resumed run rewrites what came after its checkpoint), and must
// reach that step (SX_ERR_FORMAT otherwise: the log lost lines its checkpoint had); < 0 starts a fresh file.
sx_status runlog_open(runlog *r, const char *dir, long keep_until_step, bool progress);
// Copies the complete lines of the metrics file src whose "step" is <= last into dst (written whole and
// fsync'd, then renamed into place; src == dst cuts a file in place, and a missing src is then not an
// error). *last_kept: the last step record copied (0 if none; event lines do not count).
sx_status runlog_copy_steps(const char *src, const char *dst, long last, long *last_kept);
// Appends one line (steals the reference to line); flushed, not fsync'd.
sx_status runlog_write(runlog *r, json_t *line);
// Makes what was written durable (fsync): before a checkpoint, so the log never falls behind it.
sx_status runlog_sync(runlog *r);
void runlog_close(runlog *r);
// Writes dir/name atomically (temp + rename) with a JSON document (borrowed).
sx_status runlog_write_json(const char *dir, const char *name, json_t *doc);
// Prints "\r<text>" on stderr when the log is on a terminal; otherwise (a log file, a pipe) "<text>\n" when
// `every` seconds have passed since the last such line, or when force is set (the last step).
// runlog_progress_end finishes the terminal's line.
void runlog_progress(runlog *r, const char *text, bool force);
void runlog_progress_end(const runlog *r);
double runlog_now(void);
// A duration for people: "0.4s", "42.0s", "4m07s", "1h02m".
void runlog_format_duration(double seconds, char *buf, size_t n);

#endif
