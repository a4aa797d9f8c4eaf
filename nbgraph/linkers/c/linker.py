"""CLinker: links a FunctionGraph into a Program whose C-capable nodes run compiled kernels.

``CLinker("c")`` runs every node in C and refuses a graph with a node that
cannot; ``CLinker("cvm")`` runs C where a node can and ``perform`` elsewhere.
The Program has the interface of :class:`nbgraph.linkers.python.Program`
(``input_cells``, ``output_cells``, ``run``, ``run_profiled``, ``nodes``,
``kinds`` with ``"c"`` or ``"py"`` per node), so Function uses it unchanged.
"""

import functools
import os
import time

from nbgraph.core.c_interface import CLinkerOp, OutputRule
from nbgraph.core.type import MethodNotDefined
from nbgraph.linkers.c import fastcall, threads
from nbgraph.linkers.c.cache import get_cache
from nbgraph.linkers.c.compiler import ProbeMismatch, probe_nowait
from nbgraph.linkers.c.kernel_nodes import dump_views, kernel_view, load_views
from nbgraph.linkers.c.outputs import rule_problem
from nbgraph.linkers.c.kernel_calls import POINTER_CACHE_BYTES, make_cell_thunk, make_kernel_call
from nbgraph.linkers.codecache import compile_source
from nbgraph.linkers.python import Program, PythonLinker

__all__ = ["CLinker", "CLinkerRefusal", "c_capable", "compile_nodes", "compile_runners"]


class CLinkerRefusal(TypeError):
    """linker="c" was asked to compile a graph holding a node without C code."""


def c_capable(node):
    """(True, "") when ``node`` can run as a C kernel, else (False, why)."""
    op = node.op
    if not isinstance(op, CLinkerOp):
        if hasattr(op, "c_code"):
            return False, ("its Op %s (%s) defines c_code but does not derive from "
                           "nbgraph.core.c_interface.CLinkerOp" % (op, type(op).__name__))
        return False, "its Op %s (%s) has no C implementation" % (op, type(op).__name__)
    try:
        if not op.has_c_code(node):
            return False, "its Op %s (%s) has no C implementation" % (op, type(op).__name__)
        rule = op.c_output_rule(node)
    except (MethodNotDefined, TypeError, ValueError) as exc:
        return False, "its Op %s cannot say whether it has C code: %s" % (op, exc)
    from nbgraph.linkers.c import codegen  # (not imported by a function-cache hit)

    for var in node.inputs + node.outputs:
        if not codegen.c_supported(var.type):
            return False, "the Type %r of %r has no C calling convention" % (var.type, var)
    restricted = [var for var in node.inputs + node.outputs if var.type.c_restricted()]
    if restricted and not op.c_handles_restricted(node):
        return False, "its Op %s has no C code for operands of type %r (it runs in Python)" % (
            op, restricted[0].type)
    if not isinstance(rule, OutputRule):
        return False, "its Op %s returned %r from c_output_rule, not an OutputRule" % (
            op, rule)
    problem = rule_problem(node, rule)
    if problem:
        return False, problem
    return True, ""


class ModulePlan:
    """The module of a list of nodes: its source, cache key and kernel positions."""

    def __init__(self, nodes, saved=None, views=None):
        self.nodes = list(nodes)
        self.cache = get_cache()
        # on a first use the compiler probe (which builds the runtime library)
        # runs on a thread while this module compiles with its usual answer;
        # the module is loaded only once the probe agrees (else: replan())
        self.info = probe_nowait(self.cache)
        self.views = views if views is not None else \
            {node: kernel_view(node) for node in self.nodes}
        self._plan(saved)

    def _plan(self, saved=None):
        # the helpers are the runtime library's (loaded, or built meanwhile), unless
        # it is known not to build here; a module whose runtime then turns out to
        # be missing is rebuilt standalone (ModuleCache.get).  A saved plan (a
        # function-cache hit) loads it on this thread when it finds its module.
        if self.info.confirmed and saved is None:
            threads.prefetch(self.cache, self.info)
        self.standalone = threads.standalone()
        if saved is not None:  # from saved_plan(): no source, no code generation
            self.source = None
            self.key, self.index, self.freefuncs = saved
            return
        from nbgraph.linkers.c import codegen

        kernels = [codegen.node_kernel(self.views[node].knode) for node in self.nodes]
        self.source, self.index, self.freefuncs = codegen.module_source(
            kernels, self.info, standalone=self.standalone)
        self.key = self.cache.module_key(self.source, self.info)

    def replan(self, info):
        """Generate the module again for the compiler ``info`` (the probe's answer,
        when it differs from the one this plan was made with)."""
        self.info = info
        self._plan()
        return self.source, self.info

    def hint(self):
        """What :func:`saved_plan` needs to make this plan again in another process
        without generating the source (kept by :mod:`nbgraph.linkers.function_cache`)."""
        return {"key": self.key, "index": list(self.index), "freefuncs": self.freefuncs,
                "info": self.info.key_text(), "standalone": self.standalone,
                "views": dump_views(self.nodes, self.views)}

    def lookup(self):
        """The module if it is loaded or published (no compilation), else None."""
        try:
            found = self.cache.lookup(self.source, self.info, self.key)
        except ProbeMismatch as exc:
            if self.source is None:  # a saved plan: made for other compiler flags
                return None
            self.replan(exc.info)
            found = self.cache.lookup(self.source, self.info, self.key)
        return self._ready(found)

    def build(self):
        """The module, compiling it if needed (the C call path's extension builds
        meanwhile, when it is not there yet; on a first use, where the runtime
        library compiles too, only after the module: a first result waits for
        the module and the runtime, not for the extension)."""
        first_use = threads.must_build(self.cache, self.info)
        if not first_use:
            fastcall.prefetch()
        try:
            module = self.cache.get(self.source, self.info)
        except ProbeMismatch as exc:
            self.replan(exc.info)
            module = self.cache.get(self.source, self.info)
        if first_use:
            fastcall.prefetch()
        return self._ready(module)

    def _ready(self, module):
        if module is not None:
            module.freefunc_names = self.freefuncs
        return module

    def kernels(self, module):
        return [module.kernels[i] for i in self.index]


