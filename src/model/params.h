// params: the one declarative parameter table. Every tensor of a model is declared once here (name,
// shape, initialisation, optimizer group); the tensor list, checkpoint names, initialisation and optimizer
// groups are all generated from it; param_ref is the record the optimizer sees of each tensor. Not
// responsible for what the tensors compute or how they are optimised.
#ifndef SEXTANT_PARAMS_H
#define SEXTANT_PARAMS_H
#include <stddef.h>
#include <stdint.h>
#include "core/status.h"

// Optimizer groups of the table's tensors (docs/MODEL.md "Optimizers").
//   MATRIX: 2-D hidden weights (Muon under OPT_MUON; AdamW with weight decay otherwise)
//   EMBED:  token embedding (AdamW; decayed only when decay_embed)
//   GAIN:   RMSNorm gains (AdamW; never decayed)
//   HEAD:   untied output head (AdamW; decayed)
typedef enum { PGROUP_MATRIX, PGROUP_EMBED, PGROUP_GAIN, PGROUP_HEAD } param_group;

// One parameter tensor, rows x cols row-major (a 1-D gain has rows = 1). For Muon, rows is the fan-out
// (PyTorch layout (out_features, in_features)). data and grad are owned by the caller and must stay valid
// while the optimizer uses them; name is borrowed too (it is used to name the state arrays).
typedef struct {
    const char *name;
    float *data;
    float *grad;
    size_t rows, cols;
    param_group group;
} param_ref;

typedef enum { INIT_NORMAL, INIT_ZERO, INIT_ONES } param_init;

typedef struct {
    char name[48];
    size_t rows, cols;   // a 1-D tensor has rows = 1
    param_init init;
    float std;           // for INIT_NORMAL
    param_group group;
    size_t offset;       // floats from the start of the parameter block
} param_spec;

typedef struct {
    param_spec *v;
    size_t n, cap;
    size_t total;        // floats in all tensors
} param_table;

// Appends a tensor; returns its index. Sizes are checked against overflow by the caller's config limits.
sx_status param_table_add(param_table *t, const char *name, size_t rows, size_t cols, param_init init, float std,
                          param_group group);
void param_table_free(param_table *t);
// Index of the tensor with this name, or -1.
long param_table_find(const param_table *t, const char *name);
// Fills params per the table's init column from a seeded generator (deterministic for a seed).
void param_table_init_values(const param_table *t, float *params, uint64_t seed);
// The same, but each tensor draws from a generator seeded by (seed, its name) rather than from one stream in
// table order: two models that share a tensor (same name and shape) start it from the same values even when
// the tensors before it differ (paired comparisons of variants). A tensor of the same name and another
// shape shares the leading draws (row-major).
void param_table_init_by_name(const param_table *t, float *params, uint64_t seed);
// Redraws every MATRIX tensor whose init is INIT_ZERO from N(0, 1/cols) (fan-in scaling, like the model's other
// matrices), each from a generator seeded by (seed, its name); every other tensor is left as it is. For
// optimizers that keep each matrix at its initial norm (AdamH, MuonH): a zero matrix has no sphere to move on.
void param_table_init_zero_matrices(const param_table *t, float *params, uint64_t seed);

#endif
