/* Opening libraries without cffi (part of _fastcall.c): a kernel module or the
 * thread runtime is dlopen'ed and bound here, with its ABI and version
 * checks, so a process that finds everything on disk never imports cffi.
 * Each function runs once per library, at NBG_COLD.
 *
 * Needs, before it: Python.h, dlfcn.h and stdint.h, and NBG_COLD. */

NBG_COLD static void *
open_library(PyObject *path)
{
    const char *name = PyUnicode_AsUTF8(path);
    void *handle;
    if (name == NULL)
        return NULL;
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *why = dlerror();
        PyErr_Format(PyExc_OSError, "cannot load %s: %s", name, why ? why : "dlopen failed");
    }
    return handle;
}

NBG_COLD static void *
find_symbol(void *handle, const char *name)
{
    void *found = dlsym(handle, name);
    if (found == NULL)
        PyErr_Format(PyExc_AttributeError, "the library has no symbol %s", name);
    return found;
}

NBG_COLD static PyObject *
address_tuple(void *handle, const char *count_name, const char *at_name)
{
    int (*count)(void) = (int (*)(void))find_symbol(handle, count_name);
    void *(*at)(int) = (void *(*)(int))find_symbol(handle, at_name);
    PyObject *out;
    int i, n;
    if (count == NULL || at == NULL)
        return NULL;
    n = count();
    if (n < 0) {
        PyErr_Format(PyExc_OSError, "%s returned %d", count_name, n);
        return NULL;
    }
    out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *item = PyLong_FromVoidPtr(at(i));
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, item);
    }
    return out;
}

/* load_module(path, abi, runtime) -> (handle, abi found, status, kernels, freefns):
 * dlopen a kernel module; when its nbg_abi() is `abi`, bind it to the runtime
 * table at address `runtime` (0: none) and read its kernel and free-function
 * addresses (else status -1 and empty tuples: nothing of it ran but nbg_abi). */
NBG_COLD static PyObject *
fastcall_load_module(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *path, *kernels = NULL, *freefns = NULL, *result = NULL;
    int abi, found, status = -1;
    unsigned long long runtime;
    int (*get_abi)(void);
    int (*attach)(const void *);
    void *handle;
    if (!PyArg_ParseTuple(args, "UiK", &path, &abi, &runtime))
        return NULL;
    handle = open_library(path);
    if (handle == NULL)
        return NULL;
    get_abi = (int (*)(void))find_symbol(handle, "nbg_abi");
    attach = (int (*)(const void *))find_symbol(handle, "nbg_attach_runtime");
    if (get_abi == NULL || attach == NULL)
        goto done;
    found = get_abi();
    if (found == abi) {
        status = attach((const void *)(uintptr_t)runtime);
        if (status == 0) {
            kernels = address_tuple(handle, "nbg_nkernels", "nbg_kernel_at");
            freefns = kernels ? address_tuple(handle, "nbg_nfreefns", "nbg_freefn_at") : NULL;
            if (freefns == NULL)
                goto done;
        }
    }
    if (kernels == NULL && (kernels = PyTuple_New(0)) == NULL)
        goto done;
    if (freefns == NULL && (freefns = PyTuple_New(0)) == NULL)
        goto done;
    result = Py_BuildValue("NiiOO", PyLong_FromVoidPtr(handle), found, status, kernels,
                           freefns);
done:
    Py_XDECREF(kernels);
    Py_XDECREF(freefns);
    if (result == NULL)
        dlclose(handle);
    return result;
}

/* load_runtime(path) -> (handle, nbg_rt_version(), nbg_rt_get() as an address):
 * dlopen the thread runtime (configure it with configure_runtime). */
NBG_COLD static PyObject *
fastcall_load_runtime(PyObject *Py_UNUSED(self), PyObject *path)
{
    void *handle;
    int (*get_version)(void);
    const void *(*get_table)(void);
    if (!PyUnicode_Check(path)) {
        PyErr_SetString(PyExc_TypeError, "load_runtime needs a path (str)");
        return NULL;
    }
    handle = open_library(path);
    if (handle == NULL)
        return NULL;
    get_version = (int (*)(void))find_symbol(handle, "nbg_rt_version");
    get_table = (const void *(*)(void))find_symbol(handle, "nbg_rt_get");
    if (get_version == NULL || get_table == NULL) {
        dlclose(handle);
        return NULL;
    }
    return Py_BuildValue("NiN", PyLong_FromVoidPtr(handle), get_version(),
                         PyLong_FromVoidPtr((void *)get_table()));
}

/* configure_runtime(handle, nthreads, spin_ns) -> nbg_rt_configure's status */
NBG_COLD static PyObject *
fastcall_configure_runtime(PyObject *Py_UNUSED(self), PyObject *args)
{
    unsigned long long handle;
    int nthreads;
    long spin;
    int (*configure)(int, long);
    if (!PyArg_ParseTuple(args, "Kil", &handle, &nthreads, &spin))
        return NULL;
    configure = (int (*)(int, long))find_symbol((void *)(uintptr_t)handle, "nbg_rt_configure");
    if (configure == NULL)
        return NULL;
    return PyLong_FromLong(configure(nthreads, spin));
}

/* close_library(handle): dlclose a handle load_module or load_runtime returned */
NBG_COLD static PyObject *
fastcall_close_library(PyObject *Py_UNUSED(self), PyObject *arg)
{
    void *handle = PyLong_AsVoidPtr(arg);
    if (handle == NULL && PyErr_Occurred())
        return NULL;
    if (handle != NULL)
        dlclose(handle);
    Py_RETURN_NONE;
}
