#ifndef NBG_DOT_BLAS
#define NBG_DOT_BLAS
/* The process's BLAS for float matrix products (nbgraph.tensor.c_code.dot).
   NumPy's wheels load OpenBLAS as libscipy_openblas64_-<hash>.so, exporting
   CBLAS with 64-bit integers under renamed symbols; a module finds it, once,
   among the objects already loaded whose path names a BLAS (dl_iterate_phdr,
   then dlopen with RTLD_NOLOAD: nothing is ever loaded and the handle is
   kept, so the library stays while the pointers live) and calls it where the
   layout allows.  Only
   symbol sets whose integer width is certain are accepted; with none found
   (another NumPy build, another platform, NBG_DOT_USE_BLAS 0) the own kernels
   run.  32-bit-integer names are not taken (a plain cblas_dgemm does not say
   its width; 64-bit NumPy wheels ship the 64-bit one).  A library whose path
   names numpy is preferred (SciPy's wheels load a copy of the same library).
   Products above NBG_BLAS_POOL multiply-adds are split in two row blocks across
   nbgraph's own pool, BLAS on one thread in each, never on BLAS's threads:
   OpenBLAS's idle workers busy-wait after a product, on the cores the pool's
   loops want next (LeNet's step, quiet 2-core machine: 17-21 ms with the
   packed kernel, 25-26 ms with BLAS on its two threads, 17-19 ms on one).
   All of it is glue around one call per product, compiled unoptimised: the
   float Dot support object took 1255M compiler instructions with it at -O1,
   1194M at -O0, 1115M without it (cachegrind, GCC 12). */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_BLAS_GLUE __attribute__((noinline, noclone, optimize("O0")))
#else
#define NBG_BLAS_GLUE NBG_NOINLINE
#endif
#define NBG_DOT_USE_BLAS ${BLAS}
#define NBG_BLAS_SMALL ((int64_t)${SMALL})
#define NBG_BLAS_SPLITS ((int64_t)${SPLITS})
#define NBG_BLAS_MINROWS 16
/* Products above this many multiply-adds run as the row blocks below (on the
   pool when it is worth it: nbg_dot_worth), BLAS on one thread in each. */
#define NBG_BLAS_POOL ((int64_t)1 << 19)
/* Row blocks of a big product: fixed, so results never depend on the thread
   count (two: this 2-core machine's pool; more blocks pack B more often). */
#define NBG_BLAS_BLOCKS 2
#if defined(__linux__) && NBG_DOT_USE_BLAS
#include <dlfcn.h>
#include <sys/syscall.h>
/* The two leading fields of <link.h>'s struct dl_phdr_info (declared here:
   link.h shows it only under _GNU_SOURCE, which a module does not define). */
struct nbg_dl_info {
    uintptr_t addr;
    const char *name;
};
extern int dl_iterate_phdr(int (*visit)(struct nbg_dl_info *, size_t, void *), void *data);
extern long syscall(long number, ...);
extern int getpid(void);
#define NBG_BLAS_ON 1
#else
#define NBG_BLAS_ON 0
#endif
/* CBLAS's enumerations (row-major, no transpose, transpose). */
#define NBG_BLAS_ROW 101
#define NBG_BLAS_N 111
#define NBG_BLAS_T 112
typedef struct {
    void *gemm[2];           /* dgemm, sgemm (64-bit integers) */
    int (*get)(void);        /* its thread count, or NULL */
    void (*set)(int);
    int numpy;               /* found in NumPy's own library */
} nbg_blas_fns;
static const char *const nbg_blas_names_of[2][4] = {
    {"scipy_cblas_dgemm64_", "scipy_cblas_sgemm64_", "scipy_openblas_get_num_threads64_",
     "scipy_openblas_set_num_threads64_"},
    {"cblas_dgemm64_", "cblas_sgemm64_", "openblas_get_num_threads64_",
     "openblas_set_num_threads64_"},
};
static nbg_blas_fns nbg_blas_found;
static int nbg_blas_state;   /* 0 not looked for yet, 1 found, 2 none */
#if NBG_BLAS_ON
/* Up to 8 paths of loaded objects that name a BLAS, copied: dlopen is called
   after dl_iterate_phdr returns, never inside it (it holds the loader's list
   lock, which a dlopen in another thread may hold while it waits for ours). */
