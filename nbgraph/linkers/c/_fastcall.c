/* nbgraph's C call path: one callable object per compiled kernel.
 *
 * A Kernel checks its arguments (exact ndarrays of the expected dtype and
 * ndim, aligned), allocates or reuses its outputs, fills the kernel's
 * ptrs/dims arrays and calls it (see nbgraph/linkers/c/__init__.py for the
 * calling convention).  Anything it does not handle itself (another type, a
 * wrong count, keywords, shapes that do not broadcast, ...) goes to the
 * Python `fallback` with the very same arguments, which does the full checks
 * and raises the proper error.  Built and loaded by nbgraph/linkers/c/fastcall.py.
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NBG_ERRLEN 512
#define STACK_OPS 24
#define STACK_DIMS 192

typedef int (*nbg_kernel)(void **, const int64_t *, char *);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    nbg_kernel kernel;
    int nin, nout;
    int nargs;            /* positional arguments expected (args mode) */
    int method;           /* args[0] is the bound object: skipped, given to the fallback */
    int aslist;           /* return a list of the outputs */
    int elemwise;         /* outputs have the broadcast shape of the inputs */
    int ndims;            /* entries of the dims array */
    Py_ssize_t threshold; /* release the GIL above this many elements */
    int *argmap;          /* kernel input i reads argument argmap[i] */
    int *in_nd, *out_nd;
    PyArray_Descr **in_descr, **out_descr;
    PyObject **cache;     /* the previous call's outputs (elemwise), or NULL */
    PyObject *keep, *prepare, *on_error, *fallback;
    PyObject *in_cells, *out_cells;  /* tuples of lists (cells mode), or NULL */
    PyObject *consts;     /* argmap entries >= nargs read consts[k - nargs] */
    PyObject *weakreflist;
} KernelObject;

static PyTypeObject KernelType;

/* --- construction ---------------------------------------------------------- */

/* Read a tuple of (type_num, ndim) pairs into fresh arrays. */
static int
read_specs(PyObject *specs, int *count, PyArray_Descr ***descrs, int **nds, const char *what)
{
    Py_ssize_t n, i;
    if (!PyTuple_Check(specs)) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of (type_num, ndim)", what);
        return -1;
    }
    n = PyTuple_GET_SIZE(specs);
    if (n > 1024) {
        PyErr_Format(PyExc_ValueError, "too many %s", what);
        return -1;
    }
    *count = (int)n;
    *descrs = PyMem_Calloc(n ? n : 1, sizeof(PyArray_Descr *));
    *nds = PyMem_Calloc(n ? n : 1, sizeof(int));
    if (*descrs == NULL || *nds == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(specs, i);
        int type_num, nd;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "ii", &type_num, &nd)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s must be a tuple of (type_num, ndim)", what);
            return -1;
        }
        if (nd < 0 || nd > NPY_MAXDIMS) {
            PyErr_Format(PyExc_ValueError, "bad ndim %d in %s", nd, what);
            return -1;
        }
        if ((type_num < NPY_BOOL || type_num > NPY_CLONGDOUBLE) && type_num != NPY_HALF) {
            PyErr_Format(PyExc_ValueError, "unsupported type_num %d in %s", type_num, what);
            return -1;
        }
        (*descrs)[i] = PyArray_DescrFromType(type_num);
        if ((*descrs)[i] == NULL)
            return -1;
        (*nds)[i] = nd;
    }
    return 0;
}

static int
check_cells(PyObject *cells, int n, const char *what)
{
    Py_ssize_t i;
    if (!PyTuple_Check(cells) || PyTuple_GET_SIZE(cells) != n) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of %d lists", what, n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        PyObject *c = PyTuple_GET_ITEM(cells, i);
        if (!PyList_CheckExact(c) || PyList_GET_SIZE(c) < 1) {
            PyErr_Format(PyExc_TypeError, "%s must hold non-empty lists", what);
            return -1;
        }
    }
    return 0;
}

static PyObject *kernel_vectorcall(PyObject *, PyObject *const *, size_t, PyObject *);

