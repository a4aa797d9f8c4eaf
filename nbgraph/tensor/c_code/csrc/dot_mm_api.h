int nbg_${S}_mm(const char *A, int64_t M, int64_t K, int64_t as0, int64_t as1, nbg_${S}_pack pa,
                const char *B, int64_t N, int64_t bs0, int64_t bs1, nbg_${S}_pack pb, ${CT} *C,
                int64_t cs0, int64_t cs1, char *err);