typedef struct {
    char *path[8];
    int n;
} nbg_blas_paths;
static NBG_BLAS_GLUE int nbg_blas_names(const char *s, const char *word) {
    size_t n = strlen(word);
    for (; *s; s++) {
        size_t i = 0;
        while (i < n && s[i] == word[i]) i++;
        if (i == n) return 1;
    }
    return 0;
}
static NBG_BLAS_GLUE int nbg_blas_visit(struct nbg_dl_info *info, size_t size, void *data) {
    nbg_blas_paths *l = (nbg_blas_paths *)data;
    size_t n;
    (void)size;
    if (!info->name || !nbg_blas_names(info->name, "blas")) return 0;
    n = strlen(info->name) + 1;
    l->path[l->n] = (char *)malloc(n);
    if (l->path[l->n]) memcpy(l->path[l->n++], info->name, n);
    return l->n == 8;
}
/* The symbols of one of `path`'s sets into *f (1), or 0. */
static NBG_BLAS_GLUE int nbg_blas_open(const char *path, nbg_blas_fns *f) {
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    int set;
    if (!h) return 0;
    for (set = 0; set < 2; set++) {
        void *d = dlsym(h, nbg_blas_names_of[set][0]), *s = dlsym(h, nbg_blas_names_of[set][1]);
        void *get = dlsym(h, nbg_blas_names_of[set][2]);
        void *put = dlsym(h, nbg_blas_names_of[set][3]);
        if (!d || !s) continue;
        f->gemm[0] = d; f->gemm[1] = s;
        f->get = get && put ? (int (*)(void))get : NULL;
        f->set = get && put ? (void (*)(int))put : NULL;
        f->numpy = nbg_blas_names(path, "numpy");
        return 1;  /* the handle stays open: the library stays while we hold its symbols */
    }
    dlclose(h);
    return 0;
}
#endif
/* The BLAS found (looked for once; a race only repeats the same search). */
static NBG_BLAS_GLUE const nbg_blas_fns *nbg_blas(void) {
    int state = __atomic_load_n(&nbg_blas_state, __ATOMIC_ACQUIRE);
    if (!state) {
#if NBG_BLAS_ON
        nbg_blas_fns f = {{NULL, NULL}, NULL, NULL, 0}, g;
        nbg_blas_paths l;
        int k;
        l.n = 0;
        dl_iterate_phdr(nbg_blas_visit, &l);
        for (k = 0; k < l.n; k++) {
            if (!f.numpy && nbg_blas_open(l.path[k], &g) && (!f.gemm[0] || g.numpy)) f = g;
            free(l.path[k]);
        }
        nbg_blas_found = f;
        state = f.gemm[0] ? 1 : 2;
#else
        state = 2;
#endif
        __atomic_store_n(&nbg_blas_state, state, __ATOMIC_RELEASE);
    }
    return state == 1 ? &nbg_blas_found : NULL;
}
/* An operand of r x c elements (byte strides s0, s1) as CBLAS row-major
   storage: 0 as it is, 1 transposed (stored c x r), -1 neither (a stride that
   is not a unit one or a leading dimension); *ld its leading dimension. */
static NBG_BLAS_GLUE int nbg_blas_layout(int64_t r, int64_t c, int64_t s0, int64_t s1,
                                         int64_t item, int64_t *ld) {
    const int64_t rr = r > 1 ? r : 1, cc = c > 1 ? c : 1;
    if ((c <= 1 || s1 == item) && (r <= 1 || (s0 % item == 0 && s0 / item >= cc))) {
        *ld = r <= 1 ? cc : s0 / item;
        return 0;
    }
    if ((r <= 1 || s0 == item) && (c <= 1 || (s1 % item == 0 && s1 / item >= rr))) {
        *ld = c <= 1 ? rr : s1 / item;
        return 1;
    }
    return -1;
}
/* Whether a product of `macs` multiply-adds runs with BLAS on one thread
   (nbgraph.tensor.blas_threads: OpenBLAS splits products above SPLITS
   multiply-adds; up to SMALL they run on one thread, and only the process's
   main thread changes the count, as the C-VM does). */
static NBG_BLAS_GLUE int nbg_blas_main_thread(void) {
#if NBG_BLAS_ON
    static __thread int main_thread;  /* 0 unknown, 1 yes, 2 no */
    if (!main_thread) main_thread = syscall(SYS_gettid) == getpid() ? 1 : 2;
    return main_thread == 1;
#else
    return 0;
#endif
}
static NBG_BLAS_GLUE int nbg_blas_one_thread(const nbg_blas_fns *f, int64_t macs) {
    if (!f->set || macs <= NBG_BLAS_SPLITS || macs > NBG_BLAS_SMALL) return 0;
    return nbg_blas_main_thread();
}
#endif
#ifndef NBG_DOT_BLAS_${S}
#define NBG_DOT_BLAS_${S}
/* 1 when the packed kernel (dot_mm.h) is compiled with this part. */
#define NBG_DOT_PACKED_${S} ${PACKED}
typedef void (*nbg_${S}_gemm64)(int, int, int, int64_t, int64_t, int64_t, ${CT}, const ${CT} *,
                                int64_t, const ${CT} *, int64_t, ${CT}, ${CT} *, int64_t);
