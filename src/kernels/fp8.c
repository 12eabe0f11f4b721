#include <math.h>
#include "kernels/fp8.h"

float e4m3_decode(uint8_t code) {
    int e = (code >> 3) & 15, m = code & 7;
    float v = e == 15 && m == 7 ? NAN : e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
    return code & 0x80 ? -v : v;
}

// Round to the nearest multiple of the e4m3 quantum at |x|'s binade: 2^(E−3) for normals (E = ⌊log2 |x|⌋ >= −6),
// 2^-9 below 2^-6 (subnormals). |x|/q is exact (q a power of two) and rintf rounds half to even, which is the
// even code: the code's last bit is the mantissa's.
float e4m3_round(float x) {
    if (isnan(x)) return x;
    float a = fabsf(x);
    if (a >= E4M3_MAX) return copysignf(E4M3_MAX, x);
    int E;
    frexpf(a, &E);   // a = f·2^E, f in [0.5, 1): ⌊log2 a⌋ = E − 1
    int qexp = (E - 1 < -6 ? -6 : E - 1) - 3;
    float r = ldexpf(rintf(ldexpf(a, -qexp)), qexp);
    return copysignf(r > E4M3_MAX ? E4M3_MAX : r, x);
}

uint8_t e4m3_encode(float x) {
    if (isnan(x)) return 0x7F;
    float r = fabsf(e4m3_round(x));
    uint8_t code = 0;
    if (r > 0) {
        int E;
        frexpf(r, &E);
        int e = E - 1 + 7;   // biased exponent
        code = e < 1 ? (uint8_t)ldexpf(r, 9) : (uint8_t)(e << 3 | ((int)ldexpf(r, 3 - (E - 1)) - 8));
    }
    return (uint8_t)(signbit(x) ? code | 0x80 : code);
}

float fp8_amax(size_t n, const float *x) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));   // fmaxf ignores a NaN operand
    return m;
}

float fp8_scale(float amax) {
    if (!(amax > 0) || !isfinite(amax)) return 1.0f;
    int E;
    frexpf(E4M3_MAX / amax, &E);   // 448/amax in [2^(E−1), 2^E)
    float s = ldexpf(1.0f, E - 1);
    return amax * s <= E4M3_MAX ? s : s / 2;   // guards the rounding of 448/amax
}

void fp8_fake_quant(size_t n, const float *x, float scale, float *y) {
    for (size_t i = 0; i < n; i++) y[i] = e4m3_round(x[i] * scale) / scale;
}
