"""The C linkers: generated C, compiled by the system C compiler, loaded with cffi.

Linkers
=======

``make_linker("c")``
    every node runs as a compiled kernel; a graph holding a node that cannot
    (its Op has no ``c_code``, or a value's Type has no C convention) is
    refused with :class:`CLinkerRefusal` naming the node and its Op.
``make_linker("cvm")``
    kernels where a node has C code, ``perform`` elsewhere (``Dot`` stays
    with NumPy's BLAS; view-only Ops such as DimShuffle, whose C would only
    re-check metadata, run their cheap ``perform``).
``make_linker("debug")``
    :class:`nbgraph.linkers.debug.DebugLinker`: runs ``perform`` and C side by
    side and cross-checks them.

:func:`default_linker` is ``"cvm"`` when a C compiler works (probed once and
remembered) and ``"py"`` otherwise, with one warning.

Compilation
===========

All C-capable nodes of one compiled function go into ONE C module (equal
kernels are emitted once).  The module is compiled by running the compiler
directly (``cc -O3 -fPIC -shared ...``, flags probed once per compiler and
CPU, see :mod:`~nbgraph.linkers.c.compiler`) and loaded in cffi's ABI mode
(``ffi.dlopen``): no Python C-API is used by generated code, and nothing is
compiled against Python's headers.  Modules are cached in memory and on disk
(:mod:`~nbgraph.linkers.c.cache`).  A function-cache hit (a graph compiled
before, in any process) opens its module and the runtime library through the
call-path extension instead (:class:`~nbgraph.linkers.c.fastcall.NativeModule`:
the same checks and binding, no cffi import), and calls its kernels through the
extension's ``Kernel`` objects (:mod:`~nbgraph.linkers.c.kernel_calls`); the
cffi objects are made only if a fallback needs them.

Compile latency
---------------

A new graph waits for the C compiler, so a module holds as little as
possible (measured on this 2-core machine, compiler CPU of a new 6-op
elementwise chain: ~430 ms before, ~110-140 ms now, under load):

* the helpers every kernel calls (messages, shape checks, the general
  iterator, the elementwise loop driver ``nbg_run_loop``) are compiled once
  into the runtime library and reached through its table
  (``csrc/helpers.h``, ``csrc/common.h``); a module holds only its kernels;
* an elementwise kernel emits one vectorisable unit-stride row, one strided
  row compiled at -O1 (``NBG_STRIDED_ROW``) and a description of its loop
  that the runtime's driver checks and runs;
* the module head parses ``math.h`` only (memcpy and friends are declared);
* on a first use the compiler probe *is* the runtime library's build (with
  every optional flag, checked in a bare-interpreter child before this
  process runs any of it), started as soon as a function asks for linker
  "c"/"cvm" (:func:`prepare`, so it overlaps the rewrites), its two units
  spawned at once by the calling thread (:mod:`~nbgraph.linkers.c.prestart`:
  the probe's thread would wait for the GIL between system calls); the first
  module is generated with the probe's usual answer and compiles meanwhile,
  and is loaded only once the probe agrees (else it is generated again); the
  call-path extension builds after it and is not waited for at all
  (:class:`~nbgraph.linkers.c.fastcall.Upgrade`);
* while a new module compiles, the thread waiting for it makes the program
  and its kernel calls but for the kernels' addresses
  (:mod:`nbgraph.linkers.meanwhile`), so little Python is left between the
  compiler's exit and the first result.

Measured and not taken: ``-O2`` instead of ``-O3`` saves ~10% of a kernel
module's compile time but leaves loops of transcendental functions
unvectorised (GCC 12's very-cheap cost model), which would slow steady-state
loops several-fold; a quick ``-O1`` tier replaced later by the ``-O3``
build would change results in the last bits (vectorised libmvec calls and
scalar libm differ), so it is not done.

Big loops use several cores through the runtime library in plain C
(:mod:`~nbgraph.linkers.c.threads`): a process-wide pool of
``NBGRAPH_NUM_THREADS`` threads (default: the CPUs this process may use; the
calling thread is one of them), built once with the probed compiler and
cached beside the modules (``runtime-<key>.so``).  Each module is bound to
it after loading (with one thread too: no worker is started).  Where the
runtime cannot be built, modules are generated standalone (they compile
the helpers themselves) and run every loop serially.  A loop is split only
above a size that depends on the cost of its element; a call made while
the pool is busy (another Python thread) runs serially; a forked child
starts its own workers.  Elementwise
results never depend on the thread count, and neither do reductions (fixed
blocks merged in a fixed order: bit-identical to the serial code).

Calling convention (ABI version :data:`~nbgraph.linkers.c.compiler.ABI_VERSION`)
=================================================================================

Every C-run node becomes a *kernel*::

    int kernel(void **ptrs, const int64_t *dims, char *err);

``ptrs``
    one entry per operand, the node's inputs then its outputs:

    * tensor (TensorType): the address of the first element.  Arrays are
      passed as they are (contiguous, strided, negative or zero strides);
      the Python side only checks their dtype, ndim and alignment (copying a
      misaligned array) — ``ffi.from_buffer`` checks neither;
    * opaque pointer (CDataType) input: the pointer itself;
    * opaque pointer output: the address of a ``void *`` cell the kernel
      fills (the Python side wraps the result with ``ffi.gc(p, freefunc)``,
      so ``freefunc`` runs when the value is released).
``dims``
    for each tensor operand with ``ndim > 0``, in the same order: its
    ``ndim`` sizes, then its ``ndim`` byte strides (int64).
``err``
    a 512-byte buffer for a NUL-terminated message.
return
    0 on success; otherwise an error code (1 ValueError, 2 TypeError,
    3 IndexError, 4 MemoryError, 5 RuntimeError) turned into that Python
    exception, named after the node, by the Program.

Outputs are allocated by NumPy before the call (``np.empty``; NumPy's
allocator uses huge pages for big arrays, far cheaper than fresh malloc'd
memory), as the Op's :class:`~nbgraph.core.c_interface.OutputRule` says
(``op.c_output_rule(node)``: broadcast, broadcast in place of an input, drop
axes, same as an input, static, or the Op's own ``c_prepare_outputs`` hook);
:mod:`~nbgraph.linkers.c.outputs` turns the rule into the Python preparation
and into the C call path's options, so the linker never asks which Op it
runs.  Kernels re-check in C every size they rely on, so a wrong shape fails
as a Python exception, never as a crash.

The Types generate the C that reads these arguments (their CLinkerType
hooks): ``c_declare`` / ``c_init`` declare and clear the C variables of an
operand named ``name``; ``c_extract`` (inputs) and ``c_extract_out``
(outputs) read ``sub["slot"]`` (``ptrs[j]``, or for a pointer output the
cell ``*(void **)ptrs[j]``) and ``sub["dims"]`` (the operand's entries of
``dims``); ``c_sync`` writes an output back to its slot; ``c_cleanup``
releases what extract acquired.  A tensor named ``x`` is ``T *x`` plus
``int64_t x_dims[ndim]`` and ``int64_t x_strides[ndim]`` (bytes); a
CDataType value is a variable of its ``ctype``.  Each Type says how it is
passed with ``c_arg_kind`` ("tensor" or "cdata").

An Op runs as C only if it derives from
:class:`~nbgraph.core.c_interface.CLinkerOp`, which declares every hook this
linker calls.  Its ``c_code(node, name, inputs, outputs, sub)`` returns the kernel's
statements over those names; ``sub["fail"]`` aborts the kernel (after
``sub["set_error"] % '"message"'`` or ``nbg_errorf(sub["err"], fmt, ...)``;
``nbg_status = NBG_TYPE_ERROR;`` first picks another exception class).
``c_support_code(node)`` and ``c_headers()`` add definitions and includes
(each distinct block once per module); ``c_code_cache_version()`` versions
the code.  Code that must run as a separate function (the tasks of a
parallel loop) appends its definitions to the list ``sub["helpers"]``,
named with the prefix ``sub["kernel"]`` (unique per kernel); they are
emitted just before the kernel.  The prelude gives them
``nbg_parallel(task, ctx, n, grain, min_n)`` (``task(ctx, begin, end)``
over ``[0, n)``, split across the pool when ``n >= min_n``),
``nbg_fail_once`` (the first failing task's status and message) and
``nbg_run_loop`` (an elementwise loop described by the kernel, see
:mod:`nbgraph.tensor.c_code.parallel`).

The module exports, besides its static kernels::

    int nbg_abi(void);                      /* ABI_VERSION */
    int nbg_nkernels(void);
    nbg_kernel nbg_kernel_at(int k);
    int nbg_nfreefns(void);
    nbg_freefn nbg_freefn_at(int k);        /* the CDataType freefuncs */
    int nbg_attach_runtime(const void *rt);   /* the runtime's table (NULL: standalone only) */

so one cdef serves every module (shipped pre-parsed in ``_ffi.py``, so
pycparser is never imported).  cffi releases the GIL during each kernel
call, so kernels of different Functions run in parallel in threads (one
Function object is not re-entrant: it owns its storage cells).

The Python side of a call
=========================

The C call path (:mod:`~nbgraph.linkers.c.fastcall`): a small CPython
extension, ``_fastcall.c``, compiled against Python's and NumPy's headers
on a thread when the first C module is built and cached beside the modules
(the same checks: a bad file is rebuilt, an unsafe one refused); programs
linked before it is in call their kernels through cffi and switch to it at
their first run after (:class:`~nbgraph.linkers.c.fastcall.Upgrade`).  Its
``Kernel`` object, a vectorcall callable, wraps one kernel over tensors: it
checks each input (exact ndarray, the operand's dtype and ndim, aligned),
makes the outputs (a "broadcast" rule's shape is the broadcast of the
inputs, an in-place output is its target input, a "drop_axes" rule's shape
is the broadcast less its axes, all done in C; other rules call the Python
preparation of :mod:`~nbgraph.linkers.c.outputs`), fills ``ptrs``/``dims``, calls the
kernel and turns an error code into the exception named after the node.
The GIL is released during the call, except for a broadcast or drop_axes rule
over at most 16k elements (releasing it costs ~0.1 us).  Anything else
(another type, shapes that do not broadcast, keywords, a wrong count) goes
to a Python fallback with the same arguments, which converts or raises the
usual error.  An output array of the previous call that nobody references
any more (reference count 1, no weak reference, no view, still the
contiguous writeable array it allocated) is written again, whatever its
size for a function's results, up to 64 KiB for intermediates (so peak
memory stays as it was); an array the caller, a view or another cell still
holds is never reused.

A Function that is one kernel over its inputs (and constants) gets a
``Kernel`` as its class's ``__call__``, so ``f(a, b)`` runs no Python: with
``trust_input``, and without it when every input Type accepts exact
ndarrays unchanged (``TensorType.filter_fast_path``).  Setting
``trust_input`` or ``profile`` regenerates the call path.  In other
programs each kernel node's thunk is a ``Kernel`` reading its input cells
and filling its output cells; the program's ``run`` is straight-line
Python calling them.

Its fallback, and the whole path when the extension cannot be built (no
headers, ``NBGRAPH_C_FASTCALL=0``), is a thunk generated as straight-line
Python (:func:`~nbgraph.linkers.c.runtime.make_fast_thunk`) calling the
kernel through cffi, with the same checks (cffi pointers of arrays up to
64 KiB are cached) and the same reuse of unreferenced outputs up to 64 KiB.
Nodes with opaque-pointer operands go through the generic
:class:`~nbgraph.linkers.c.runtime.NodeCall`.

Constants as kernel arguments
=============================

A module's C text depends on the graph's structure, not on its float
constants: an Op may generate its kernel from an equivalent *kernel node*
(``CLinkerOp.c_constant_arguments``) that reads constants from inputs
appended after its own (Elemwise and FusedReduce do, for every float
constant but zero, infinities, NaN, powers of two and ``pow`` exponents,
which the C compiler exploits; see :mod:`nbgraph.tensor.c_code.constants`).
So ``x * 0.6 + y`` after ``x * 0.5 + y`` reuses the compiled module, while
the graph keeps its constants for rewrites and constant folding
(:mod:`~nbgraph.linkers.c.kernel_nodes` maps the Program's storage onto the
kernel node).  A kernel's C text is also memoised by structure, and the
generated Python of calls is compiled once per text
(:mod:`nbgraph.linkers.codecache`), so a structurally known graph links
without generating anything again.

Background compilation (``linker="cvm"``)
=========================================

A module that is in neither the memory nor the disk cache is compiled on a
worker thread while the function runs its nodes with ``perform``; the
kernels are installed before the first run after the build
(``f.program.wait_compiled()`` waits for it, ``f.program.kinds`` tells
which way each node runs).  So a new graph gives its first result at once
and C speed ~0.1-0.5 s later; a compile error leaves the function in Python
with one warning.  Results of the two paths agree to within the output
Type's ``values_eq_approx`` (transcendental functions may differ by an ulp
or two).  ``linker="c"`` and ``"debug"`` always compile before returning;
``nbgraph.linkers.c.background.ENABLED = False`` or
``NBGRAPH_C_BACKGROUND=0`` makes ``"cvm"`` do so too.
"""