typedef struct {
    nbg_${S}_gemm64 gemm;
    int ta, tb, nb;
    int64_t M, N, K, lda, ldb, ldc;
    const char *A, *B;
    ${CT} *C;
} nbg_${S}_blas_job;
/* Row blocks [b0, b1) of nb equal ones (multiples of NBG_BLAS_MINROWS rows), one
   BLAS call each whichever thread runs them (OpenBLAS's bits depend on the rows
   of a call). */
static NBG_BLAS_GLUE void nbg_${S}_blas_task(void *ctx, int64_t b0, int64_t b1) {
    const nbg_${S}_blas_job *j = (const nbg_${S}_blas_job *)ctx;
    const int64_t item = sizeof(${CT});
    int64_t rows = (j->M + j->nb - 1) / j->nb, i0, i1, b;
    rows = (rows + NBG_BLAS_MINROWS - 1) / NBG_BLAS_MINROWS * NBG_BLAS_MINROWS;
    for (b = b0; b < b1; b++) {
        i0 = b * rows;
        i1 = i0 + rows < j->M ? i0 + rows : j->M;
        if (i0 >= i1) continue;
        j->gemm(NBG_BLAS_ROW, j->ta ? NBG_BLAS_T : NBG_BLAS_N,
                j->tb ? NBG_BLAS_T : NBG_BLAS_N, i1 - i0, j->N, j->K, 1,
                (const ${CT} *)(j->A + (j->ta ? i0 : i0 * j->lda) * item), j->lda,
                (const ${CT} *)j->B, j->ldb, 0, j->C + i0 * j->ldc, j->ldc);
    }
}
/* C = A . B with the BLAS (0), or 1 when there is none or the layout does
   not suit it (a matrix without a unit stride along one axis). */
static NBG_BLAS_GLUE int nbg_${S}_blas_mm(const char *A, int64_t M, int64_t K, int64_t as0,
                                         int64_t as1, const char *B, int64_t N, int64_t bs0,
                                         int64_t bs1, ${CT} *C, int64_t cs0, int64_t cs1) {
    const int64_t item = sizeof(${CT});
    const nbg_blas_fns *f = nbg_blas();
    void *gemm = f ? f->gemm[sizeof(${CT}) == 8 ? 0 : 1] : NULL;
    int64_t lda, ldb, ldc, t, macs;
    int ta, tb, one, blocks, count = 1;
    if (!gemm) return 1;
    if (nbg_blas_layout(M, N, cs0, cs1, item, &ldc) != 0) {
        /* C^T = B^T . A^T: a column-major C is a row-major C^T */
        const char *p = A;
        if (nbg_blas_layout(N, M, cs1, cs0, item, &ldc) != 0) return 1;
        A = B; B = p;
        t = M; M = N; N = t;
        t = as0; as0 = bs1; bs1 = t;
        t = as1; as1 = bs0; bs0 = t;
    }
    ta = nbg_blas_layout(M, K, as0, as1, item, &lda);
    tb = nbg_blas_layout(K, N, bs0, bs1, item, &ldb);
    if (ta < 0 || tb < 0) return 1;
    macs = M * K * N;
    blocks = f->set && M >= 2 * NBG_BLAS_MINROWS && macs > NBG_BLAS_POOL &&
             nbg_blas_main_thread();
    one = blocks || nbg_blas_one_thread(f, macs);
    if (one) {
        count = f->get();
        if (count > 1) f->set(1);
    }
    if (blocks) {
        /* NBG_BLAS_BLOCKS row blocks on nbgraph's pool (serially with one thread,
           or below NBG_BLAS_SMALL when waking the pool is not worth it: the same
           blocks, so the same bits), BLAS on one thread in each */
        nbg_${S}_blas_job j;
        j.gemm = (nbg_${S}_gemm64)gemm; j.ta = ta; j.tb = tb; j.M = M; j.N = N; j.K = K;
        j.A = A; j.lda = lda; j.B = B; j.ldb = ldb; j.C = C; j.ldc = ldc;
        j.nb = NBG_BLAS_BLOCKS;
        if (macs > NBG_BLAS_SMALL || nbg_dot_worth(macs, NBG_BLAS_POOL))
            nbg_dot_parallel(nbg_${S}_blas_task, &j, j.nb);
        else
            nbg_${S}_blas_task(&j, 0, j.nb);
        if (count > 1) f->set(count);
        return 0;
    }
    ((nbg_${S}_gemm64)gemm)(NBG_BLAS_ROW, ta ? NBG_BLAS_T : NBG_BLAS_N,
                            tb ? NBG_BLAS_T : NBG_BLAS_N, M, N, K, 1, (const ${CT} *)A, lda,
                            (const ${CT} *)B, ldb, 0, C, ldc);
    if (one && count > 1) f->set(count);
    return 0;
}
#if !NBG_DOT_PACKED_${S}
/* C = A . B when the packed kernel is not compiled (the module was made where
   the BLAS was found): an operand of another dtype, or without a unit stride
   along an axis, is converted into a contiguous buffer of the compute type
   first (as NumPy copies before calling BLAS), and C's rows go through a
   buffer when its layout does not suit the BLAS.  Where no BLAS is found at
   run time after all (a module made in another process), plain loops in k
   order: slow, still right. */
