/* Walking the rows of a tensor along one axis (the softmax family, the label
   picks): the other ("outer") dimensions are iterated in C order, each of up
   to NBG_ROWS_MAXOPS operands with its own byte strides there (0 where it is
   broadcast); along the row each operand has one byte step.  Rows are split
   across the thread pool in ranges; every row is computed by one thread with
   the same code, so results never depend on the thread count.  Plain C. */
#ifndef NBG_ROWS_H
#define NBG_ROWS_H
#include <stdlib.h>
#define NBG_ROWS_MAXOPS 4
/* NaN tests for the argument reductions: floats, and types without NaN. */
#define NBG_ISNAN_F(v) ((v) != (v))
#define NBG_ISNAN_NONE(v) 0
typedef struct {
    int nd, nops;
    int64_t dims[NBG_MAXDIMS];
    int64_t st[NBG_ROWS_MAXOPS][NBG_MAXDIMS];
    char *base[NBG_ROWS_MAXOPS];
    int64_t step[NBG_ROWS_MAXOPS];
    int64_t n, rows;
    int label_kind;  /* item size of the labels, negative when unsigned */
    nbg_fails fails;
} nbg_rows;

/* Fills the outer dimensions from `shape` (nd dims) without `axis` (-1: none). */
static NBG_NOINLINE void nbg_rows_init(nbg_rows *r, int nd, const int64_t *shape, int axis,
                                       char *err) {
    int d;
    r->nd = 0;
    r->nops = 0;
    r->rows = 1;
    r->n = axis >= 0 ? shape[axis] : 1;
    r->label_kind = 0;
    r->fails.failed = 0;
    r->fails.status = 0;
    r->fails.err = err;
    for (d = 0; d < nd; d++)
        if (d != axis) {
            r->dims[r->nd++] = shape[d];
            r->rows *= shape[d];
        }
}

/* Adds an operand: its base, dims and byte strides (nd of them, broadcast to
   the outer shape where a size is 1), and the axis along the row (-1: none).
   Returns -1 (message in err) when its shape does not broadcast. */
static NBG_NOINLINE int nbg_rows_add(nbg_rows *r, const void *base, int nd, const int64_t *dims,
                                     const int64_t *strides, int axis, const char *what,
                                     const char *name, char *err) {
    const int k = r->nops++;
    int d, j = 0;
    r->base[k] = (char *)base;
    r->step[k] = axis >= 0 ? strides[axis] : 0;
    for (d = 0; d < nd; d++) {
        if (d == axis) continue;
        if (dims[d] != r->dims[j] && dims[d] != 1) {
            char b1[200], b2[200];
            nbg_errorf(err, "%s: %s of shape %s does not broadcast to the rows' shape %s", what,
                       name, nbg_shape_text(b1, 200, nd, dims),
                       nbg_shape_text(b2, 200, r->nd, r->dims));
            return -1;
        }
        r->st[k][j] = dims[d] == 1 ? 0 : strides[d];
        j++;
    }
    return 0;
}

/* Row `row`'s multi-index into idx and each operand's row start into ptr. */
static inline void nbg_rows_seek(const nbg_rows *r, int64_t row, int64_t *idx, char **ptr) {
    int d, k;
    for (k = 0; k < r->nops; k++) ptr[k] = r->base[k];
    for (d = r->nd - 1; d >= 0; d--) {
        const int64_t i = r->dims[d] ? row % r->dims[d] : 0;
        row = r->dims[d] ? row / r->dims[d] : 0;
        idx[d] = i;
        for (k = 0; k < r->nops; k++) ptr[k] += i * r->st[k][d];
    }
}

/* The next row (C order). */
static inline void nbg_rows_next(const nbg_rows *r, int64_t *idx, char **ptr) {
    int d, k;
    for (d = r->nd - 1; d >= 0; d--) {
        idx[d]++;
        for (k = 0; k < r->nops; k++) ptr[k] += r->st[k][d];
        if (idx[d] < r->dims[d]) return;
        for (k = 0; k < r->nops; k++) ptr[k] -= idx[d] * r->st[k][d];
        idx[d] = 0;
    }
}

