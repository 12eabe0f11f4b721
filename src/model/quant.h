// quant: weight-only int8 inference for a loaded model. Every weight matrix (the embedding / head and the
// hidden matrices; not the 1-D gains) is rounded to int8 with one scale per output channel (row). The fp32
// parameters are overwritten with the dequantized values, so every path (embedding lookups, products taken
// on slices of a weight, the training forward's packed head) computes with exactly the weights the int8
// products use, and linear_forward reads the whole-matrix products from the int8 copy (linear_use_int8).
// Inference only: the model must not be trained afterwards. Not responsible for the kernel (kernels/int8).
#ifndef SEXTANT_MODEL_QUANT_H
#define SEXTANT_MODEL_QUANT_H
#include "model/model.h"

// Quantizes m in place and registers its int8 copy (owned by m: model_free releases it). Once per model.
sx_status model_quantize_int8(model *m);
// Unregisters and frees m's int8 copy (the fp32 parameters keep the dequantized values); model_free calls it.
void model_int8_release(model *m);
// Bytes of the int8 copy (weights and scales), for reports.
size_t model_int8_bytes(const model *m);
#endif
