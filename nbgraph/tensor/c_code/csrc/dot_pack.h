#ifndef NBG_DOTPK_${IN}_${S}
#define NBG_DOTPK_${IN}_${S}
/* dst[r * drs + c * dcs] = src[r * rs + c * cs] (byte strides) for r < rows, c < cols. */
static NBG_NOINLINE void nbg_dpk_${IN}_${S}(${CT} *dst, const char *src, int64_t rows,
                                          int64_t cols, int64_t rs, int64_t cs, int64_t drs,
                                          int64_t dcs) {
    int64_t r, c;
    for (r = 0; r < rows; r++) {
        const char *p = src + r * rs;
        ${CT} *q = dst + r * drs;
        if (dcs == 1)
            for (c = 0; c < cols; c++) q[c] = ${CONV};
        else
            for (c = 0; c < cols; c++) q[c * dcs] = ${CONV};
    }
}
#endif
