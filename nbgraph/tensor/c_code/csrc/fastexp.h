/* exp of float64 and float32 arrays in loops the compiler vectorises (no
   library call in the loop): x = k ln2 + r with |r| <= ln2/2 (Cody-Waite: ln2
   in two parts, the first short enough that k times it is exact), exp(r) by
   a polynomial near the minimax one (1 + r + r^2/2 + r^3/6 + r^4 h(r)), and
   2^k put into the exponent bits.  Within ~1.2 ulp of the exact value (float64,
   checked against mpmath over the whole range) and ~1 ulp (float32).  Values
   outside the range where 2^k is a normal number (and NaN) are flagged by the
   loop and redone by libm's exp, so the infinities, zeros, subnormals and NaN
   are libm's.  The same element always gets the same value, whatever the
   thread count or the position in the array.  Plain C. */
#ifndef NBG_FASTEXP_H
#define NBG_FASTEXP_H
#include <math.h>
#include <string.h>
#include <stdint.h>
#ifdef __FP_FAST_FMA
#define NBG_FMA_F64(a, b, c) fma(a, b, c)
#else
#define NBG_FMA_F64(a, b, c) ((a) * (b) + (c))
#endif
#ifdef __FP_FAST_FMAF
#define NBG_FMA_F32(a, b, c) fmaf(a, b, c)
#else
#define NBG_FMA_F32(a, b, c) ((a) * (b) + (c))
#endif
#define NBG_FEXP_LO_F64 (-708.0)
#define NBG_FEXP_HI_F64 708.0
#define NBG_FEXP_LO_F32 (-87.0f)
#define NBG_FEXP_HI_F32 88.0f

/* exp(x) for x in [NBG_FEXP_LO_F64, NBG_FEXP_HI_F64].  The polynomial is
   1 + (r + (r^2 a(r) + r^4 h(r))), a(r) = 1/2 + r/6 and h of degree 7 by
   Estrin's scheme (pairs, then times r^2, then times r^4): a vectorised loop
   of this function is bound by the latency of one element's chain, so the
   chain is kept short (about 22 operations deep rather than 30); the small
   terms are summed before r and 1, so rounding stays as with Horner's rule.
   2^k is added into the exponent bits (the result is normal in this range). */
static inline double nbg_fexp_core_f64(double x) {
    const double shift = 0x1.8p52;  /* adding it rounds to an integer */
    const double kd = NBG_FMA_F64(x, 0x1.71547652b82fep0, shift);
    const double k = kd - shift;
    double r, r2, r4, h, p;
    int64_t bits, sb, pb;
    memcpy(&bits, &kd, sizeof bits);
    memcpy(&sb, &shift, sizeof sb);
    r = NBG_FMA_F64(k, -0x1.62e42feep-1, x);
    r = NBG_FMA_F64(k, -0x1.a39ef35793c76p-33, r);
    r2 = r * r;
    r4 = r2 * r2;
    h = NBG_FMA_F64(NBG_FMA_F64(NBG_FMA_F64(0x1.af236aac51d05p-26, r, 0x1.2880411bad1aap-22), r2,
                                NBG_FMA_F64(0x1.71de17e40edfep-19, r, 0x1.a019c9a5652d3p-16)),
                    r4,
                    NBG_FMA_F64(NBG_FMA_F64(0x1.a01a01a4b322fp-13, r, 0x1.6c16c1738ff55p-10), r2,
                                NBG_FMA_F64(0x1.1111111110e6ap-7, r, 0x1.5555555554cb7p-5)));
    p = 1.0 + (r + NBG_FMA_F64(r4, h, r2 * NBG_FMA_F64(r, 0x1.5555555555555p-3, 0.5)));
    memcpy(&pb, &p, sizeof pb);
    pb += (bits - sb) << 52;  /* times 2^k */
    memcpy(&p, &pb, sizeof p);
    return p;
}

/* exp(x) for x in [NBG_FEXP_LO_F32, NBG_FEXP_HI_F32]. */
static inline float nbg_fexp_core_f32(float x) {
    const float shift = 0x1.8p23f;
    const float kd = x * 0x1.715476p0f + shift;
    const float k = kd - shift;
    float r, r2, s, p, scale;
    int32_t bits, sb;
    memcpy(&bits, &kd, sizeof bits);
    memcpy(&sb, &shift, sizeof sb);
    bits = (bits - sb + 127) << 23;
    memcpy(&scale, &bits, sizeof scale);
    r = (x - k * 0x1.62e4p-1f) - k * 0x1.7f7d1cp-20f;
    r2 = r * r;
    s = NBG_FMA_F32(NBG_FMA_F32(0x1.6cdef2p-10f, r, 0x1.11d950p-7f), r2,
                    NBG_FMA_F32(0x1.55553ep-5f, r, 0x1.555526p-3f));
    p = 1.0f + (r + r2 * NBG_FMA_F32(s, r, 0.5f));
    return p * scale;
}

/* out[i] = exp(x[i] - shift), i < n (out and x distinct). */
static inline void nbg_exp_shifted_f64(const double *restrict x, double shift,
                                       double *restrict out, int64_t n) {
    int64_t i, bad = 0;
    for (i = 0; i < n; i++) {
        const double v = x[i] - shift;
        bad |= !(v >= NBG_FEXP_LO_F64 && v <= NBG_FEXP_HI_F64);
        out[i] = nbg_fexp_core_f64(v);
    }
    if (__builtin_expect(bad != 0, 0))
        for (i = 0; i < n; i++) {
            const double v = x[i] - shift;
            if (!(v >= NBG_FEXP_LO_F64 && v <= NBG_FEXP_HI_F64)) out[i] = exp(v);
        }
}
static inline void nbg_exp_shifted_f32(const float *restrict x, float shift,
                                       float *restrict out, int64_t n) {
    int64_t i;
    int32_t bad = 0;
    for (i = 0; i < n; i++) {
        const float v = x[i] - shift;
        bad |= !(v >= NBG_FEXP_LO_F32 && v <= NBG_FEXP_HI_F32);
        out[i] = nbg_fexp_core_f32(v);
    }
    if (__builtin_expect(bad != 0, 0))
        for (i = 0; i < n; i++) {
            const float v = x[i] - shift;
            if (!(v >= NBG_FEXP_LO_F32 && v <= NBG_FEXP_HI_F32)) out[i] = expf(v);
        }
}
#endif
