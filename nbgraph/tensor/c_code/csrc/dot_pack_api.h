typedef void (*nbg_${S}_pack)(${CT} *, const char *, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t);