import threading
import warnings

from nbgraph.linkers.c.cache import (
    CacheSecurityError,
    CacheUnwritableWarning,
    CacheWriteError,
    cache_info,
    clear_cache,
    get_cache,
)
from nbgraph.linkers.c import threads
from nbgraph.linkers.c.compiler import (
    ABI_VERSION,
    CompileError,
    CompilerUnavailable,
    probe,
    probe_nowait,
)
from nbgraph.linkers.c.linker import CLinker, CLinkerRefusal, c_capable

__all__ = ["default_linker", "make_linker", "compiler_works", "prepare", "CLinker",
           "CLinkerRefusal",
           "CompileError", "CompilerUnavailable", "CacheSecurityError", "CacheWriteError",
           "CacheUnwritableWarning", "ABI_VERSION",
           "cache_info", "clear_cache", "c_capable"]

_default = None
_default_lock = threading.Lock()


def compiler_works():
    """(True, None) when the C compiler works (probed once), else (False, reason)."""
    try:
        probe(get_cache())
        return True, None
    except (CompilerUnavailable, OSError) as exc:
        return False, str(exc)


def prepare(runtime=True):
    """Start, on threads, what a function linked with C will need and this process
    lacks: the compiler probe (on a first use it builds the runtime library,
    see :func:`~nbgraph.linkers.c.compiler.probe_nowait`), else, when
    ``runtime``, the runtime library.  Returns at once; called when a function
    asks for linker "c" or "cvm" (``runtime=False``: only the probe), and again
    once its graph is not in the function cache, so these builds overlap its
    rewrites (a function-cache hit loads the runtime on its own thread, which is
    cheaper than a second thread competing with it for the interpreter).  Errors
    are left to the link, which reports them."""
    if threads.loaded():
        return
    try:
        cache = get_cache()
        info = probe_nowait(cache)
        if info.confirmed and runtime:
            threads.prefetch(cache, info)
    except Exception:  # noqa: BLE001 - the link runs the same steps and raises
        pass


