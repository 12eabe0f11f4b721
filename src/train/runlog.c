#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/fsutil.h"
#include "core/lines.h"
#include "train/runlog.h"

double runlog_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void runlog_format_duration(double s, char *buf, size_t n) {
    if (!(s >= 0)) s = 0;
    long t = lround(s);
    if (s < 59.95) snprintf(buf, n, "%.1fs", s);   // a short run says how short ("0.4s"), not "0m00s"
    else if (t < 3600) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

sx_status runlog_copy_steps(const char *src, const char *dst, long last, long *last_kept) {
    *last_kept = 0;
    FILE *in = fopen(src, "r");
    if (!in) return strcmp(src, dst) ? sx_fail(SX_ERR_IO, "%s: cannot open (%s)", src, strerror(errno)) : SX_OK;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", dst);
    FILE *out = fopen(tmp, "w");
    if (!out) { fclose(in); return sx_fail(SX_ERR_IO, "%s: cannot create (%s)", tmp, strerror(errno)); }
    line_reader lines;
    line_reader_init(&lines, in);
    while (line_reader_next(&lines)) {
        if (!line_reader_complete(&lines)) break;   // a partial last line from a killed run
        const char *line = lines.line;
        json_t *j = json_loads(line, 0, NULL);
        long step = j ? (long)json_integer_value(json_object_get(j, "step")) : last + 1;
        bool event = j && json_object_get(j, "event");
        json_decref(j);
        if (step > last) continue;
        fputs(line, out);
        if (!event && step > *last_kept) *last_kept = step;
    }
    line_reader_close(&lines);
    // Durable before it replaces the log: the checkpoint it must agree with already is.
    if (fflush(out) != 0 || fsync(fileno(out)) != 0 || fclose(out) != 0 || rename(tmp, dst) != 0)
        return sx_fail(SX_ERR_IO, "%s: cannot write (%s)", dst, strerror(errno));
    return SX_OK;
}

sx_status runlog_open(runlog *r, const char *dir, long keep_until_step, bool progress) {
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s/metrics.jsonl", dir);
    if (keep_until_step >= 0) {
        long kept;
        sx_status s = runlog_copy_steps(r->path, r->path, keep_until_step, &kept);
        if (s) return s;
        // A log behind its checkpoint (flushed but lost in an OS crash, or cut by hand) would leave a permanent
        // gap that `sextant fit` rejects later: refuse now, before anything is appended.
        if (kept < keep_until_step)
            return sx_fail(SX_ERR_FORMAT, "%s ends at step %ld but the checkpoint is at step %ld: the log lost steps "
                           "%ld to %ld, and resuming would leave that gap in the run's curve. Restart the run in a new "
                           "directory", r->path, kept, keep_until_step, kept + 1, keep_until_step);
    }
    r->metrics = fopen(r->path, keep_until_step >= 0 ? "a" : "w");
    if (!r->metrics) return sx_fail(SX_ERR_IO, "%s: cannot open (%s)", r->path, strerror(errno));
    r->tty = progress && isatty(STDERR_FILENO);
    r->lines = progress && !r->tty;
    const char *every = getenv("SEXTANT_PROGRESS_EVERY");
    r->every = every && atof(every) >= 0 ? atof(every) : RUNLOG_PROGRESS_EVERY;   // 0: every step
    r->start = r->last = runlog_now();
    return SX_OK;
}

sx_status runlog_write(runlog *r, json_t *line) {
    char *s = json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(line);
    if (!s) return sx_fail(SX_ERR_NOMEM, "cannot format a metrics line");
    int bad = fprintf(r->metrics, "%s\n", s) < 0 || fflush(r->metrics) != 0;
    free(s);
    return bad ? sx_fail(SX_ERR_IO, "%s: write failed (%s)", r->path, strerror(errno)) : SX_OK;
}

sx_status runlog_sync(runlog *r) {
    if (fflush(r->metrics) != 0 || fsync(fileno(r->metrics)) != 0)
        return sx_fail(SX_ERR_IO, "%s: fsync failed (%s)", r->path, strerror(errno));
    return SX_OK;
}

void runlog_close(runlog *r) {
    if (r->metrics) fclose(r->metrics);
    r->metrics = NULL;
}

sx_status runlog_write_json(const char *dir, const char *name, json_t *doc) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return fs_write_json(path, doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
}

void runlog_progress(runlog *r, const char *text, bool force) {
    if (r->tty) {
        fprintf(stderr, "\r\033[K%s", text);
        fflush(stderr);
        return;
    }
    double now = runlog_now();
    if (!r->lines || (!force && now - r->last < r->every)) return;
    r->last = now;
    fprintf(stderr, "%s\n", text);
    fflush(stderr);
}

void runlog_progress_end(const runlog *r) {
    if (r->tty) fputc('\n', stderr);
}
