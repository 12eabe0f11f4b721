#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "core/status.h"
#include "dist/dist.h"
#ifdef SEXTANT_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1, g_local = 1;
static double g_timeout = 600, g_comm_s = 0;

// The launcher's world size from the environment (0 when not started by one).
static long launcher_size(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atol(v);
    }
    return getenv("PMIX_RANK") ? 2 : 0;   // PMIx without a size variable: a launcher all the same
}

static sx_status read_timeout(void) {
    const char *t = getenv("SEXTANT_DIST_TIMEOUT");
    if (!t || !*t) return SX_OK;
    char *end;
    double v = strtod(t, &end);
    if (*end || !(v >= 0) || !isfinite(v))
        return sx_fail(SX_ERR_ARG, "SEXTANT_DIST_TIMEOUT='%s': expected seconds (0: wait forever)", t);
    g_timeout = v;
    return SX_OK;
}

int dist_rank(void) { return g_rank; }
int dist_size(void) { return g_size; }
int dist_local_size(void) { return g_local; }
double dist_timeout(void) { return g_timeout; }
double dist_comm_seconds(void) { return g_comm_s; }

int dist_cores_per_rank(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < cores) return CPU_COUNT(&set);
    long per = cores / g_local;
    return per > 0 ? (int)per : 1;
}

void dist_forget_launcher(void) {
    extern char **environ;
    const char *prefixes[] = {"OMPI_", "PMIX_", "PMI_"};
    for (bool again = true; again;) {
        again = false;
        for (char **e = environ; *e && !again; e++)
            for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes && !again; i++) {
                const char *eq = strchr(*e, '=');
                if (!eq || strncmp(*e, prefixes[i], strlen(prefixes[i]))) continue;
                char name[256];
                snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
                unsetenv(name);
                again = true;   // environ changed under us: start over
            }
    }
}

// The collectives of one flight: requests started so far (n of cap), the floats each sums (0 once it has
// been counted as done), and the first error of a sum that could not start.
struct dist_flight {
    size_t cap, n, floats, done;
    sx_status st;
    size_t *len;
#ifdef SEXTANT_MPI
    MPI_Request *req;
#endif
};

dist_flight *dist_flight_new(size_t max_sums) {
    dist_flight *f = sx_calloc(sizeof *f, "dist flight");
    if (f) f->len = sx_calloc_n(max_sums ? max_sums : 1, sizeof *f->len, "dist flight sizes");
#ifdef SEXTANT_MPI
    if (f && f->len) f->req = sx_calloc_n(max_sums ? max_sums : 1, sizeof *f->req, "dist flight requests");
    if (f && !f->req) { dist_flight_free(f); return NULL; }
#endif
    if (f && !f->len) { dist_flight_free(f); return NULL; }
    f->cap = max_sums;
    return f;
}

void dist_flight_free(dist_flight *f) {
    if (!f) return;
    free(f->len);
#ifdef SEXTANT_MPI
    free(f->req);
#endif
    free(f);
}

#ifndef SEXTANT_MPI

sx_status dist_init(void) {
    if (launcher_size() > 1)
        return sx_fail(SX_ERR_ARG, "this sextant was built without MPI; install libopenmpi-dev and rebuild "
                       "(make clean && make) to run it under mpirun");
    return read_timeout();
}
void dist_finalize(void) {}
sx_status dist_allreduce_sum(float *x, size_t n) { return SX_OK; }
sx_status dist_allreduce_sum_f64(double *x, size_t n) { return SX_OK; }
sx_status dist_broadcast(void *buf, size_t bytes, int root) { return SX_OK; }
sx_status dist_agree(sx_status st) { return st; }
sx_status dist_check_identical(const void *buf, size_t bytes, const char *what) { return SX_OK; }
sx_status dist_flight_allreduce(dist_flight *f, float *x, size_t n) { return SX_OK; }
size_t dist_flight_poke(dist_flight *f) { return 0; }
sx_status dist_flight_wait(dist_flight *f) { return SX_OK; }
sx_status dist_allgather_ranges(float *x, const size_t *offsets) { return SX_OK; }
sx_status dist_gather_ranges(const float *mine, float *all, const size_t *offsets, int root) {
    if (all != mine) memcpy(all, mine, offsets[1] * sizeof *all);   // one rank owns everything
    return SX_OK;
}
sx_status dist_scatter_ranges(const float *all, float *mine, const size_t *offsets, int root) {
    if (all != mine) memcpy(mine, all, offsets[1] * sizeof *mine);
    return SX_OK;
}

#else

static bool g_mpi, g_broken;   // MPI initialised; a collective failed (the group cannot finish cleanly)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

sx_status dist_init(void) {
    sx_status st = read_timeout();
    if (st || launcher_size() == 0) return st;
    int provided;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return sx_fail(SX_ERR_IO, "MPI_Init failed (started by mpirun?)");
    g_mpi = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &g_local);
    MPI_Comm_free(&local);
    return SX_OK;
}

