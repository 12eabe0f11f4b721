// optimizer: one training step over a list of parameter tensors — global-norm gradient clipping, then
// AdamW, Muon, or a hyperball step along the Adam or Muon direction (AdamH, MuonH) per tensor according to
// its group (docs/MODEL.md "Optimizers" is the contract) — and the optimizer state (Adam moments, Muon
// momentum, hyperball radii, step counter) as named arrays for checkpoints.
// Not responsible for: computing or accumulating gradients (the trainer sums micro-batch gradients and
// scales them to the mean before calling optimizer_step), the LR schedule (optim/schedule.h; the caller
// passes the multiplier), or which tensor is in which group (the model's parameter table says so).
// Of src/model it sees only the parameter records (param_ref, param_group in model/params.h).
#ifndef SEXTANT_OPTIM_OPTIMIZER_H
#define SEXTANT_OPTIM_OPTIMIZER_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "kernels/gemm.h"
#include "model/params.h"

// The kind says how the MATRIX group is updated; every other group takes AdamW under every kind.
typedef enum { OPT_ADAMW = 0, OPT_MUON = 1, OPT_ADAMH = 2, OPT_MUONH = 3 } optimizer_kind;

typedef struct {
    optimizer_kind kind;     // OPT_ADAMW: AdamW for everything; OPT_MUON: Muon for MATRIX, AdamW for the rest;
                             // OPT_ADAMH / OPT_MUONH: a hyperball step along the Adam / Muon direction for MATRIX
    float lr;                // AdamW base learning rate (multiplied by the schedule's lr_mult each step)
    float beta1, beta2, eps; // AdamW moments
    float weight_decay;      // AdamW decoupled weight decay: p *= 1 - lr*wd (MATRIX, HEAD; EMBED if asked)
    bool decay_embed;        // also decay the EMBED group under AdamW
    float muon_lr;           // Muon base learning rate (also multiplied by lr_mult)
    float muon_momentum;     // mu in B = mu*B + (1-mu)*G
    float muon_weight_decay; // Muon decoupled weight decay: p *= 1 - muon_lr*wd
    float hyper_lr;          // AdamH/MuonH: the fraction of each matrix's norm it moves per step (x lr_mult)
    bool cautious_wd;        // AdamW and Muon decay only where the update and the weight have the same sign
    float clip_norm;         // global gradient-norm clip; 0 disables clipping
} optimizer_config;

// Defaults (also `sextant train`'s, train/options.h): AdamW lr 3e-3, betas (0.9, 0.95), eps 1e-8, wd 0.1,
// embeddings not decayed; Muon lr 0.02, momentum 0.95, wd 0; hyperball lr 0.02; cautious decay off; clip 1.0;
// kind OPT_ADAMW. Overwrites *cfg.
void optimizer_config_default(optimizer_config *cfg);
// Checks ranges (lr >= 0, 0 <= beta < 1, eps > 0, wd >= 0, 0 <= momentum < 1, 0 <= hyper_lr < 1, clip >= 0,
// all finite);
// SX_ERR_ARG naming the offending setting.
sx_status optimizer_config_check(const optimizer_config *cfg);
// Whether an optimizer of this kind reads the setting (optimizer_config_to_json's name): muon_lr and
// muon_weight_decay only muon, muon_momentum muon and muonh, hyper_lr adamh and muonh; every other setting
// every kind (AdamW updates the tensors outside the hidden matrices under each).
bool optimizer_kind_uses(optimizer_kind kind, const char *setting);
// SX_ERR_ARG when a setting the kind does not read differs from its default: set, it would be ignored
// ("optimizer setting muon_lr = 0.05 is for muon; adamw does not use it").
sx_status optimizer_config_check_used(const optimizer_config *cfg);
// Sets the settings the kind does not read to their defaults (a ladder scales every LR with width, whatever
// the kind).
void optimizer_config_reset_unused(optimizer_config *cfg);
// "adamw" | "muon" | "adamh" | "muonh".
sx_status optimizer_kind_parse(const char *name, optimizer_kind *out);
const char *optimizer_kind_name(optimizer_kind kind);
// A new JSON object with every setting (for the resolved-config echo). Caller owns the reference.
json_t *optimizer_config_to_json(const optimizer_config *cfg);