/* A label of kind `kind` (item size, negative when unsigned) at p. */
static inline int64_t nbg_label_at(const char *p, int kind, int *big) {
    switch (kind) {
    case 1: return *(const int8_t *)p;
    case 2: return *(const int16_t *)p;
    case 4: return *(const int32_t *)p;
    case -1: return *(const uint8_t *)p;
    case -2: return *(const uint16_t *)p;
    case -4: return *(const uint32_t *)p;
    case -8: {
        const uint64_t v = *(const uint64_t *)p;
        if (v > (uint64_t)INT64_MAX) { *big = 1; return -1; }
        return (int64_t)v;
    }
    default: return *(const int64_t *)p;
    }
}

/* Every label (operand k) in [0, n), checked in C order (the first bad one is
   reported, as NumPy's check does).  Returns NBG_INDEX_ERROR with a message. */
static NBG_NOINLINE int nbg_rows_check_labels(const nbg_rows *r, int k, int64_t n, char *err) {
    int64_t idx[NBG_MAXDIMS], row;
    char *ptr[NBG_ROWS_MAXOPS];
    if (r->rows <= 0) return 0;
    nbg_rows_seek(r, 0, idx, ptr);
    for (row = 0; row < r->rows; row++) {
        int big = 0;
        const int64_t v = nbg_label_at(ptr[k], r->label_kind, &big);
        if (NBG_UNLIKELY(big || v < 0 || v >= n)) {
            if (big)
                nbg_errorf(err, "labels must be in [0, %lld) (the size of the last axis), got %llu",
                           (long long)n, (unsigned long long)*(const uint64_t *)ptr[k]);
            else
                nbg_errorf(err, "labels must be in [0, %lld) (the size of the last axis), got %lld",
                           (long long)n, (long long)v);
            return NBG_INDEX_ERROR;
        }
        nbg_rows_next(r, idx, ptr);
    }
    return 0;
}

/* The pool's size rule for rows of n elements of `weight` adds each:
   split from min_elements elements in all. */
static inline int64_t nbg_rows_min(int64_t n, int64_t min_elements) {
    const int64_t m = n > 0 ? min_elements / n : min_elements;
    return m > 1 ? m : 2;
}

/* x[label] per row, copied byte for byte (any dtype): operands 0 x (row
   along the last axis), 1 labels, 2 out; labels already checked. */
static NBG_NOINLINE void nbg_pick_labels(const nbg_rows *r, int64_t item) {
    int64_t idx[NBG_MAXDIMS], row;
    char *ptr[NBG_ROWS_MAXOPS];
    if (r->rows <= 0) return;
    nbg_rows_seek(r, 0, idx, ptr);
    for (row = 0; row < r->rows; row++) {
        int big = 0;
        const int64_t v = nbg_label_at(ptr[1], r->label_kind, &big);
        memcpy(ptr[2], ptr[0] + v * r->step[0], (size_t)item);
        nbg_rows_next(r, idx, ptr);
    }
}

/* Zeros with gz put at each row's label: operands 0 gz, 1 labels, 2 out (the
   row along its last axis, C-contiguous); labels already checked. */
static NBG_NOINLINE void nbg_pick_labels_grad(const nbg_rows *r, char *out, int64_t item) {
    int64_t idx[NBG_MAXDIMS], row;
    char *ptr[NBG_ROWS_MAXOPS];
    if (r->rows * r->n > 0) memset(out, 0, (size_t)(r->rows * r->n * item));
    if (r->rows <= 0 || r->n <= 0) return;
    nbg_rows_seek(r, 0, idx, ptr);
    for (row = 0; row < r->rows; row++) {
        int big = 0;
        const int64_t v = nbg_label_at(ptr[1], r->label_kind, &big);
        memcpy(ptr[2] + v * r->step[2], ptr[0], (size_t)item);
        nbg_rows_next(r, idx, ptr);
    }
}
#endif
