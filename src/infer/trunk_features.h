// trunk_features: what a value head reads at each position of a sequence run through a trunk (normally the
// policy's own): the final-normed hidden state (C values, the LM head's input) and TRUNK_EXTRA numbers from the
// trunk's own next-token probabilities — over the current step (the tokens since the last '\n', the '\n'
// included) the minimum and the mean log-probability of the tokens actually written, and the minimum of the
// step minima over the solution so far (the first line, ending at the first '\n', is the problem: not counted). An arithmetic slip sampled at temperature 1 is mostly a token
// the policy itself found unlikely, which the hidden state at the newline does not show.
// Keeps per-sequence state (the last position's log-probabilities, the running statistics) across calls and
// forks, so a sequence fed in pieces (beam search, one step per call) gets the features of one long call.
// Not responsible for the head (infer/value_head.h).
#ifndef SEXTANT_INFER_TRUNK_FEATURES_H
#define SEXTANT_INFER_TRUNK_FEATURES_H
#include <stdbool.h>
#include "infer/decode.h"

#define TRUNK_EXTRA 3

typedef struct {
    float *prev;               // (V) log-probabilities after the sequence's last position
    bool have_prev;
    double step_sum, step_min, path_min;
    size_t step_n, lines;      // tokens in the current step; newlines so far (the first ends the problem)
} trunk_seq;

typedef struct {
    decoder *d;                // borrowed; its cache holds the sequences
    trunk_seq *seq;            // indexed by cache sequence id
    size_t cap;
} trunk_reader;

void trunk_reader_init(trunk_reader *t, decoder *d);
void trunk_reader_free(trunk_reader *t);
// Feature width: the trunk's width + TRUNK_EXTRA.
size_t trunk_feature_dim(const trunk_reader *t);
// A new empty sequence, a fork of src (its rows shared, its statistics copied), or −1 when out of memory.
int trunk_new_seq(trunk_reader *t);
int trunk_fork(trunk_reader *t, int src);
void trunk_release(trunk_reader *t, int seq);
// Feeds n rows (as decoder_forward) and overwrites feats (n, trunk_feature_dim) with each row's features.
sx_status trunk_forward(trunk_reader *t, size_t n, const int *seq, const int32_t *tok, float *feats);

#endif
