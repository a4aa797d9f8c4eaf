/* The driver of every reduction kernel (nbgraph/tensor/c_code/parallel_reduce.py):
   the choice between the serial walk, splitting a kept dimension and cutting
   rows into fixed blocks, the parallel tasks, and the merge of block partials
   in block order.  A kernel hands it an initialised iterator (its last
   operand is the output, stride 0 along reduced dimensions) and a
   nbg_reduce_spec (csrc/common.h) holding its own loops: seg reduces
   elements [lo, hi) of one row into one value, keep combines a row element
   by element into a row of the output, comb combines two values.
   Compiled once into the runtime library, at the end of its unit (after
   csrc/runtime.c, whose pool it uses); a standalone module compiles it
   itself (serial).
   Plain C, no placeholders. */
/* Its parallel loops are csrc/helpers.h's NBG_HELPERS_PARALLEL (the runtime's
   pool, or serial in a standalone module), which it always follows. */
#ifdef NBG_STANDALONE
#define NBG_RED_WORTH(n, min_n) 0
#define NBG_RED_THREADS() 1
#else  /* (the runtime's rt_worth and nbg_rt_nthreads) */
#define NBG_RED_WORTH(n, min_n) ((n) >= (min_n) && rt_worth((n), (min_n)))
#define NBG_RED_THREADS() nbg_rt_nthreads()
#endif
/* Elements per block when rows are cut (64 pairwise leaves of 128: the
   leaves, and so the sums, are the serial loop's), and the bytes of a batch
   of parallel jobs' partials (on the stack: 4096 blocks of 8 bytes). */
#define NBG_RED_BLOCK 8192
#define NBG_RED_BATCH 32768
/* One value of any accumulator type (at most 16 bytes). */
typedef union { long double ld; double d[2]; int64_t i[2]; char c[16]; } nbg_red_val;
typedef struct {
    nbg_fails fails;
    const nbg_reduce_spec *s;
    const nbg_iter *it;
    int split;
    int64_t blk, nb, u0;
    char *part;
} nbg_red_job;
/* Code run once per call, per parallel job or per block of NBG_RED_BLOCK
   elements: compiled without optimisation (at -O1 the driver cost the
   runtime's build ~100 million more compiler instructions, -O0 ~65; only the
   walk over the rows, run per row, is optimised). */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_RED_ONCE __attribute__((optimize("O0")))
#else
#define NBG_RED_ONCE
#endif
/* Every row of it: reduced into its output element, or (a kept innermost
   dimension) combined into a row of the output. */
static NBG_NOINLINE int nbg_red_rows(const nbg_reduce_spec *s, nbg_iter *it, char *err) {
    const int q = it->nops - 1;
    nbg_red_val acc;
    do {
        int st;
        if (it->inner[q] == 0) {
            st = s->seg(s->user, it->ptr, it->inner, 0, it->n, acc.c, err);
            if (!st) s->comb(it->ptr[q], acc.c);
        } else {
            st = s->keep(s->user, it->ptr, it->inner, it->ptr[q], it->inner[q], it->n, err);
        }
        if (st) return st;
    } while (nbg_iter_step(it, it->idx, it->ptr));
    return 0;
}
/* A range of a kept dimension: every output element it holds, in the serial order. */
static NBG_RED_ONCE void nbg_red_split(void *vc, int64_t b, int64_t e) {
    nbg_red_job *job = (nbg_red_job *)vc;
    char err[NBG_ERRLEN];
    nbg_iter sub;
    int st;
    err[0] = 0;
    nbg_iter_sub(job->it, &sub, job->split, b, e);
    st = nbg_red_rows(job->s, &sub, err);
    if (st) nbg_fail_once(&job->fails, st, err);
}
/* Blocks u0 + [b, e) (block j of row r is unit r * nb + j) into part[b, e). */
static NBG_RED_ONCE void nbg_red_units(void *vc, int64_t b, int64_t e) {
    nbg_red_job *job = (nbg_red_job *)vc;
    const nbg_reduce_spec *s = job->s;
    const nbg_iter *it = job->it;
    const int64_t n = it->n, nb = job->nb;
    char err[NBG_ERRLEN];
    int64_t idx[NBG_MAXDIMS], u, j = (job->u0 + b) % nb;
    char *ptr[NBG_MAXOPS];
    int st = 0;
    err[0] = 0;
    nbg_iter_seek(it, (job->u0 + b) / nb, idx, ptr);
    for (u = b; u < e; u++) {
        const int64_t lo = j * job->blk, hi = n - lo > job->blk ? lo + job->blk : n;
        st = s->seg(s->user, ptr, it->inner, lo, hi, job->part + u * s->item, err);
        if (st) break;
        if (++j == nb) {
            j = 0;
            if (u + 1 < e) nbg_iter_step(it, idx, ptr);
        }
    }
    if (st) nbg_fail_once(&job->fails, st, err);
}
/* Rows cut into blocks reduced by the pool, merged here in block order into
   each row's value: a float sum as the binary cascade of the serial loop (a
   cascade over 2^k leaves is the cascade of its complete subtrees), anything
   else in order from the identity. */
