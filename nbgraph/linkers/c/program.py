"""CProgram: a linked graph whose C-capable nodes run compiled kernels.

The :class:`~nbgraph.linkers.c.linker.CLinker` makes it from the Python
linker's Program (cells, thunks, the release schedule) and swaps the planned
nodes' thunks for kernel calls once their module is loaded
(:meth:`CProgram.install`), at once or after a background compilation.
"""

import functools
import os
import time

from nbgraph.linkers.c import fastcall
from nbgraph.linkers.c.kernel_calls import (
    POINTER_CACHE_BYTES,
    make_cell_thunk,
    make_kernel_call,
    tensor_operands,
)
from nbgraph.linkers.codecache import compile_source
from nbgraph.linkers.python import Program

__all__ = ["CProgram"]


class CProgram(Program):
    """A :class:`~nbgraph.linkers.python.Program` whose C nodes may still be compiling.

    While its module compiles in the background (see
    :mod:`~nbgraph.linkers.c.background`), every node runs ``perform``; the
    kernels are installed before the first run after the module is ready.
    """

    _job = None
    _plan = None

    def run(self):
        if self._job is not None:
            self._poll()
        Program.run(self)

    def make_fast_run(self):
        """Set ``self.run`` to straight-line code: each thunk, then the cells it frees.

        Same behaviour as :meth:`run` (errors name the failing node), less
        interpreter work per call.  Thunks are looked up at call time, so kernels
        installed later by a background compilation are used.  A lazy schedule
        (``self.steps``) gets the same, with an ``if`` per block of a lazy node
        (:func:`nbgraph.linkers.schedule.make_lazy_run`).
        """
        if getattr(self, "steps", None) is not None:
            from nbgraph.linkers.schedule import make_lazy_run

            self.__dict__.pop("run", None)  # the Python linker's, copied from its Program
            self.run = make_lazy_run(self, self.reraise, poll=True) or self.run
            return self.run
        names = {"P": self, "T": self.thunks}
        lines = ["def run():", "    if P._job is not None:", "        P._poll()", "    i = 0",
                 "    try:"]
        for i, cells in enumerate(self.release):
            if i:
                lines.append("        i = %d" % i)
            lines.append("        T[%d]()" % i)
            for k, cell in enumerate(cells):
                name = "R%d_%d" % (i, k)
                names[name] = cell
                lines.append("        %s[0] = None" % name)
        if not self.release:
            lines.append("        pass")
        lines += ["    except Exception as exc:", "        __tracebackhide__ = True",
                  "        P.reraise(exc, i)"]
        exec(compile_source("\n".join(lines), "<nbgraph program>"), names)
        self.run = names["run"]
        return self.run

    def reraise(self, exc, i):
        """Re-raise ``exc`` from node ``i`` the way the Python linker does."""
        __tracebackhide__ = True
        import inspect

        from nbgraph.linkers import python as _python

        reraise = getattr(_python, "_reraise_with_node", None)
        if reraise is None:
            raise exc
        args = [exc, self.nodes[i], self.storage]
        clear = getattr(self, "_clear", None)
        if clear is not None:
            args.append(clear)
        try:
            inspect.signature(reraise).bind(*args)
        except TypeError:
            try:
                inspect.signature(reraise).bind(*args[:3])
                args = args[:3]
            except TypeError:
                raise exc from None
        reraise(*args)

    def run_profiled(self, stats):
        if self._job is not None:
            self._poll()
        Program.run_profiled(self, stats)

    def _poll(self):
        job = self._job
        if isinstance(job, fastcall.Upgrade):  # the C call path's extension came in
            if job.ready():
                self._job = None
                self.install(job.module)
            return
        from nbgraph.linkers.c import background  # (a compile: never on a cache hit)

        if job.pid != os.getpid():  # a forked child: the parent's worker is gone
            self.__dict__.pop("_prepared", None)
            self._job = background.submit(job.cache, job.source, job.info, job.key, self,
                                          replan=job.replan)
            return
        if not job.done.is_set():
            return
        self._job = None
        if job.error is not None:
            background.report_failure(job, "a function")
            return
        self.install(job.module)

    def prepare_install(self):
        """What :meth:`install` makes before it can call a kernel, made while the
        module compiles: the pointer cells, and each planned node's storage and
        cffi call (all of it but the kernel's address); None when the C call
        path's extension is in (its ``Kernel`` objects need the module)."""
        if fastcall.loaded() is not None:
            return None
        from nbgraph.linkers.c.cache import get_ffi
        from nbgraph.linkers.c.runtime import c_thunk_maker

        ffi = get_ffi()
        plan = self._plan
        cells = {var: [None, None] for var in self.storage}
        made = {}
        for node in plan.nodes:
            view = plan.views[node]
            storage, kcells = view.storage(self.storage, cells)
            made[node] = (storage, kcells, c_thunk_maker(view.knode, ffi, storage, kcells))
        return cells, made

    def prepare_early(self):
        """:meth:`prepare_install` while the module's compiler runs (on the thread
        waiting for it); the next :meth:`install` uses it (any failure: it makes
        everything itself, as usual)."""
        try:
            self._prepared = self.prepare_install()
        except Exception:  # noqa: BLE001 - install() makes them again and raises
            self._prepared = None

    def install(self, module):
        """Switch the planned nodes to the kernels of ``module`` (with what
        :meth:`prepare_early` made, if anything: used once)."""
        prepared = self.__dict__.pop("_prepared", None)
        plan = self._plan
        module.freefunc_names = plan.freefuncs
        # the Python linker's thunks, as the first install found them
        perform_thunks = self.__dict__.setdefault("_perform_thunks", list(self.thunks))
        # node -> its kernel's position in the module (module.kernels: cffi function
        # pointers, made on first use by a module the call-path extension opened)
        kernel_of = dict(zip(plan.nodes, plan.index, strict=True))
        kinds = list(self.kinds)
        cells, made = prepared or ({var: [None, None] for var in self.storage}, {})
        results = set(self.fgraph.outputs)
        for i, node in enumerate(self.nodes):
            k = kernel_of.get(node)
            if k is not None:
                view = plan.views[node]
                storage, kcells, maker = made.get(node) or \
                    (view.storage(self.storage, cells) + (None,))
                knode = view.knode
                make = functools.partial(_cffi_thunk, knode, k, module, storage, kcells, maker)
                # the C call path runs it; an intermediate's buffer is kept for
                # the next call only when small (peak memory stays as it was); the
                # generated Python thunk is its fallback, made on first use
                keep = -1 if all(v in results for v in node.outputs) else POINTER_CACHE_BYTES
                thunk = make_cell_thunk(knode, module.addresses[k], module, storage,
                                        _on_first_use(make), keep)
                thunk = thunk if thunk is not None else make()
                choose = None if self.linker != "cvm" or node.op.c_preferred(node) \
                    else node.op.c_call_choice(node)
                if choose is None:
                    self.thunks[i] = thunk
                    kinds[i] = "c"
                else:  # per call: this C or the Python linker's thunk (kind "py")
                    self.thunks[i] = _chosen_thunk(choose, thunk, perform_thunks[i],
                                                   [self.storage[v] for v in node.inputs])
        self.kinds = kinds
        self.module = module
        plan.source = None  # its text is no longer needed (installing again needs the rest)
        self._pointer_cells = cells
        self._kernel_of = kernel_of
        self._views = plan.views
        self.follow_extension(module, start=False)
        for callback in self.on_install:
            callback(self)

    def follow_extension(self, module, start=True):
        """Switch ``module``'s kernels to the C call path's extension once it is
        built, when it is being built (``start``: build it now if it is not there)."""
        if start:
            fastcall.prefetch()
        if fastcall.pending() and self._job is None:  # through cffi until it is in
            self._job = fastcall.Upgrade(module)

    #: Functions called with the Program once its kernels are installed.
    on_install = ()

    def release_buffers(self):
        """Drop the outputs kernels keep for reuse (when the Function goes away)."""
        for thunk in self.thunks:
            reset = getattr(thunk, "reset", None)
            if reset is not None:
                reset()

    def _single_kernel(self):
        """(kernel view, kernel) when this Program is one installed kernel over tensors
        (not a node choosing per call between its C and ``perform``: kind "py")."""
        if self._job is not None or self.module is None or len(self.nodes) != 1:
            return None, None
        node = self.nodes[0]
        kernel = self._kernel_of.get(node)  # (its position in the module)
        if kernel is None or self.kinds[0] != "c" or not tensor_operands(node):
            return None, None
        return self._views[node], kernel

    def direct_call(self):
        """For a Program that is one kernel over tensors, once installed: a function
        (node's input values) -> output value(s) running it with no storage cells
        (see :func:`~nbgraph.linkers.c.runtime.make_fast_thunk`); else None."""
        view, kernel = self._single_kernel()
        if view is None:
            return None
        from nbgraph.linkers.c.runtime import make_fast_thunk  # (the cffi path)

        storage, cells = view.storage(self.storage, self._pointer_cells)
        return make_fast_thunk(view.knode, self.module.kernels[kernel], self.module, storage,
                               cells, direct=True, nparams=len(view.node.inputs))

    def kernel_call(self, fallback, on_error, argmap, nargs, aslist, consts=()):
        """Like :meth:`direct_call`, as a C ``Kernel`` object to install as a class's
        ``__call__`` (it receives the instance first and passes every call it does
        not handle itself to ``fallback``); None without the C call path.  Input
        ``i`` is argument ``argmap[i]``, or ``consts[argmap[i] - nargs]``."""
        view, kernel = self._single_kernel()
        if view is None:
            return None
        consts = list(consts)
        argmap = list(argmap) + [nargs + len(consts) + i for i in range(len(view.extra))]
        consts += view.extra
        return make_kernel_call(view.knode, self.module.addresses[kernel], self.module,
                                fallback, on_error,
                                argmap=tuple(argmap), nargs=nargs, method=True,
                                aslist=aslist, consts=tuple(consts))

    #: The owning Function's token (see nbgraph.linkers.concurrency): kernels are
    #: installed only while it is held, never under a call running in another thread.
    token = None

    def wait_compiled(self, timeout=None):
        """Wait for a background compilation, then for the C call path's extension
        if the program is to switch to it; True when both are in."""
        from nbgraph.linkers.concurrency import holding

        deadline = None if timeout is None else time.monotonic() + timeout
        while self._job is not None:
            job = self._job
            job.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
            with holding(self.token):
                if self._job is job:
                    self._poll()
            if self._job is job:  # still running when the time was up
                break
        return self._job is None and self.module is not None

    @property
    def compiling(self):
        """True while the module is being compiled in the background."""
        return self._job is not None


