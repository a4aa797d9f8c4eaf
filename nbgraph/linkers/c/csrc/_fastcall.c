/* nbgraph's C call path: one callable object per compiled kernel.
 *
 * A Kernel checks its arguments (exact ndarrays of the expected dtype and
 * ndim, aligned), allocates or reuses its outputs, fills the kernel's
 * ptrs/dims arrays and calls it (calling convention: nbgraph/linkers/c/__init__.py).
 * Anything it does not handle itself (another type, a wrong count, keywords,
 * shapes that do not broadcast, ...) goes to the Python `fallback` with the
 * very same arguments, which does the full checks and raises the proper
 * error.  Built and loaded by nbgraph/linkers/c/fastcall.py.
 *
 * load_module/load_runtime open a compiled module or the thread runtime and
 * make the calls binding them (ABI and version checks, runtime table, kernel
 * addresses), so a process that finds everything on disk never imports cffi.
 *
 * Two parts live in files of their own, filled in where their placeholders
 * stand (fastcall.py's _source): the Kernel object's layout and construction
 * (fastcall_kernel.h) and the opening of libraries (fastcall_open.h).
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Code run once per kernel, module or process (construction, loading, the
   garbage collector's hooks), compiled at -Og: -O3 everywhere cost cc1 2041
   million instructions, this 1506 (cachegrind, this CPU's -march flags); the
   call path (kernel_vectorcall and what it calls) keeps -O3. */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_COLD __attribute__((optimize("Og")))
#else
#define NBG_COLD
#endif
#define NBG_ERRLEN 512
#define FASTCALL_VERSION 2

${kernel_object}
/* --- calling ----------------------------------------------------------------- */

/* An argument the kernel may read as it is. */
static inline int
acceptable(PyObject *o, PyArray_Descr *descr, int nd)
{
    PyArrayObject *a = (PyArrayObject *)o;
    if (Py_TYPE(o) != &PyArray_Type || PyArray_NDIM(a) != nd || !PyArray_ISALIGNED(a))
        return 0;
    return PyArray_DESCR(a) == descr || PyArray_EquivTypes(PyArray_DESCR(a), descr);
}

/* The previous output, if nothing but this object references it and it is
   still the plain contiguous array this object allocated. */
static inline int
reusable(PyObject *o, int nd, const npy_intp *shape, PyArray_Descr *descr)
{
    PyArrayObject *a = (PyArrayObject *)o;
    if (o == NULL || Py_REFCNT(o) != 1 || Py_TYPE(o) != &PyArray_Type)
        return 0;
    if (((PyArrayObject_fields *)a)->weakreflist != NULL || PyArray_BASE(a) != NULL
            || PyArray_NDIM(a) != nd || PyArray_DESCR(a) != descr)
        return 0;
    if (!PyArray_CHKFLAGS(a, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE
                                 | NPY_ARRAY_OWNDATA))
        return 0;
    return memcmp(PyArray_DIMS(a), shape, nd * sizeof(npy_intp)) == 0;
}

static int64_t *
put_operand(void **ptr, int64_t *dp, PyObject *o)
{
    PyArrayObject *a = (PyArrayObject *)o;
    int d, nd = PyArray_NDIM(a);
    *ptr = PyArray_DATA(a);
    for (d = 0; d < nd; d++)
        *dp++ = (int64_t)PyArray_DIMS(a)[d];
    for (d = 0; d < nd; d++)
        *dp++ = (int64_t)PyArray_STRIDES(a)[d];
    return dp;
}

/* Outputs of the broadcast shape of vals less the drop axes: reused or new.
   Returns 0, 1 (shapes that do not broadcast: the fallback's case) or -1. */
