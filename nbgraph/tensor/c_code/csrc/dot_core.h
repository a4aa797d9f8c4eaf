#ifndef NBG_DOT_${S}
#define NBG_DOT_${S}
typedef ${CT} nbg_${S}_v __attribute__((vector_size(NBG_DOT_VBYTES)));
#define NBG_${S}_VL ((int64_t)(NBG_DOT_VBYTES / sizeof(${CT})))
#define NBG_${S}_NR (2 * NBG_${S}_VL)
#define NBG_${S}_NC ((int64_t)(4096 / sizeof(${CT})))
typedef void (*nbg_${S}_pack)(${CT} *, const char *, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t);
static inline nbg_${S}_v nbg_${S}_ld(const ${CT} *p) { nbg_${S}_v v; memcpy(&v, p, sizeof v); return v; }
static inline void nbg_${S}_st(${CT} *p, nbg_${S}_v v) { memcpy(p, &v, sizeof v); }
static inline nbg_${S}_v nbg_${S}_splat(${CT} s) {
    nbg_${S}_v v;
    int l;
    for (l = 0; l < NBG_${S}_VL; l++) v[l] = s;
    return v;
}
${MACROS}
#endif