def _chosen_thunk(choose, c_thunk, py_thunk, in_cells):
    """A thunk running ``c_thunk`` when ``choose(*inputs)`` says so, else ``py_thunk``
    (an Op's ``c_call_choice``)."""
    if len(in_cells) == 2:
        a, b = in_cells

        def thunk():
            if choose(a[0], b[0]):
                c_thunk()
            else:
                py_thunk()
    else:
        def thunk():
            if choose(*[c[0] for c in in_cells]):
                c_thunk()
            else:
                py_thunk()
    reset = getattr(c_thunk, "reset", None)
    if reset is not None:
        thunk.reset = reset
    return thunk


def _cffi_thunk(node, k, module, storage, cells, maker=None):
    """The generated Python thunk calling kernel ``k`` of ``module`` through cffi
    (``maker``: :func:`~nbgraph.linkers.c.runtime.c_thunk_maker`'s, if made)."""
    if maker is not None:
        return maker(module.kernels[k])
    from nbgraph.linkers.c.runtime import make_c_thunk

    return make_c_thunk(node, module.kernels[k], module, storage, cells)


def _on_first_use(make):
    """A thunk that makes the real one (``make()``) when first called: a fallback
    most programs never call costs nothing to build."""
    made = []

    def thunk():
        if not made:
            made.append(make())
        return made[0]()
    return thunk