// Completes the n requests, polling so that a missing rank turns into an error after g_timeout seconds
// (timeout_s < 0: use g_timeout; 0: forever). Spins for the first millisecond (collectives on one machine
// take microseconds), then sleeps between polls so a waiting rank leaves the cores to the others.
static sx_status wait_requests(int n, MPI_Request *req, const char *what, double timeout_s) {
    double t0 = now(), limit = timeout_s < 0 ? g_timeout : timeout_s;
    for (unsigned long polls = 0;; polls++) {
        int done = 0, rc = MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            g_broken = true;
            return sx_fail(SX_ERR_IO, "rank %d: %s failed: %s (did another rank die?)", g_rank, what, msg);
        }
        if (done) break;
        if ((polls & 63) == 0) {
            double waited = now() - t0;
            if (limit > 0 && waited > limit) {
                g_broken = true;
                return sx_fail(SX_ERR_IO, "rank %d: no answer from the other ranks for %.0f s in %s; a rank died or "
                               "hangs (SEXTANT_DIST_TIMEOUT=%g)", g_rank, waited, what, limit);
            }
            if (waited > 1e-3) {
                struct timespec ts = {0, waited > 0.1 ? 1000000 : 50000};
                nanosleep(&ts, NULL);
            }
        }
    }
    g_comm_s += now() - t0;
    return SX_OK;
}

void dist_finalize(void) {
    if (!g_mpi) return;
    if (g_broken) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS || wait_requests(1, &req, "the final barrier", 0))
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
}

static sx_status not_started(const char *what) {
    g_broken = true;
    return sx_fail(SX_ERR_IO, "rank %d: %s could not start", g_rank, what);
}

// Starts x (n elements) <- op over ranks in place, in pieces of at most DIST_BUCKET elements: req[0..pieces).
static sx_status start_allreduce(void *x, size_t n, MPI_Datatype type, size_t elem, MPI_Op op, MPI_Request *req,
                                 const char *what) {
    for (size_t off = 0, b = 0; off < n; off += DIST_BUCKET, b++) {
        size_t len = n - off < DIST_BUCKET ? n - off : DIST_BUCKET;
        if (MPI_Iallreduce(MPI_IN_PLACE, (char *)x + off * elem, (int)len, type, op, MPI_COMM_WORLD, &req[b]) != MPI_SUCCESS)
            return not_started(what);
    }
    return SX_OK;
}

static size_t pieces(size_t n) { return (n + DIST_BUCKET - 1) / DIST_BUCKET; }

static sx_status allreduce(void *x, size_t n, MPI_Datatype type, size_t elem, MPI_Op op, const char *what) {
    if (g_size == 1 || n == 0) return SX_OK;
    MPI_Request *req = sx_alloc(pieces(n) * sizeof *req, "dist req");
    if (!req) return sx_fail(SX_ERR_NOMEM, "out of memory");
    sx_status st = start_allreduce(x, n, type, elem, op, req, what);
    if (!st) st = wait_requests((int)pieces(n), req, what, -1);
    free(req);
    return st;
}

sx_status dist_flight_allreduce(dist_flight *f, float *x, size_t n) {
    if (g_size == 1 || n == 0 || f->st) return f->st;
    SX_CHECK(f->n + pieces(n) <= f->cap, "dist_flight_allreduce: more sums than the flight was made for");
    f->st = start_allreduce(x, n, MPI_FLOAT, sizeof *x, MPI_SUM, f->req + f->n, "the all-reduce");
    for (size_t off = 0; off < n && !f->st; off += DIST_BUCKET)
        f->len[f->n++] = n - off < DIST_BUCKET ? n - off : DIST_BUCKET;
    f->floats += n;
    return f->st;
}

