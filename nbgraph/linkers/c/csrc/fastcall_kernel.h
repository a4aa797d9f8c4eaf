/* The Kernel object of nbgraph's call path (_fastcall.c): its layout, its
 * construction from the arguments runtime.py's make_kernel_call gives it
 * (checked once, here, so a call checks only its own arguments), and the garbage
 * collector's hooks.  All of it runs once per kernel, at NBG_COLD.
 *
 * Needs, before it: Python.h and numpy/arrayobject.h, and NBG_COLD. */

#define MAX_OPS 64     /* operands of one kernel */
#define MAX_DIMS 512   /* entries of one call's dims array */

typedef int (*nbg_kernel)(void **, const int64_t *, char *);

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    nbg_kernel kernel;
    int nin, nout;
    int nargs;            /* positional arguments expected (args mode) */
    int method;           /* args[0] is the bound object: skipped, given to the fallback */
    int aslist;           /* return a list of the outputs */
    int ndims;            /* entries of the dims array */
    unsigned long long drop;  /* no prepare: bit d set = output drops input axis d */
    Py_ssize_t threshold; /* release the GIL above this many elements (no prepare) */
    Py_ssize_t limit;     /* keep outputs up to this many bytes for reuse (< 0: any) */
    int argmap[MAX_OPS];  /* input i is argument argmap[i], or consts[argmap[i] - nargs] */
    int in_nd[MAX_OPS], out_nd[MAX_OPS];
    int inplace[MAX_OPS]; /* no prepare: output j is input inplace[j] (>= 0), or new */
    PyArray_Descr *in_descr[MAX_OPS], *out_descr[MAX_OPS];
    PyObject *cache[MAX_OPS];  /* the previous call's outputs (no prepare), or NULL */
    PyObject *keep, *prepare, *on_error, *fallback, *consts;
    PyObject *in_cells, *out_cells;  /* tuples of lists (cells mode), or NULL */
} KernelObject;

/* --- construction ---------------------------------------------------------- */

/* Read a tuple of (type_num, ndim) pairs. */
NBG_COLD static int
read_specs(PyObject *specs, int *count, PyArray_Descr **descrs, int *nds, const char *what)
{
    Py_ssize_t n, i;
    if (!PyTuple_Check(specs) || PyTuple_GET_SIZE(specs) > MAX_OPS) {
        PyErr_Format(PyExc_ValueError, "%s must be a tuple of at most %d (type_num, ndim)",
                     what, MAX_OPS);
        return -1;
    }
    n = PyTuple_GET_SIZE(specs);
    for (i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(specs, i);
        int type_num, nd;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "ii", &type_num, &nd)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "%s must hold (type_num, ndim) pairs", what);
            return -1;
        }
        if (nd < 0 || nd > NPY_MAXDIMS
                || ((type_num < NPY_BOOL || type_num > NPY_CLONGDOUBLE) && type_num != NPY_HALF)) {
            PyErr_Format(PyExc_ValueError, "unsupported (%d, %d) in %s", type_num, nd, what);
            return -1;
        }
        descrs[i] = PyArray_DescrFromType(type_num);
        if (descrs[i] == NULL)
            return -1;
        nds[i] = nd;
        *count = (int)i + 1;
    }
    return 0;
}

NBG_COLD static int
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

/* No prepare hook: the inputs share one ndim, the outputs have it less the drop axes. */
NBG_COLD static int
check_shapes(KernelObject *self)
{
    int i, nd, kept = 0;
    if (self->nin < 1) {
        PyErr_SetString(PyExc_ValueError, "a kernel without prepare needs inputs");
        return -1;
    }
    nd = self->in_nd[0];
    for (i = 0; i < nd; i++)
        kept += !((self->drop >> i) & 1);
    for (i = 0; i < self->nin; i++)
        if (self->in_nd[i] != nd)
            kept = -1;
    for (i = 0; i < self->nout; i++)
        if (self->out_nd[i] != kept)
            kept = -1;
    if (kept < 0 || (nd < 64 && (self->drop >> nd) != 0)) {
        PyErr_SetString(PyExc_ValueError, "the inputs must share one ndim, and the outputs "
                        "have it less the dropped axes");
        return -1;
    }
    return 0;
}

NBG_COLD static int
read_argmap(KernelObject *self, PyObject *argmap)
{
    int i;
    if (self->nargs < 0 || !PyTuple_Check(argmap) || PyTuple_GET_SIZE(argmap) != self->nin) {
        PyErr_SetString(PyExc_ValueError, "argmap must be a tuple with one index per input");
        return -1;
    }
    for (i = 0; i < self->nin; i++) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(argmap, i));
        if (k == -1 && PyErr_Occurred())
            return -1;
        if (k < 0 || k >= self->nargs + PyTuple_GET_SIZE(self->consts)) {
            PyErr_SetString(PyExc_ValueError, "argmap index out of range");
            return -1;
        }
        self->argmap[i] = (int)k;
    }
    return 0;
}

static PyObject *kernel_vectorcall(PyObject *, PyObject *const *, size_t, PyObject *);

