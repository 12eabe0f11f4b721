// fp8: the OCP FP8 E4M3 number format (1 sign bit, 4 exponent bits with bias 7, 3 mantissa bits; no
// infinities; S.1111.111 is NaN; largest finite ±448, smallest normal 2^-6, smallest subnormal 2^-9),
// emulated in fp32, and the power-of-two scaling that maps a tensor into its range. Every e4m3 value is
// exactly a bf16 (and fp32) value, so an "fp8 product" here is a product of rounded operands through the
// ordinary fp32 or bf16 GEMM. Not responsible for which tensors are rounded or for the scale history
// (model/mlp.c).
#ifndef SEXTANT_FP8_H
#define SEXTANT_FP8_H
#include <stddef.h>
#include <stdint.h>

#define E4M3_MAX 448.0f

// The value of a code (NaN for 0x7F and 0xFF).
float e4m3_decode(uint8_t code);
// The nearest code to x, ties to the even code, saturating: |x| beyond 448 (infinities included) gives ±448.
// NaN gives 0x7F. The sign of zero is kept.
uint8_t e4m3_encode(float x);
// e4m3_decode(e4m3_encode(x)) without the table walk (NaN stays NaN).
float e4m3_round(float x);
// max |x_i| over n floats (0 for n = 0; NaN is ignored).
float fp8_amax(size_t n, const float *x);
// The scale for an operand of absolute maximum amax: the largest power of two s with amax·s <= 448 (1 when
// amax is 0 or not finite). Powers of two make dequantising, q/s, exact.
float fp8_scale(float amax);
// y = e4m3_round(x·scale) / scale for n floats (y may be x): the operand as the fp8 product sees it.
void fp8_fake_quant(size_t n, const float *x, float scale, float *y);
#endif
