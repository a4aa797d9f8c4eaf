#if defined(__AVX__) && !defined(__clang__)
#define NBG_${S}_BCAST(p) ${BCAST}(p)
#else
#define NBG_${S}_BCAST(p) nbg_${S}_splat(*(p))
#endif
#if defined(__FMA__) && !defined(__clang__)
#define NBG_${S}_MAC(acc, a, b) ${VFMA}((a), (b), (acc))
#define NBG_${S}_SMAC(acc, a, b) ${SFMA}((a), (b), (acc))
#else
#define NBG_${S}_MAC(acc, a, b) ((acc) + (a) * (b))
#define NBG_${S}_SMAC(acc, a, b) ((acc) + (a) * (b))
#endif
#define NBG_${S}_ADD(a, b) ((a) + (b))
#define NBG_${S}_VADD(a, b) ((a) + (b))