static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"address", "keep", "ins", "outs", "prepare", "on_error",
                             "fallback", "argmap", "nargs", "method", "aslist",
                             "in_cells", "out_cells", "threshold", "consts", NULL};
    PyObject *address, *keep, *ins, *outs, *prepare, *on_error, *fallback;
    PyObject *argmap = Py_None, *in_cells = Py_None, *out_cells = Py_None, *consts = NULL;
    int nargs = 0, method = 0, aslist = 0, i;
    Py_ssize_t threshold = 16384;
    KernelObject *self;
    void *addr;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOO|OippOOnO!", kwlist, &address, &keep,
                                     &ins, &outs, &prepare, &on_error, &fallback, &argmap,
                                     &nargs, &method, &aslist, &in_cells, &out_cells,
                                     &threshold, &PyTuple_Type, &consts))
        return NULL;
    if (!PyLong_Check(address)) {
        PyErr_SetString(PyExc_TypeError, "address must be an int");
        return NULL;
    }
    addr = PyLong_AsVoidPtr(address);
    if (addr == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "address is NULL");
        return NULL;
    }
    if (!PyCallable_Check(on_error) || !PyCallable_Check(fallback)
            || (prepare != Py_None && !PyCallable_Check(prepare))) {
        PyErr_SetString(PyExc_TypeError, "prepare, on_error and fallback must be callable");
        return NULL;
    }
    self = (KernelObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = kernel_vectorcall;
    self->kernel = (nbg_kernel)addr;
    self->threshold = threshold;
    self->method = method;
    self->aslist = aslist;
    self->nargs = nargs;
    Py_INCREF(keep);
    self->keep = keep;
    Py_INCREF(on_error);
    self->on_error = on_error;
    Py_INCREF(fallback);
    self->fallback = fallback;
    if (prepare != Py_None) {
        Py_INCREF(prepare);
        self->prepare = prepare;
    }
    if (read_specs(ins, &self->nin, &self->in_descr, &self->in_nd, "ins") < 0
            || read_specs(outs, &self->nout, &self->out_descr, &self->out_nd, "outs") < 0)
        goto fail;
    if (self->nout < 1 || (!aslist && self->nout != 1)) {
        PyErr_SetString(PyExc_ValueError, "a kernel needs one output, or aslist=True");
        goto fail;
    }
    self->ndims = 0;
    for (i = 0; i < self->nin; i++)
        self->ndims += 2 * self->in_nd[i];
    for (i = 0; i < self->nout; i++)
        self->ndims += 2 * self->out_nd[i];
    self->cache = PyMem_Calloc(self->nout, sizeof(PyObject *));
    if (self->cache == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* elemwise: every operand has the outputs' ndim (the shapes broadcast) */
    self->elemwise = self->prepare == NULL;
    if (self->elemwise) {
        if (self->nin < 1) {
            PyErr_SetString(PyExc_ValueError, "an elemwise kernel needs inputs");
            goto fail;
        }
        for (i = 0; i < self->nin; i++)
            if (self->in_nd[i] != self->out_nd[0])
                break;
        for (int j = 0; j < self->nout && i == self->nin; j++)
            if (self->out_nd[j] != self->out_nd[0])
                i = -1;
        if (i != self->nin) {
            PyErr_SetString(PyExc_ValueError, "an elemwise kernel's operands share one ndim");
            goto fail;
        }
    }
    if (in_cells != Py_None || out_cells != Py_None) {
        if (check_cells(in_cells, self->nin, "in_cells") < 0
                || check_cells(out_cells, self->nout, "out_cells") < 0)
            goto fail;
        Py_INCREF(in_cells);
        self->in_cells = in_cells;
        Py_INCREF(out_cells);
        self->out_cells = out_cells;
        self->method = 0;
    }
    else {
        if (nargs < 0 || nargs > 100000 || !PyTuple_Check(argmap)
                || PyTuple_GET_SIZE(argmap) != self->nin) {
            PyErr_SetString(PyExc_ValueError, "argmap must be a tuple with one index per input");
            goto fail;
        }
        if (consts == NULL)
            consts = PyTuple_New(0);
        else
            Py_INCREF(consts);
        self->consts = consts;
        if (consts == NULL)
            goto fail;
        self->argmap = PyMem_Calloc(self->nin ? self->nin : 1, sizeof(int));
        if (self->argmap == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (i = 0; i < self->nin; i++) {
            long k = PyLong_AsLong(PyTuple_GET_ITEM(argmap, i));
            if (k == -1 && PyErr_Occurred())
                goto fail;
            if (k < 0 || k >= nargs + PyTuple_GET_SIZE(consts)) {
                PyErr_SetString(PyExc_ValueError, "argmap index out of range");
                goto fail;
            }
            self->argmap[i] = (int)k;
        }
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static int
kernel_clear(KernelObject *self)
{
    int j;
    if (self->cache != NULL)
        for (j = 0; j < self->nout; j++)
            Py_CLEAR(self->cache[j]);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->prepare);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->in_cells);
    Py_CLEAR(self->out_cells);
    Py_CLEAR(self->consts);
    return 0;
}

static int
kernel_traverse(KernelObject *self, visitproc visit, void *arg)
{
    int j;
    if (self->cache != NULL)
        for (j = 0; j < self->nout; j++)
            Py_VISIT(self->cache[j]);
    Py_VISIT(self->keep);
    Py_VISIT(self->prepare);
    Py_VISIT(self->on_error);
    Py_VISIT(self->fallback);
    Py_VISIT(self->in_cells);
    Py_VISIT(self->out_cells);
    Py_VISIT(self->consts);
    return 0;
}

static void
kernel_dealloc(KernelObject *self)
{
    int i;
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    kernel_clear(self);
    if (self->in_descr != NULL)
        for (i = 0; i < self->nin; i++)
            Py_XDECREF(self->in_descr[i]);
    if (self->out_descr != NULL)
        for (i = 0; i < self->nout; i++)
            Py_XDECREF(self->out_descr[i]);
    PyMem_Free(self->in_descr);
    PyMem_Free(self->out_descr);
    PyMem_Free(self->in_nd);
    PyMem_Free(self->out_nd);
    PyMem_Free(self->argmap);
    PyMem_Free(self->cache);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* --- calling ----------------------------------------------------------------- */

/* An argument the kernel may read as it is. */
static inline int
acceptable(PyObject *o, PyArray_Descr *descr, int nd)
{
    PyArrayObject *a;
    if (Py_TYPE(o) != &PyArray_Type)
        return 0;
    a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != nd || !PyArray_ISALIGNED(a))
        return 0;
    return PyArray_DESCR(a) == descr || PyArray_EquivTypes(PyArray_DESCR(a), descr);
}

/* The previous output, if nothing but this object references it and it is
   still the plain contiguous array this object allocated. */
static inline int
reusable(PyObject *o, int nd, const npy_intp *shape, PyArray_Descr *descr)
{
    PyArrayObject *a = (PyArrayObject *)o;
    int d;
    if (o == NULL || Py_REFCNT(o) != 1 || Py_TYPE(o) != &PyArray_Type)
        return 0;
    if (((PyArrayObject_fields *)a)->weakreflist != NULL || PyArray_BASE(a) != NULL)
        return 0;
    if (PyArray_NDIM(a) != nd || PyArray_DESCR(a) != descr)
        return 0;
    if (!PyArray_CHKFLAGS(a, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE
                                 | NPY_ARRAY_OWNDATA))
        return 0;
    for (d = 0; d < nd; d++)
        if (PyArray_DIMS(a)[d] != shape[d])
            return 0;
    return 1;
}

static void
put_dims(int64_t **dp, PyArrayObject *a)
{
    int d, nd = PyArray_NDIM(a);
    int64_t *p = *dp;
    for (d = 0; d < nd; d++)
        *p++ = (int64_t)PyArray_DIMS(a)[d];
    for (d = 0; d < nd; d++)
        *p++ = (int64_t)PyArray_STRIDES(a)[d];
    *dp = p;
}

/* The outputs from the Python prepare hook; 1 (use the fallback) if it fails
   with an Exception or gives arrays the kernel cannot write. */
static int
prepared_outputs(KernelObject *self, PyObject **vals, PyObject **outs)
{
    PyObject *list, *res, *seq;
    int i, j;
    list = PyList_New(self->nin);
    if (list == NULL)
        return -1;
    for (i = 0; i < self->nin; i++) {
        Py_INCREF(vals[i]);
        PyList_SET_ITEM(list, i, vals[i]);
    }
    res = PyObject_CallOneArg(self->prepare, list);
    Py_DECREF(list);
    if (res == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return -1;
        PyErr_Clear();
        return 1;
    }
    seq = PySequence_Fast(res, "prepare must return a sequence");
    Py_DECREF(res);
    if (seq == NULL) {
        PyErr_Clear();
        return 1;
    }
    if (PySequence_Fast_GET_SIZE(seq) != self->nout) {
        Py_DECREF(seq);
        return 1;
    }
    for (j = 0; j < self->nout; j++) {
        PyObject *o = PySequence_Fast_GET_ITEM(seq, j);
        if (!acceptable(o, self->out_descr[j], self->out_nd[j])
                || !PyArray_ISWRITEABLE((PyArrayObject *)o)) {
            for (i = 0; i < j; i++)
                Py_CLEAR(outs[i]);
            Py_DECREF(seq);
            return 1;
        }
        Py_INCREF(o);
        outs[j] = o;
    }
    Py_DECREF(seq);
    return 0;
}

/* Run the kernel on vals (nin owned references).  Fills outs (owned) and
   returns 0; 1: the fallback must handle this call (nothing set); -1: error. */
static int
run(KernelObject *self, PyObject **vals, PyObject **outs, void **ptrs, int64_t *dims,
    PyObject *const *errv, Py_ssize_t errn)
{
    int i, j, nd, rc;
    npy_intp shape[NPY_MAXDIMS];
    npy_intp work = 0;
    int64_t *dp = dims;
    char err[NBG_ERRLEN];

    for (i = 0; i < self->nin; i++)
        if (!acceptable(vals[i], self->in_descr[i], self->in_nd[i]))
            return 1;
    if (self->elemwise) {
        PyArrayObject *a = (PyArrayObject *)vals[0];
        nd = self->out_nd[0];
        memcpy(shape, PyArray_DIMS(a), nd * sizeof(npy_intp));
        for (i = 1; i < self->nin; i++) {
            const npy_intp *s = PyArray_DIMS((PyArrayObject *)vals[i]);
            int d;
            for (d = 0; d < nd; d++) {
                if (s[d] == shape[d] || s[d] == 1)
                    continue;
                if (shape[d] != 1)
                    return 1;  /* no broadcast: the fallback names the node */
                shape[d] = s[d];
            }
        }
        for (j = 0; j < self->nout; j++) {
            PyObject *c = self->cache[j];
            if (reusable(c, nd, shape, self->out_descr[j])) {
                Py_INCREF(c);
                outs[j] = c;
            }
            else {
                Py_INCREF(self->out_descr[j]);
                outs[j] = PyArray_Empty(nd, shape, self->out_descr[j], 0);
                if (outs[j] == NULL) {
                    for (i = 0; i < j; i++)
                        Py_CLEAR(outs[i]);
                    return -1;
                }
            }
        }
        work = PyArray_SIZE((PyArrayObject *)outs[0]);
    }
    else {
        int r = prepared_outputs(self, vals, outs);
        if (r)
            return r;
        for (i = 0; i < self->nin; i++)
            if (PyArray_SIZE((PyArrayObject *)vals[i]) > work)
                work = PyArray_SIZE((PyArrayObject *)vals[i]);
        for (j = 0; j < self->nout; j++)
            if (PyArray_SIZE((PyArrayObject *)outs[j]) > work)
                work = PyArray_SIZE((PyArrayObject *)outs[j]);
    }
    for (i = 0; i < self->nin; i++) {
        ptrs[i] = PyArray_DATA((PyArrayObject *)vals[i]);
        put_dims(&dp, (PyArrayObject *)vals[i]);
    }
    for (j = 0; j < self->nout; j++) {
        ptrs[self->nin + j] = PyArray_DATA((PyArrayObject *)outs[j]);
        put_dims(&dp, (PyArrayObject *)outs[j]);
    }
    err[0] = '\0';
    if (work > self->threshold) {
        Py_BEGIN_ALLOW_THREADS
        rc = self->kernel(ptrs, dims, err);
        Py_END_ALLOW_THREADS
    }
    else {
        rc = self->kernel(ptrs, dims, err);
    }
    if (rc != 0) {
        PyObject *res, *errargs;
        err[NBG_ERRLEN - 1] = '\0';
        for (j = 0; j < self->nout; j++)
            Py_CLEAR(outs[j]);
        errargs = PyTuple_New(errn);
        if (errargs == NULL)
            return -1;
        for (i = 0; i < errn; i++) {
            Py_INCREF(errv[i]);
            PyTuple_SET_ITEM(errargs, i, errv[i]);
        }
        res = PyObject_CallFunction(self->on_error, "iyO", rc, err, errargs);
        Py_DECREF(errargs);
        if (res != NULL) {
            Py_DECREF(res);
            PyErr_Format(PyExc_RuntimeError, "the C kernel failed with code %d: %s", rc, err);
        }
        return -1;
    }
    if (self->elemwise) {
        for (j = 0; j < self->nout; j++) {
            if (self->cache[j] != outs[j]) {
                PyObject *old = self->cache[j];
                Py_INCREF(outs[j]);
                self->cache[j] = outs[j];
                Py_XDECREF(old);
            }
        }
    }
    return 0;
}

static PyObject *
kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    KernelObject *self = (KernelObject *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject *vals_s[STACK_OPS], *outs_s[STACK_OPS];
    void *ptrs_s[2 * STACK_OPS];
    int64_t dims_s[STACK_DIMS];
    PyObject **vals = vals_s, **outs = outs_s, *result = NULL;
    void **ptrs = ptrs_s;
    int64_t *dims = dims_s;
    int i, j, rc, got = 0;

    if (self->fallback == NULL || self->on_error == NULL
            || (self->in_cells == NULL && self->consts == NULL)) {
        PyErr_SetString(PyExc_RuntimeError, "this nbgraph kernel object was cleared");
        return NULL;
    }
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)
        goto fallback;
    if (self->in_cells == NULL ? n != self->method + self->nargs : n != 0)
        goto fallback;
    if (self->nin > STACK_OPS || self->nout > STACK_OPS || self->ndims > STACK_DIMS) {
        vals = PyMem_Malloc(sizeof(PyObject *) * (self->nin + 1));
        outs = PyMem_Calloc(self->nout + 1, sizeof(PyObject *));
        ptrs = PyMem_Malloc(sizeof(void *) * (self->nin + self->nout + 1));
        dims = PyMem_Malloc(sizeof(int64_t) * (self->ndims + 1));
        if (vals == NULL || outs == NULL || ptrs == NULL || dims == NULL) {
            PyErr_NoMemory();
            rc = -1;
            goto done;
        }
    }
    for (j = 0; j < self->nout; j++)
        outs[j] = NULL;
    if (self->in_cells == NULL) {
        PyObject *const *argv = args + self->method;
        for (i = 0; i < self->nin; i++) {
            int k = self->argmap[i];
            vals[i] = k < self->nargs ? argv[k] : PyTuple_GET_ITEM(self->consts, k - self->nargs);
        }
    }
    else {
        for (i = 0; i < self->nin; i++) {
            PyObject *cell = PyTuple_GET_ITEM(self->in_cells, i);
            if (PyList_GET_SIZE(cell) < 1) {  /* never for a program's cells */
                rc = 1;
                goto done;
            }
            vals[i] = PyList_GET_ITEM(cell, 0);
        }
    }
    /* hold the inputs: Python code (prepare, on_error) may run meanwhile */
    for (i = 0; i < self->nin; i++)
        Py_INCREF(vals[i]);
    got = 1;
    if (self->in_cells == NULL)
        rc = run(self, vals, outs, ptrs, dims, args + self->method, n - self->method);
    else
        rc = run(self, vals, outs, ptrs, dims, vals, self->nin);
    if (rc != 0)
        goto done;
    if (self->in_cells != NULL) {
        for (j = 0; j < self->nout; j++) {
            PyObject *cell = PyTuple_GET_ITEM(self->out_cells, j);
            if (PyList_GET_SIZE(cell) < 1) {
                PyErr_SetString(PyExc_RuntimeError, "an nbgraph output cell is empty");
                rc = -1;
                goto done;
            }
            PyList_SetItem(cell, 0, outs[j]);  /* steals; cannot fail here */
            outs[j] = NULL;
        }
        Py_INCREF(Py_None);
        result = Py_None;
    }
    else if (self->aslist) {
        result = PyList_New(self->nout);
        if (result != NULL)
            for (j = 0; j < self->nout; j++) {
                PyList_SET_ITEM(result, j, outs[j]);
                outs[j] = NULL;
            }
    }
    else {
        result = outs[0];
        outs[0] = NULL;
    }
done:
    if (got)
        for (i = 0; i < self->nin; i++)
            Py_DECREF(vals[i]);
    if (outs != NULL)
        for (j = 0; j < self->nout; j++)
            Py_XDECREF(outs[j]);
    if (vals != vals_s) {
        PyMem_Free(vals);
        PyMem_Free(outs);
        PyMem_Free(ptrs);
        PyMem_Free(dims);
    }
    if (rc != 1)
        return result;
fallback:
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

static PyObject *
kernel_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
kernel_reset(KernelObject *self, PyObject *Py_UNUSED(ignored))
{
    int j;
    for (j = 0; j < self->nout; j++)
        Py_CLEAR(self->cache[j]);
    Py_RETURN_NONE;
}

static PyObject *
kernel_get_fallback(KernelObject *self, void *closure)
{
    PyObject *f = self->fallback ? self->fallback : Py_None;
    Py_INCREF(f);
    return f;
}

static PyMethodDef kernel_methods[] = {
    {"reset", (PyCFunction)kernel_reset, METH_NOARGS,
     "Drop the previous call's outputs (the next call allocates)."},
    {NULL, NULL, 0, NULL}
};

static PyGetSetDef kernel_getset[] = {
    {"fallback", (getter)kernel_get_fallback, NULL, "the Python path for other calls", NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nbgraph.linkers.c._fastcall.Kernel",
    .tp_basicsize = sizeof(KernelObject),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_vectorcall_offset = offsetof(KernelObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Kernel(address, keep, ins, outs, prepare, on_error, fallback, argmap=None, "
              "nargs=0, method=False, aslist=False, in_cells=None, out_cells=None, "
              "threshold=16384, consts=()): one compiled kernel as a callable.",
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_clear = (inquiry)kernel_clear,
    .tp_weaklistoffset = offsetof(KernelObject, weakreflist),
    .tp_methods = kernel_methods,
    .tp_getset = kernel_getset,
    .tp_descr_get = kernel_descr_get,
    .tp_new = kernel_new,
};

static struct PyModuleDef fastcall_module = {
    PyModuleDef_HEAD_INIT, "_fastcall", "nbgraph's C call path (see fastcall.py).", -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fastcall(void)
{
    PyObject *m;
    import_array();
    if (PyType_Ready(&KernelType) < 0)
        return NULL;
    m = PyModule_Create(&fastcall_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&KernelType);
    if (PyModule_AddObject(m, "Kernel", (PyObject *)&KernelType) < 0
            || PyModule_AddIntConstant(m, "ERRLEN", NBG_ERRLEN) < 0
            || PyModule_AddIntConstant(m, "VERSION", 1) < 0) {
        Py_DECREF(&KernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
