// vecmath: branch-free exp and tanh written so that GCC vectorises loops calling them (inline, no libm
// calls, selects instead of branches). Internal to the kernels; not a general maths library.
// Accuracy: vm_expf is within ~2 ulp of expf on [-87.3, 88] (Cephes polynomial, Cody-Waite reduction),
// flushes to 0 below -87.3 (so exp(-inf) = 0) and saturates at exp(88) above. vm_tanhf has absolute error
// ~1e-7 (it is built from vm_expf; relative accuracy is lost only near 0, where |tanh| < 1e-3).
#ifndef SEXTANT_KERNELS_VECMATH_H
#define SEXTANT_KERNELS_VECMATH_H
#include <stdint.h>
#include <string.h>

static inline float vm_expf(float x) {
    float xc = x > 88.0f ? 88.0f : (x < -87.3f ? -87.3f : x);
    // n = round(x / ln 2) via the 1.5·2^23 trick (exact for |n| < 2^22, no rounding-mode dependence on x86).
    const float shifter = 12582912.0f;
    float t = xc * 1.44269504088896341f + shifter;
    float n = t - shifter;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t bits = (ni + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float y = p * scale;
    return x < -87.3f ? 0.0f : y;
}

static inline float vm_tanhf(float x) {
    float e = vm_expf(2.0f * x);
    return 1.0f - 2.0f / (e + 1.0f);
}

#endif