def saved_plan(nodes, hint):
    """The :class:`ModulePlan` of ``nodes`` from a :meth:`ModulePlan.hint` made for the
    same nodes in another process, or None when the compiler or the runtime's
    availability differs; its module must then be found (:meth:`ModulePlan.lookup`):
    without source it cannot be built."""
    # the call-path extension first (a hit needs it for its kernels anyway): it
    # then opens the module and the runtime library, and cffi is never imported
    fastcall.native()
    plan = ModulePlan(nodes, saved=(hint["key"], hint["index"], hint["freefuncs"]),
                      views=load_views(nodes, hint.get("views")))
    if plan.info.key_text() != hint["info"] or plan.standalone != hint["standalone"] \
            or len(plan.index) != len(plan.nodes):
        return None
    return plan


def compile_nodes(nodes):
    """Compile one module for ``nodes``; returns ``(module, [kernel per node], plan)``."""
    if not nodes:
        return None, [], None
    plan = ModulePlan(nodes)
    module = plan.build()
    return module, plan.kernels(module), plan


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

    def install(self, module):
        """Switch the planned nodes to the kernels of ``module``."""
        plan = self._plan
        module.freefunc_names = plan.freefuncs
        # the Python linker's thunks, as the first install found them
        perform_thunks = self.__dict__.setdefault("_perform_thunks", list(self.thunks))
        # node -> its kernel's position in the module (module.kernels: cffi function
        # pointers, made on first use by a module the call-path extension opened)
        kernel_of = dict(zip(plan.nodes, plan.index, strict=True))
        kinds = list(self.kinds)
        cells = {var: [None, None] for var in self.storage}
        results = set(self.fgraph.outputs)
        for i, node in enumerate(self.nodes):
            k = kernel_of.get(node)
            if k is not None:
                view = plan.views[node]
                storage, kcells = view.storage(self.storage, cells)
                knode = view.knode
                make = functools.partial(_cffi_thunk, knode, k, module, storage, kcells)
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
        if fastcall.pending():  # its kernels run through cffi until it is in
            self._job = fastcall.Upgrade(module)
        for callback in self.on_install:
            callback(self)

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
        if kernel is None or self.kinds[0] != "c" or not all(
                getattr(v.type, "c_arg_kind", None) == "tensor"
                for v in node.inputs + node.outputs):
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