static int
shaped_outputs(KernelObject *self, PyObject **vals, PyObject **outs, Py_ssize_t *work)
{
    npy_intp shape[NPY_MAXDIMS], oshape[NPY_MAXDIMS];
    int i, j, d, nd = self->in_nd[0], ond = 0;
    memcpy(shape, PyArray_DIMS((PyArrayObject *)vals[0]), nd * sizeof(npy_intp));
    for (i = 1; i < self->nin; i++) {
        const npy_intp *s = PyArray_DIMS((PyArrayObject *)vals[i]);
        for (d = 0; d < nd; d++) {
            if (s[d] == shape[d] || s[d] == 1)
                continue;
            if (shape[d] != 1)
                return 1;
            shape[d] = s[d];
        }
    }
    *work = 1;  /* the elements iterated, as far as the threshold needs */
    for (d = 0; d < nd && *work <= self->threshold; d++)
        *work = (shape[d] != 0 && *work > PY_SSIZE_T_MAX / shape[d]) ? PY_SSIZE_T_MAX
                                                                      : *work * shape[d];
    for (d = 0; d < nd; d++)
        if (!((self->drop >> d) & 1))
            oshape[ond++] = shape[d];
    for (j = 0; j < self->nout; j++) {
        if (self->inplace[j] >= 0) {  /* the input's dtype and ndim (checked by the caller) */
            PyArrayObject *t = (PyArrayObject *)vals[self->inplace[j]];
            if (!PyArray_ISWRITEABLE(t) || memcmp(PyArray_DIMS(t), oshape,
                                                  ond * sizeof(npy_intp)) != 0)
                return 1;
            Py_INCREF(t);
            outs[j] = (PyObject *)t;
            continue;
        }
        if (reusable(self->cache[j], ond, oshape, self->out_descr[j])) {
            Py_INCREF(self->cache[j]);
            outs[j] = self->cache[j];
            continue;
        }
        Py_INCREF(self->out_descr[j]);
        outs[j] = PyArray_Empty(ond, oshape, self->out_descr[j], 0);
        if (outs[j] == NULL)
            return -1;
    }
    return 0;
}

/* The outputs from the Python prepare hook.  Returns 0; 1 (the fallback's
   case) if it raises an Exception or gives arrays the kernel cannot write; -1. */
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
    seq = PySequence_Fast(res, "");
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
            Py_DECREF(seq);
            return 1;
        }
        Py_INCREF(o);
        outs[j] = o;
    }
    Py_DECREF(seq);
    return 0;
}

/* Run the kernel on vals (held).  Fills outs (new references; the caller
   releases whatever is left in them) and returns 0; 1: the fallback must
   handle this call (no exception set); -1: an exception is set.  A failed
   kernel calls on_error(code, message, errargs), which raises. */
static int
run(KernelObject *self, PyObject **vals, PyObject **outs, PyObject *const *errv,
    Py_ssize_t errn)
{
    void *ptrs[MAX_OPS];
    int64_t dims[MAX_DIMS], *dp = dims;
    Py_ssize_t work = 0;
    char err[NBG_ERRLEN];
    int i, j, rc;

    for (i = 0; i < self->nin; i++)
        if (!acceptable(vals[i], self->in_descr[i], self->in_nd[i]))
            return 1;
    if (self->prepare == NULL) {
        rc = shaped_outputs(self, vals, outs, &work);
    }
    else {
        rc = prepared_outputs(self, vals, outs);
        work = PY_SSIZE_T_MAX;  /* another Op: any amount of work */
    }
    if (rc != 0)
        return rc;
    for (i = 0; i < self->nin; i++)
        dp = put_operand(&ptrs[i], dp, vals[i]);
    for (j = 0; j < self->nout; j++)
        dp = put_operand(&ptrs[self->nin + j], dp, outs[j]);
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
        PyObject *res, *errargs = PyTuple_New(errn);
        err[NBG_ERRLEN - 1] = '\0';
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
    for (j = 0; self->prepare == NULL && j < self->nout; j++) {
        PyObject *old = self->cache[j];
        if (old == outs[j] || self->inplace[j] >= 0)
            continue;
        self->cache[j] = NULL;
        if (self->limit < 0 || PyArray_NBYTES((PyArrayObject *)outs[j]) <= self->limit) {
            Py_INCREF(outs[j]);
            self->cache[j] = outs[j];
        }
        Py_XDECREF(old);
    }
    return 0;
}