static NBG_BLAS_GLUE int nbg_${S}_copy_mm(const char *A, int64_t M, int64_t K, int64_t as0,
                                         int64_t as1, int na, nbg_${S}_pack pa,
                                         const char *B, int64_t N, int64_t bs0, int64_t bs1,
                                         int nb, nbg_${S}_pack pb, ${CT} *C, int64_t cs0,
                                         int64_t cs1, char *err) {
    const int64_t item = sizeof(${CT});
    const int64_t e0 = nbg_dot_estride(M, cs0, item), e1 = nbg_dot_estride(N, cs1, item);
    ${CT} *a = NULL, *b = NULL, *t = NULL;
    int64_t i, j, k, ld;
    if (e0 < 0 || e1 < 0) {
        nbg_errorf(err, "dot: the output's strides are not multiples of its item size");
        return NBG_VALUE_ERROR;
    }
    if (M == 0 || N == 0) return 0;
    if (K == 0) {
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) C[i * e0 + j * e1] = 0;
        return 0;
    }
    if (!na || nbg_blas_layout(M, K, as0, as1, item, &ld) < 0) {
        a = (${CT} *)malloc(M * K * item);
        if (!a) return nbg_dot_nomem(err);
        pa(a, A, M, K, as0, as1, K, 1);
        A = (const char *)a; as0 = K * item; as1 = item;
    }
    if (!nb || nbg_blas_layout(K, N, bs0, bs1, item, &ld) < 0) {
        b = (${CT} *)malloc(K * N * item);
        if (!b) {
            free(a);
            return nbg_dot_nomem(err);
        }
        pb(b, B, K, N, bs0, bs1, N, 1);
        B = (const char *)b; bs0 = N * item; bs1 = item;
    }
    if (nbg_${S}_blas_mm(A, M, K, as0, as1, B, N, bs0, bs1, C, cs0, cs1) == 0) {
        free(a); free(b);
        return 0;
    }
    if (nbg_blas()) {  /* C's layout: through a buffer */
        t = (${CT} *)malloc(M * N * item);
        if (!t) {
            free(a); free(b);
            return nbg_dot_nomem(err);
        }
        nbg_${S}_blas_mm(A, M, K, as0, as1, B, N, bs0, bs1, t, N * item, item);
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) C[i * e0 + j * e1] = t[i * N + j];
        free(t);
    } else {
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) {
                ${CT} s = 0;
                for (k = 0; k < K; k++)
                    s = NBG_${S}_SMAC(s, *(const ${CT} *)(A + i * as0 + k * as1),
                                      *(const ${CT} *)(B + k * bs0 + j * bs1));
                C[i * e0 + j * e1] = s;
            }
    }
    free(a); free(b);
    return 0;
}
#endif
/* C (M x N) = A . B for float matrices: the skinny kernel where it applies
   (dot_skinny.h), else the BLAS when both operands are of the compute type
   and their layout suits it, else the packed kernel (dot_mm.h) or, where it
   is not compiled, nbg_${S}_copy_mm. */
static NBG_BLAS_GLUE int nbg_${S}_gemm(const char *A, int64_t M, int64_t K, int64_t as0,
                                      int64_t as1, int na, nbg_${S}_pack pa, const char *B,
                                      int64_t N, int64_t bs0, int64_t bs1, int nb,
                                      nbg_${S}_pack pb, ${CT} *C, int64_t cs0, int64_t cs1,
                                      char *err) {
    if (nbg_${S}_is_skinny(na, M, K, N, as0, as1))
        return nbg_${S}_skmm(A, M, K, as0, as1, pa, B, N, bs0, bs1, pb, C, cs0, cs1, err);
    if (na && nb && M > 0 && N > 0 && K > 0 &&
        nbg_${S}_blas_mm(A, M, K, as0, as1, B, N, bs0, bs1, C, cs0, cs1) == 0)
        return 0;
#if NBG_DOT_PACKED_${S}
    return nbg_${S}_mm(A, M, K, as0, as1, pa, B, N, bs0, bs1, pb, C, cs0, cs1, err);
#else
    return nbg_${S}_copy_mm(A, M, K, as0, as1, na, pa, B, N, bs0, bs1, nb, pb, C, cs0, cs1, err);
#endif
}
#endif