// How params[i] is updated, decided once at init.
typedef struct {
    bool muon;            // Muon direction (momentum in m) or Adam's (moments in m, v)
    bool decay;           // weight decay applies (never on a hyperball tensor)
    float *m, *v;         // state inside optimizer.state; v is NULL for Muon tensors
    float *radius;        // hyperball tensors: their sphere's radius (1 float of state, the norm at init); else NULL
} optimizer_slot;

// One named state array, for checkpoints: "adam_m.<param>", "adam_v.<param>", "muon_b.<param>" or
// "hyper_r.<param>".
// data points into optimizer.state (writable: restoring a checkpoint copies into it).
typedef struct {
    char *name;
    float *data;
    size_t numel;
} optimizer_state_array;

typedef struct {
    optimizer_config cfg;
    param_ref *params;                // (n_params) copy of the caller's list (tensors stay the caller's)
    optimizer_slot *slots;            // (n_params) how params[i] is updated
    size_t n_params;
    float *state;                     // one contiguous allocation holding every m, v, momentum and radius
    size_t state_floats;
    optimizer_state_array *arrays;    // (n_arrays) in parameter order: m, then v, then the radius
    size_t n_arrays;
    float *scratch;                   // Muon / hyperball workspace, sized for the largest such tensor (NULL if none)
    gemm_workspace gemm_work;         // GEMM's packing workspace for Muon's products (bound during a step)
    long t;                           // completed steps; bias correction of step k uses t = k
} optimizer;

// Validates cfg, copies the parameter list (the tensors themselves stay the caller's) and allocates
// zeroed state; t = 0; each hyperball tensor's radius = its Frobenius norm now (SX_ERR_ARG naming a matrix
// whose norm is 0: a hyperball cannot move it). On error nothing needs freeing. params: (n) records, names
// unique.
sx_status optimizer_init(optimizer *o, const optimizer_config *cfg, const param_ref *params, size_t n);
// Frees everything optimizer_init allocated; safe on a zeroed struct.
void optimizer_free(optimizer *o);

// ||all grads||_2, summed per tensor in double in a fixed order (the result does not depend on the
// number of threads).
double grad_global_norm(const param_ref *params, size_t n);
// If max_norm > 0 and the norm exceeds it, scales every grad in place by max_norm / (norm + 1e-6).
// Returns the pre-clip norm.
double grad_clip_global_norm(const param_ref *params, size_t n, double max_norm);
// The same scaling with the norm given (of these gradients or of a larger set that holds them).
void grad_clip_to(const param_ref *params, size_t n, double norm, double max_norm);
// Floats of state optimizer_init allocates for these tensors under cfg (Adam's two moments or Muon's
// momentum per element, one radius per hyperball tensor), laid out tensor after tensor: the state of
// params[a..b) is the range [floats(params, a), floats(params, b)) of the whole list's.
size_t optimizer_state_floats(const optimizer_config *cfg, const param_ref *params, size_t n);

// One step: clip (if clip_norm > 0), t += 1, then update every tensor in place with learning rates
// cfg.lr * lr_mult (AdamW), cfg.muon_lr * lr_mult (Muon) and cfg.hyper_lr * lr_mult (hyperball). Gradients may be scaled by the clip; they are
// not zeroed. Returns the pre-clip gradient norm. If that norm is not finite, nothing is changed (no clip,
// no update, t unchanged) and the norm is returned so the caller can stop with a message.
double optimizer_step(optimizer *o, double lr_mult);
// optimizer_step with the pre-clip gradient norm given: that of a larger list of tensors of which o updates a
// contiguous part (a shard of the optimizer state, ZeRO-1). The shards of a list, each stepped with the
// whole list's grad_global_norm, update every tensor exactly as one optimizer over the list does.
double optimizer_step_with_norm(optimizer *o, double lr_mult, double norm);

// Deterministic sum of squares of x (n), accumulated in double over a fixed partition of the array, so
// the value is the same for any thread count. Used for the gradient norm and Muon's Frobenius norm.
double optim_sumsq(const float *x, size_t n);

// The state array called name, or NULL.
optimizer_state_array *optimizer_state_find(optimizer *o, const char *name);

#endif
