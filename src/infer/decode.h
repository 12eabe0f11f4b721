// decode: the inference forward pass. Runs the model one position at a time per sequence against a
// kvcache, batching the rows of many sequences into each weight product, and returns next-token logits.
// Owns only the loop over layers and the cache: each layer's mixer runs its own cached decode (block.h;
// what it caches per position is its business), the FFN is the model's own module run on B = rows, T = 1.
// Reuses the model's parameters (model.p), and keeps every weight matrix the products multiply packed for the
// GEMM (packed once by decoder_init: a one-row product would otherwise pack its whole weight again), so the
// weights must not change while the decoder lives (its cache would be stale too). Not responsible for
// sampling or for training.
#ifndef SEXTANT_INFER_DECODE_H
#define SEXTANT_INFER_DECODE_H
#include <stdint.h>
#include "infer/kvcache.h"
#include "model/linear.h"
#include "model/model.h"

typedef struct {
    model *m;              // borrowed
    kvcache cache;
    size_t max_ctx;        // positions per sequence
    float *cos, *sin;      // (max_ctx, rope_dim/2)
    size_t cap_rows;       // rows the scratch below is sized for
    float *buf;            // one block of scratch, carved per call
    size_t buf_floats;
    gemm_workspace gemm_work; // GEMM's packing workspace for cap_rows rows, bound while decoder_forward runs
    linear_packed_set packed; // the weight matrices packed (into panels), bound while decoder_forward runs;
    void *panels;             // n = 0 (tests set it, for the reference) packs every weight on every product
    void *row_buf, *span_buf; // the per-call row arrays, grown as calls need (row_buf_bytes, span_buf_bytes)
    size_t row_buf_bytes, span_buf_bytes;
    double flops;          // model FLOPs spent by decoder_forward so far (model_flops_decode_token)
    size_t tokens;         // positions processed so far
} decoder;

sx_status decoder_init(decoder *d, model *m, size_t max_ctx);
void decoder_free(decoder *d);
// Processes n rows: row r appends token tok[r] at the next position of sequence seq[r]. Rows of the same
// sequence must appear in position order (a prompt can be one call). Overwrites logits (n, V) with the
// scored logits after each row (soft-capped like training), or skips the head when logits is NULL.
sx_status decoder_forward(decoder *d, size_t n, const int *seq, const int32_t *tok, float *logits);
// The same rows, overwriting feats (n, C) with the final-normed hidden states the head reads (what a value
// head on this model's trunk sees), and logits (n, V) as decoder_forward when not NULL (else the head is skipped).
sx_status decoder_forward_features(decoder *d, size_t n, const int *seq, const int32_t *tok, float *feats, float *logits);
// Prefill: feeds tokens[0..n) to seq; overwrites last_logits (V) with the logits after the last one.
sx_status decoder_prefill(decoder *d, int seq, const int32_t *tokens, size_t n, float *last_logits);

#endif