static PyObject *
kernel_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    KernelObject *self = (KernelObject *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    PyObject *vals[MAX_OPS], *outs[MAX_OPS], *result = NULL;
    int i, j, rc;

    if (self->fallback == NULL || self->on_error == NULL || self->consts == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "this nbgraph kernel object was cleared");
        return NULL;
    }
    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)
            || n != (self->in_cells == NULL ? self->method + self->nargs : 0))
        goto fallback;
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
            if (PyList_GET_SIZE(cell) < 1)  /* never for a program's cells */
                goto fallback;
            vals[i] = PyList_GET_ITEM(cell, 0);
        }
    }
    /* hold the inputs: Python code (prepare, on_error) may run meanwhile */
    for (i = 0; i < self->nin; i++)
        Py_INCREF(vals[i]);
    for (j = 0; j < self->nout; j++)
        outs[j] = NULL;
    if (self->in_cells == NULL)
        rc = run(self, vals, outs, args + self->method, n - self->method);
    else
        rc = run(self, vals, outs, vals, self->nin);
    if (rc == 0 && self->in_cells != NULL) {
        for (j = 0; j < self->nout && rc == 0; j++) {
            PyObject *cell = PyTuple_GET_ITEM(self->out_cells, j);
            if (PyList_GET_SIZE(cell) < 1) {
                PyErr_SetString(PyExc_RuntimeError, "an nbgraph output cell is empty");
                rc = -1;
                break;
            }
            PyList_SetItem(cell, 0, outs[j]);  /* steals the reference */
            outs[j] = NULL;
        }
        if (rc == 0) {
            Py_INCREF(Py_None);
            result = Py_None;
        }
    }
    else if (rc == 0 && self->aslist) {
        result = PyList_New(self->nout);
        for (j = 0; result != NULL && j < self->nout; j++) {
            PyList_SET_ITEM(result, j, outs[j]);
            outs[j] = NULL;
        }
    }
    else if (rc == 0) {
        result = outs[0];
        outs[0] = NULL;
    }
    for (i = 0; i < self->nin; i++)
        Py_DECREF(vals[i]);
    for (j = 0; j < self->nout; j++)
        Py_XDECREF(outs[j]);
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

NBG_COLD static PyObject *
kernel_reset(KernelObject *self, PyObject *Py_UNUSED(ignored))
{
    int j;
    for (j = 0; j < self->nout; j++)
        Py_CLEAR(self->cache[j]);
    Py_RETURN_NONE;
}

static PyMethodDef kernel_methods[] = {
    {"reset", (PyCFunction)kernel_reset, METH_NOARGS,
     "Drop the previous call's outputs (the next call allocates)."},
    {NULL, NULL, 0, NULL}
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "nbgraph.linkers.c._fastcall.Kernel",
    .tp_basicsize = sizeof(KernelObject),
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_vectorcall_offset = offsetof(KernelObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    /* METHOD_DESCRIPTOR: as a class's __call__, it gets the instance first */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Kernel(address, keep, ins, outs, prepare, on_error, fallback, argmap=None, "
              "nargs=0, method=False, aslist=False, in_cells=None, out_cells=None, "
              "threshold=16384, consts=(), limit=-1, drop=0, inplace=None): one compiled kernel as a "
              "callable (see nbgraph/linkers/c/runtime.py, make_kernel_call).",
    .tp_traverse = (traverseproc)kernel_traverse,
    .tp_clear = (inquiry)kernel_clear,
    .tp_methods = kernel_methods,
    .tp_descr_get = kernel_descr_get,
    .tp_new = kernel_new,
};

${opening}
static PyMethodDef fastcall_functions[] = {
    {"load_module", fastcall_load_module, METH_VARARGS,
     "load_module(path, abi, runtime) -> (handle, abi, status, kernels, freefns)"},
    {"load_runtime", fastcall_load_runtime, METH_O,
     "load_runtime(path) -> (handle, version, table)"},
    {"configure_runtime", fastcall_configure_runtime, METH_VARARGS,
     "configure_runtime(handle, nthreads, spin_ns) -> status"},
    {"close_library", fastcall_close_library, METH_O, "close_library(handle)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef fastcall_module = {
    PyModuleDef_HEAD_INIT, "_fastcall", "nbgraph's C call path (see fastcall.py).", -1,
    fastcall_functions, NULL, NULL, NULL, NULL,
};

NBG_COLD PyMODINIT_FUNC
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
            || PyModule_AddIntConstant(m, "VERSION", FASTCALL_VERSION) < 0) {
        Py_DECREF(&KernelType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