static NBG_RED_ONCE void nbg_red_blocks(nbg_red_job *job, nbg_iter *it) {
    const nbg_reduce_spec *s = job->s;
    const int q = it->nops - 1, pw = s->pairwise;
    const int64_t batch = NBG_RED_BATCH / s->item;
    nbg_red_val part[NBG_RED_BATCH / sizeof(nbg_red_val)], stack[64], acc;
    int level[64], top = 0, lvl;
    int64_t u0, u, j = 0, idx[NBG_MAXDIMS], units;
    char *ptr[NBG_MAXOPS];
    job->blk = s->blockable ? NBG_RED_BLOCK : it->n;
    job->nb = (it->n + job->blk - 1) / job->blk;
    units = job->nb;
    for (u = 0; u < it->nd - 1; u++) units *= it->shape[u];
    job->part = part[0].c;
    __builtin_memcpy(acc.c, s->identity, (size_t)s->item);
    nbg_iter_seek(it, 0, idx, ptr);
    for (u0 = 0; u0 < units; u0 += batch) {
        const int64_t nu = units - u0 < batch ? units - u0 : batch;
        job->u0 = u0;
        NBG_HELPERS_PARALLEL(nbg_red_units, job, nu, 1, 0);
        if (job->fails.failed) return;
        for (u = 0; u < nu; u++) {
            const char *v = job->part + u * s->item;
            if (pw == 1) {  /* push a leaf, merging equal levels */
                double x = *(const double *)v;
                for (lvl = 0; top > 0 && level[top - 1] == lvl; lvl++) x = stack[--top].d[0] + x;
                stack[top].d[0] = x;
                level[top++] = lvl;
            } else if (pw == 2) {
                float x = *(const float *)v;
                for (lvl = 0; top > 0 && level[top - 1] == lvl; lvl++)
                    x = *(const float *)stack[--top].c + x;
                *(float *)stack[top].c = x;
                level[top++] = lvl;
            } else {
                s->comb(acc.c, v);
            }
            if (++j < job->nb) continue;
            if (pw == 1) {  /* the row's value into its output element */
                double x = stack[--top].d[0];
                while (top > 0) x = stack[--top].d[0] + x;
                *(double *)ptr[q] = *(double *)ptr[q] + x;
            } else if (pw == 2) {
                float x = *(const float *)stack[--top].c;
                while (top > 0) x = *(const float *)stack[--top].c + x;
                *(float *)ptr[q] = *(float *)ptr[q] + x;
            } else {
                s->comb(ptr[q], acc.c);
                __builtin_memcpy(acc.c, s->identity, (size_t)s->item);
            }
            j = 0;
            nbg_iter_step(it, idx, ptr);
        }
    }
}
/* Run the reduction over it (total: the elements reduced, for the choice of
   mode); 0, or the first failure's status (its message in err).  Results are
   the serial loop's, bit for bit, whatever the mode and thread count.  The
   modes: 1 splits the kept dimension with the most chunks (whole output
   elements per thread), 2 cuts rows into blocks (little is kept), 0 is serial. */
NBG_HELPER NBG_RED_ONCE NBG_NOINLINE int nbg_reduce(const nbg_reduce_spec *s, nbg_iter *it,
                                                    int64_t total, char *err) {
    const int last = it->nd - 1, q = it->nops - 1;
    nbg_red_job job;
    int64_t chunks = 0, cn;
    int mode = 0, d;
    if (s->item <= 0 || s->item > (int64_t)sizeof(nbg_red_val)) {
        nbg_errorf(err, "reduction: an accumulator of %lld bytes is too big", (long long)s->item);
        return NBG_TYPE_ERROR;
    }
    if (!NBG_RED_WORTH(total, s->min_n)) return nbg_red_rows(s, it, err);
    job.split = -1;
    for (d = 0; d <= last; d++) {
        if (it->st[q][d] == 0) continue;
        cn = d == last ? it->shape[d] / 64 : it->shape[d];
        if (cn > chunks) { chunks = cn; job.split = d; }
    }
    if (chunks >= 4 * NBG_RED_THREADS()) mode = 1;
    else if (it->st[q][last] == 0 && it->n >= 1024) mode = 2;
    else if (chunks >= 2) mode = 1;
    if (!mode) return nbg_red_rows(s, it, err);
    job.fails.failed = 0;
    job.fails.status = 0;
    job.fails.err = err;
    job.s = s;
    job.it = it;
    if (mode == 1)
        NBG_HELPERS_PARALLEL(nbg_red_split, &job, it->shape[job.split],
                             last == job.split ? 64 : 1, 0);
    else
        nbg_red_blocks(&job, it);
    return job.fails.failed ? job.fails.status : 0;
}
