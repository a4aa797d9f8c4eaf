int nbg_${S}_mv(const char *A, int64_t M, int64_t K, int64_t s0, int64_t s1, nbg_${S}_pack pa,
                int na, const char *V, int64_t vs, nbg_${S}_pack pv, int nv, ${CT} *out,
                int64_t os, char *err);