class CLinker:
    """Links graphs with compiled C kernels (``mode`` "c" or "cvm")."""

    def __init__(self, mode="cvm", background_compile=None):
        if mode not in ("c", "cvm"):
            raise ValueError("CLinker mode must be 'c' or 'cvm', got %r" % (mode,))
        self.mode = mode
        self.name = mode
        self.background_compile = background_compile

    def wants_c(self, node):
        """Whether this linker runs ``node`` as C.

        cvm leaves to ``perform`` the view-only ops and the nodes whose Op's
        ``c_preferred(node)`` says NumPy is faster (Dot's float matrix products:
        BLAS), unless its ``c_call_choice(node)`` picks the C for some calls."""
        ok, why = c_capable(node)
        if not ok:
            return False, why
        if self.mode == "cvm":
            if node.op.c_view_only(node):
                return False, "view-only"
            if not node.op.c_preferred(node) and node.op.c_call_choice(node) is None:
                return False, "NumPy is faster"
        return True, ""

    def link(self, fgraph, keep=(), saved=None):
        """The Program of ``fgraph``.  ``saved``: ``(nodes, hint)`` of
        :meth:`ModulePlan.hint` for this graph's C nodes (the function cache's):
        its module is looked up by key, without generating the source."""
        order = fgraph.toposort()
        c_nodes = _saved_choice(order, saved)
        if c_nodes is None:
            saved = None
            c_nodes = self._choose(order)
        # The Python linker lays out storage, thunks and the release schedule;
        # the C nodes' thunks are then swapped for kernel calls.
        base = PythonLinker(inner=self).link(fgraph, keep=keep)
        if list(base.nodes) != list(order):  # pragma: no cover - toposort is stable
            raise RuntimeError("the Python linker ordered the graph differently")
        program = CProgram.__new__(CProgram)
        program.__dict__.update(base.__dict__)
        program.kinds = ["py"] * len(order)
        program.module = None
        program.linker = self.mode
        program.make_fast_run()
        if not c_nodes:
            return program
        plan, module = None, None
        if saved is not None and set(saved[0]) == set(c_nodes):
            plan = saved_plan(saved[0], saved[1])
            module = plan.lookup() if plan is not None else None
        if module is None:  # (a saved plan's module may have been evicted)
            plan = ModulePlan(c_nodes)
            module = plan.lookup()
        program._plan = plan
        if module is None:
            from nbgraph.linkers.c import background

            use_background = (self.background_compile if self.background_compile is not None
                              else background.ENABLED)
            if (use_background and self.mode == "cvm"
                    and all(_has_perform(node) for node in c_nodes)):
                program._job = background.submit(plan.cache, plan.source, plan.info, plan.key,
                                                 program, replan=plan.replan)
                fastcall.prefetch()  # the C call path's extension builds meanwhile, if needed
                return program
            module = plan.build()
        program.install(module)
        return program

    def _choose(self, order):
        """The nodes of ``order`` to run as C (raises CLinkerRefusal for mode "c")."""
        c_nodes = []
        for node in order:
            use_c, why = self.wants_c(node)
            # a lazy node only chooses which blocks run: the program does that work;
            # a node running inner graphs (a loop) has them linked by this linker
            if self.mode == "c" and not use_c and not node.op.lazy_inputs(node) \
                    and not _runs_inner_graphs(node):
                raise CLinkerRefusal(
                    "linker='c' runs every node as C, but node %s cannot: %s. Use "
                    "linker='cvm' to run such nodes in Python." % (_node_text(node), why))
            if use_c:
                c_nodes.append(node)
        return c_nodes

    def c_runners(self, nodes):
        """{node: runner(values) -> outputs} for ``nodes`` (all C-capable), one module."""
        return compile_runners(nodes)[1]


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


def compile_runners(nodes):
    """``(module, {node: runner(values) -> outputs})`` for ``nodes`` (all C-capable),
    compiled as one module."""
    from nbgraph.linkers.c.runtime import make_c_runner

    nodes = list(nodes)
    module, kernels, plan = compile_nodes(nodes)
    if plan is None:
        return None, {}
    return module, {node: _runner(plan.views[node], make_c_runner(plan.views[node].knode,
                                                                  kernel, module))
                    for node, kernel in zip(nodes, kernels, strict=True)}


def _runner(view, runner):
    if not view.extra:
        return runner
    return lambda values: runner(view.values(values))


def _saved_choice(order, saved):
    """The C nodes of a function-cache hit's ``saved`` plan, in ``order``: those this
    linker chose when the entry was stored (the same graph and code, so the same
    choice), or None without a saved plan or when its nodes are not all in ``order``."""
    if saved is None:
        return None
    chosen = set(saved[0])
    c_nodes = [node for node in order if node in chosen]
    return c_nodes if c_nodes and len(c_nodes) == len(chosen) else None


def _cffi_thunk(node, k, module, storage, cells):
    """The generated Python thunk calling kernel ``k`` of ``module`` through cffi."""
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


def _runs_inner_graphs(node):
    """True for an Op whose work is inner graphs, linked by this same linker (a loop):
    linker="c" accepts it, and refuses in the inner graph whatever has no C."""
    inner = getattr(node.op, "inner_graphs", None)
    return bool(inner and inner())


def _has_perform(node):
    from nbgraph.core.op import Op

    return type(node.op).perform is not Op.perform


def _node_text(node):
    ins = ", ".join(repr(v) for v in node.inputs)
    return "%s(%s)" % (node.op, ins)
