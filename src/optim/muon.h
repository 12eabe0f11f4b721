// muon: the Muon update of one 2-D weight — momentum with a Nesterov look-ahead, orthogonalisation by five
// quintic Newton–Schulz iterations, shape-aware scaling, decoupled (optionally cautious) weight decay
// (docs/MODEL.md); and the bare orthogonalised direction that MuonH's hyperball steps along.
// Not responsible for: deciding which tensors use Muon, clipping, or owning state and scratch (optimizer.c).
#ifndef SEXTANT_OPTIM_MUON_H
#define SEXTANT_OPTIM_MUON_H
#include <stdbool.h>
#include <stddef.h>

// Quintic Newton–Schulz coefficients (a, b, c) and iteration count.
#define MUON_NS_A 3.4445f
#define MUON_NS_B (-4.7750f)
#define MUON_NS_C 2.0315f
#define MUON_NS_STEPS 5
#define MUON_NS_EPS 1e-7f

typedef struct {
    double lr;           // effective learning rate of this step
    double momentum;     // mu
    double weight_decay; // decoupled: p *= 1 - lr*wd
    bool cautious;       // cautious weight decay: decay only where the step and p have the same sign
} muon_step_args;

// Floats of scratch that newton_schulz5 needs for a (rows, cols) input.
size_t newton_schulz5_scratch(size_t rows, size_t cols);
// Floats of scratch that muon_update needs for a (rows, cols) weight.
size_t muon_scratch_floats(size_t rows, size_t cols);

// out (rows, cols) = NS5(u): X = u / (||u||_F + 1e-7); with r = min(rows, cols) work on the (r, max) view
// (Xᵀ when rows > cols); 5 times A = X·Xᵀ, X = a·X + (b·A + c·A·A)·X; out = X (transposed back).
// u is read, out overwritten (u and out must not overlap); scratch has newton_schulz5_scratch floats.
// Products use gemm() (threaded, in the workspace the caller bound: gemm_bind_workspace); norm and elementwise
// work are deterministic for a fixed thread count.
void newton_schulz5(const float *u, size_t rows, size_t cols, float *out, float *scratch);

// The momentum update and its orthogonalisation, from gradient g (rows, cols):
//   buf = mu·buf + (1-mu)·g (overwritten);  U = (1-mu)·g + mu·buf;  X = NS5(U).
// Returns X (rows, cols), which lives in scratch (muon_scratch_floats(rows, cols) floats) until its next use.
const float *muon_direction(const float *g, float *buf, size_t rows, size_t cols, double momentum, float *scratch);

// In place on p (rows, cols) and its momentum buf (rows, cols), from gradient g (rows, cols):
//   X = muon_direction(g, buf);  p *= 1 - lr·wd;  p -= lr·sqrt(max(1, rows/cols))·X
// Cautious: the decay factor applies only where X·p >= 0 (p before this step).
// scratch: muon_scratch_floats(rows, cols) floats.
void muon_update(float *p, const float *g, float *buf, size_t rows, size_t cols, const muon_step_args *a,
                 float *scratch);

#endif