def default_linker():
    """ "cvm" when a C compiler works, else "py" (with one warning per process).

    On a first use the compiler probe (the runtime library's build) is not
    waited for: while it runs on its thread, a compiler was found and the
    answer is "cvm" (not remembered: a later call gives the probe's verdict), so
    the first function's rewrites and first result, in Python, overlap it; its
    module, compiled in the background, loads once the probe agrees (if it
    fails, the function stays in Python with a warning, see :mod:`.background`)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                if _probe_running():
                    return "cvm"
                ok, why = compiler_works()
                if not ok:
                    warnings.warn("nbgraph: no working C compiler, functions run in Python "
                                  "(linker='py'): %s" % why, RuntimeWarning, stacklevel=3)
                _default = "cvm" if ok else "py"
    return _default


def _probe_running():
    """True when the compiler probe runs on a thread (started here if no answer
    is known: a compiler was found and none is recorded)."""
    try:
        return not probe_nowait(get_cache()).confirmed
    except Exception:  # noqa: BLE001 - compiler_works() finds it again and says why
        return False


def make_linker(name):
    """The linker object for ``name`` ("c", "cvm" or "debug")."""
    if name in ("c", "cvm"):
        return CLinker(name)
    if name == "debug":
        from nbgraph.linkers.debug import DebugLinker

        return DebugLinker()
    raise ValueError("nbgraph.linkers.c has no linker %r" % (name,))


def __getattr__(name):
    """``background`` (a compile's module, not imported by a cache hit) on first use."""
    if name == "background":
        import importlib

        return importlib.import_module(__name__ + ".background")
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