size_t dist_flight_poke(dist_flight *f) {
    for (size_t i = 0; i < f->n && !f->st; i++) {
        int flag = 0;
        if (!f->len[i]) continue;
        if (MPI_Test(&f->req[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;   // dist_flight_wait says why
        if (flag) f->done += f->len[i], f->len[i] = 0;
    }
    return f->done;
}

sx_status dist_flight_wait(dist_flight *f) {
    sx_status st = f->st ? f->st : f->n ? wait_requests((int)f->n, f->req, "the all-reduce", -1) : SX_OK;
    f->n = f->floats = f->done = 0;
    f->st = SX_OK;
    return st;
}

// MPI's int counts and displacements of the ranges offsets[0..P] (SX_ERR_ARG beyond 2^31 − 1 floats).
static sx_status range_counts(const size_t *offsets, int *counts, int *displs, const char *what) {
    if (offsets[g_size] > INT_MAX)
        return sx_fail(SX_ERR_ARG, "%s: %zu floats, more than MPI's counts reach (2^31 - 1)", what, offsets[g_size]);
    for (int r = 0; r < g_size; r++) {
        SX_CHECK(offsets[r] <= offsets[r + 1], "dist ranges: offsets must not decrease");
        counts[r] = (int)(offsets[r + 1] - offsets[r]);
        displs[r] = (int)offsets[r];
    }
    return SX_OK;
}

// One of the three range collectives (0: all-gather in place into x; 1: gather mine into root's all; 2: scatter
// root's all into mine), waited for.
static sx_status ranges(int kind, float *mine, float *all, const size_t *offsets, int root, const char *what) {
    if (g_size == 1) return SX_OK;
    int *counts = sx_alloc(2 * (size_t)g_size * sizeof *counts, "dist counts"), *displs = counts + g_size;
    if (!counts) return sx_fail(SX_ERR_NOMEM, "out of memory");
    sx_status st = range_counts(offsets, counts, displs, what);
    MPI_Request req;
    int rc = MPI_SUCCESS;
    if (!st && kind == 0)
        rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_FLOAT, MPI_COMM_WORLD, &req);
    if (!st && kind == 1)
        rc = MPI_Igatherv(mine, counts[g_rank], MPI_FLOAT, all, counts, displs, MPI_FLOAT, root, MPI_COMM_WORLD, &req);
    if (!st && kind == 2)
        rc = MPI_Iscatterv(all, counts, displs, MPI_FLOAT, mine, counts[g_rank], MPI_FLOAT, root, MPI_COMM_WORLD, &req);
    if (!st) st = rc == MPI_SUCCESS ? wait_requests(1, &req, what, -1) : not_started(what);
    free(counts);
    return st;
}

sx_status dist_allgather_ranges(float *x, const size_t *offsets) {
    return ranges(0, NULL, x, offsets, 0, "the all-gather of the parameters");
}
sx_status dist_gather_ranges(const float *mine, float *all, const size_t *offsets, int root) {
    return ranges(1, (float *)mine, all, offsets, root, "the gather of the optimizer state");
}
sx_status dist_scatter_ranges(const float *all, float *mine, const size_t *offsets, int root) {
    return ranges(2, mine, (float *)all, offsets, root, "the scatter of the optimizer state");
}

sx_status dist_allreduce_sum(float *x, size_t n) { return allreduce(x, n, MPI_FLOAT, sizeof *x, MPI_SUM, "the all-reduce"); }
sx_status dist_allreduce_sum_f64(double *x, size_t n) {
    return allreduce(x, n, MPI_DOUBLE, sizeof *x, MPI_SUM, "the all-reduce");
}

sx_status dist_broadcast(void *buf, size_t bytes, int root) {
    if (g_size == 1) return SX_OK;
    size_t nb = (bytes + DIST_BUCKET - 1) / DIST_BUCKET;
    for (size_t b = 0; b < nb; b++) {
        size_t off = b * DIST_BUCKET, len = bytes - off < DIST_BUCKET ? bytes - off : DIST_BUCKET;
        MPI_Request req;
        if (MPI_Ibcast((char *)buf + off, (int)len, MPI_BYTE, root, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
            g_broken = true;
            return sx_fail(SX_ERR_IO, "rank %d: the broadcast could not start", g_rank);
        }
        sx_status st = wait_requests(1, &req, "the broadcast", -1);
        if (st) return st;
    }
    return SX_OK;
}

sx_status dist_agree(sx_status st) {
    if (g_size == 1) return st;
    int mine = st ? g_rank : g_size, first;
    MPI_Request req;
    if (MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req) != MPI_SUCCESS) {
        g_broken = true;
        return sx_fail(SX_ERR_IO, "rank %d: the error check could not start", g_rank);
    }
    sx_status ws = wait_requests(1, &req, "the error check", -1);
    if (ws) return ws;
    if (first == g_size) return SX_OK;
    struct { int code; char msg[500]; } e = {(int)st, ""};
    if (g_rank == first) snprintf(e.msg, sizeof e.msg, "%s", sx_last_error());
    if ((ws = dist_broadcast(&e, sizeof e, first))) return ws;
    if (g_rank == first) return st;
    return sx_fail((sx_status)e.code, "rank %d failed: %s", first, e.msg);
}

sx_status dist_check_identical(const void *buf, size_t bytes, const char *what) {
    if (g_size == 1) return SX_OK;
    uint64_t crc = crc32_z(0, buf, bytes), v[2] = {crc, ~crc};
    sx_status st = allreduce(v, 2, MPI_UINT64_T, sizeof *v, MPI_MAX, "the consistency check");
    if (st) return st;
    if (v[0] != ~v[1])
        return sx_fail(SX_ERR_MISMATCH, "rank %d: the %s differ between ranks (crc32 here %08llx); the ranks "
                       "have diverged", g_rank, what, (unsigned long long)crc);
    return SX_OK;
}

#endif