NBG_COLD static PyObject *
kernel_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"address", "keep", "ins", "outs", "prepare", "on_error",
                             "fallback", "argmap", "nargs", "method", "aslist", "in_cells",
                             "out_cells", "threshold", "consts", "limit", "drop", "inplace",
                             NULL};
    PyObject *address, *keep, *ins, *outs, *prepare, *on_error, *fallback;
    PyObject *argmap = Py_None, *in_cells = Py_None, *out_cells = Py_None, *consts = NULL;
    PyObject *inplace = NULL;
    int nargs = 0, method = 0, aslist = 0, i;
    unsigned long long drop = 0;
    Py_ssize_t threshold = 16384, limit = -1;
    KernelObject *self;
    void *addr;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOO|OippOOnO!nKO!", kwlist, &address,
                                     &keep, &ins, &outs, &prepare, &on_error, &fallback,
                                     &argmap, &nargs, &method, &aslist, &in_cells, &out_cells,
                                     &threshold, &PyTuple_Type, &consts, &limit, &drop,
                                     &PyTuple_Type, &inplace))
        return NULL;
    if (!PyLong_Check(address) || !PyCallable_Check(on_error) || !PyCallable_Check(fallback)
            || (prepare != Py_None && !PyCallable_Check(prepare))) {
        PyErr_SetString(PyExc_TypeError, "address must be an int; prepare (or None), "
                        "on_error and fallback callables");
        return NULL;
    }
    addr = PyLong_AsVoidPtr(address);
    if (addr == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "address is NULL");
        return NULL;
    }
    self = (KernelObject *)type->tp_alloc(type, 0);  /* zeroed */
    if (self == NULL)
        return NULL;
    self->vectorcall = kernel_vectorcall;
    self->kernel = (nbg_kernel)addr;
    self->threshold = threshold;
    self->limit = limit;
    self->drop = drop;
    self->method = method;
    self->aslist = aslist;
    self->nargs = nargs;
    Py_INCREF(keep);
    self->keep = keep;
    Py_INCREF(on_error);
    self->on_error = on_error;
    Py_INCREF(fallback);
    self->fallback = fallback;
    self->consts = consts != NULL ? consts : PyTuple_New(0);
    Py_XINCREF(consts);
    if (self->consts == NULL)
        goto fail;
    if (prepare != Py_None) {
        Py_INCREF(prepare);
        self->prepare = prepare;
    }
    if (read_specs(ins, &self->nin, self->in_descr, self->in_nd, "ins") < 0
            || read_specs(outs, &self->nout, self->out_descr, self->out_nd, "outs") < 0)
        goto fail;
    if (self->nout < 1 || (!aslist && self->nout != 1) || self->nin + self->nout > MAX_OPS) {
        PyErr_Format(PyExc_ValueError, "a kernel has 1 output (or aslist=True), at most %d "
                     "operands", MAX_OPS);
        goto fail;
    }
    for (i = 0; i < self->nin; i++)
        self->ndims += 2 * self->in_nd[i];
    for (i = 0; i < self->nout; i++)
        self->ndims += 2 * self->out_nd[i];
    if (self->ndims > MAX_DIMS) {
        PyErr_SetString(PyExc_ValueError, "too many dimensions for one kernel call");
        goto fail;
    }
    if (self->prepare == NULL && check_shapes(self) < 0)
        goto fail;
    for (i = 0; i < self->nout; i++) {
        long k = -1;
        if (inplace != NULL && PyTuple_GET_SIZE(inplace) == self->nout) {
            k = PyLong_AsLong(PyTuple_GET_ITEM(inplace, i));
            if (k == -1 && PyErr_Occurred())
                goto fail;
        }
        else if (inplace != NULL) {
            k = -2;
        }
        if (k < -1 || k >= self->nin || (k >= 0 && (self->prepare != NULL || self->drop))) {
            PyErr_SetString(PyExc_ValueError, "inplace: one input index or -1 per output "
                            "(no prepare, no drop)");
            goto fail;
        }
        self->inplace[i] = (int)k;
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
    else if (read_argmap(self, argmap) < 0) {
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

NBG_COLD static int
kernel_clear(KernelObject *self)
{
    int j;
    for (j = 0; j < self->nout; j++)
        Py_CLEAR(self->cache[j]);
    Py_CLEAR(self->keep);
    Py_CLEAR(self->prepare);
    Py_CLEAR(self->on_error);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->consts);
    Py_CLEAR(self->in_cells);
    Py_CLEAR(self->out_cells);
    return 0;
}

NBG_COLD static int
kernel_traverse(KernelObject *self, visitproc visit, void *arg)
{
    int j;
    for (j = 0; j < self->nout; j++)
        Py_VISIT(self->cache[j]);
    Py_VISIT(self->keep);
    Py_VISIT(self->prepare);
    Py_VISIT(self->on_error);
    Py_VISIT(self->fallback);
    Py_VISIT(self->consts);
    Py_VISIT(self->in_cells);
    Py_VISIT(self->out_cells);
    return 0;
}

NBG_COLD static void
kernel_dealloc(KernelObject *self)
{
    int i;
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    for (i = 0; i < self->nin; i++)
        Py_XDECREF(self->in_descr[i]);
    for (i = 0; i < self->nout; i++)
        Py_XDECREF(self->out_descr[i]);
    Py_TYPE(self)->tp_free((PyObject *)self);
}
