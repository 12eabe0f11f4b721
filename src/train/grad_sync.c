// grad_sync: see grad_sync.h.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "train/grad_sync.h"

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Floats of tensor i in the gradient block, with the padding up to the next tensor (zeros, summed along so
// that neighbours merge into one run).
static size_t padded_floats(const param_table *t, size_t i) {
    return (i + 1 < t->n ? t->v[i + 1].offset : t->total) - t->v[i].offset;
}

static int by_offset(const void *a, const void *b) {
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

// Bucket b holds the tensors order[from, to): its runs are their gradients sorted by offset, neighbours merged.
static void add_bucket(grad_sync *s, const size_t *order, size_t from, size_t to, size_t *runs, size_t *scratch) {
    const param_table *t = &s->m->table;
    memcpy(scratch, order + from, (to - from) * sizeof *scratch);
    qsort(scratch, to - from, sizeof *scratch, by_offset);
    grad_bucket *b = &s->buckets[s->n_buckets++];
    *b = (grad_bucket){.end = to, .first_run = *runs};
    for (size_t i = 0; i < to - from; i++) {
        size_t off = t->v[scratch[i]].offset, len = padded_floats(t, scratch[i]);
        if (b->n_runs && s->run_off[*runs - 1] + s->run_len[*runs - 1] == off) {
            s->run_len[*runs - 1] += len;
            continue;
        }
        s->run_off[*runs] = off;
        s->run_len[(*runs)++] = len;
        b->n_runs++;
    }
}

static void start_ready(grad_sync *s, size_t final_tensors) {
    for (; s->next < s->n_buckets && s->buckets[s->next].end <= final_tensors; s->next++) {
        const grad_bucket *b = &s->buckets[s->next];
        for (size_t r = b->first_run; r < b->first_run + b->n_runs; r++)
            dist_flight_allreduce(s->flight, s->m->grads + s->run_off[r], s->run_len[r]);   // errors: at the wait
    }
}

static void on_ready(void *ctx, size_t stage) {
    grad_sync *s = ctx;
    start_ready(s, s->stage_end[stage]);
    dist_flight_poke(s->flight);   // moves the sums already started on while the backward goes on
}

sx_status grad_sync_init(grad_sync *s, model *m, size_t bucket_floats) {
    memset(s, 0, sizeof *s);
    s->m = m;
    s->floats_total = (double)m->table.total;
    if (!bucket_floats) return SX_OK;
    const size_t n = m->table.n;
    size_t *order = sx_calloc_n(n, sizeof *order, "grad_sync order"), *scratch = sx_calloc_n(n, sizeof *scratch, "grad_sync scratch");
    s->stage_end = sx_calloc_n(MODEL_GRAD_STAGES(m), sizeof *s->stage_end, "grad_sync stages");
    s->buckets = sx_calloc_n(n, sizeof *s->buckets, "grad_sync buckets");
    s->run_off = sx_calloc_n(n, sizeof *s->run_off, "grad_sync runs");
    s->run_len = sx_calloc_n(n, sizeof *s->run_len, "grad_sync runs");
    sx_status st = order && scratch && s->stage_end && s->buckets && s->run_off && s->run_len ? SX_OK : SX_ERR_NOMEM;
    if (!st) {
        model_grad_stages(m, order, s->stage_end);
        size_t from = 0, floats = 0, runs = 0;
        for (size_t i = 0; i < n; i++) {
            floats += padded_floats(&m->table, order[i]);
            if (floats >= bucket_floats || i + 1 == n) {
                add_bucket(s, order, from, i + 1, &runs, scratch);
                from = i + 1;
                floats = 0;
            }
        }
        size_t sums = 0;   // dist_flight splits runs longer than DIST_BUCKET
        for (size_t r = 0; r < runs; r++) sums += (s->run_len[r] + DIST_BUCKET - 1) / DIST_BUCKET;
        if (!(s->flight = dist_flight_new(sums))) st = SX_ERR_NOMEM;
    }
    free(order);
    free(scratch);
    if (st) grad_sync_free(s);
    return st;   // sx_alloc said what
}

void grad_sync_free(grad_sync *s) {
    dist_flight_free(s->flight);
    free(s->buckets);
    free(s->run_off);
    free(s->run_len);
    free(s->stage_end);
    memset(s, 0, sizeof *s);
}

void grad_sync_arm(grad_sync *s) {
    if (!s->n_buckets) return;
    s->hook = (model_grad_hook){.ctx = s, .ready = on_ready};
    s->m->grad_hook = &s->hook;
}

sx_status grad_sync_finish(grad_sync *s) {
    double t0 = seconds();
    sx_status st;
    if (s->n_buckets) {
        s->m->grad_hook = NULL;
        start_ready(s, s->m->table.n);
        s->floats_early += (double)dist_flight_poke(s->flight);
        st = dist_flight_wait(s->flight);
        s->next = 0;
    } else {
        st = dist_allreduce_sum(s->m->grads, s->m->table.total);
    }
    s->wait_s += seconds() - t0;
    s->steps++;
    return st;
}
