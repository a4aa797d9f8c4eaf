"""CLinker: links a FunctionGraph into a Program whose C-capable nodes run compiled kernels.

``CLinker("c")`` runs every node in C and refuses a graph with a node that
cannot; ``CLinker("cvm")`` runs C where a node can and ``perform`` elsewhere.
The Program has the interface of :class:`nbgraph.linkers.python.Program`
(``input_cells``, ``output_cells``, ``run``, ``run_profiled``, ``nodes``,
``kinds`` with ``"c"`` or ``"py"`` per node), so Function uses it unchanged.
"""

from nbgraph.core.c_interface import CLinkerOp, OutputRule
from nbgraph.core.type import MethodNotDefined
from nbgraph.linkers.c import fastcall, threads
from nbgraph.linkers.c.cache import get_cache
from nbgraph.linkers.c.compiler import ProbeMismatch, probe_nowait
from nbgraph.linkers.c.kernel_nodes import dump_views, kernel_view, load_views
from nbgraph.linkers.c.outputs import rule_problem
from nbgraph.linkers import meanwhile
from nbgraph.linkers.c.program import CProgram
from nbgraph.linkers.python import PythonLinker

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

    def build(self, extension=True):
        """The module, compiling it if needed (the C call path's extension builds
        meanwhile, when it is not there yet; on a first use, where the runtime
        library compiles too, only after the module: a first result waits for
        the module and the runtime, not for the extension; with ``extension``
        False the caller starts it then, see :meth:`CProgram.follow_extension`)."""
        first_use = threads.must_build(self.cache, self.info)
        if not first_use:
            fastcall.prefetch()
        try:
            module = self.cache.get(self.source, self.info)
        except ProbeMismatch as exc:
            self.replan(exc.info)
            module = self.cache.get(self.source, self.info)
        if first_use and extension:
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
        if not c_nodes:
            return self._program(fgraph, keep, order)
        plan, module = None, None
        if saved is not None and set(saved[0]) == set(c_nodes):
            plan = saved_plan(saved[0], saved[1])
            module = plan.lookup() if plan is not None else None
        if module is None:  # (a saved plan's module may have been evicted)
            plan = ModulePlan(c_nodes)
            module = plan.lookup()
        if module is None and self._in_background(c_nodes):
            from nbgraph.linkers.c import background

            program = self._program(fgraph, keep, order, plan)
            program._job = background.submit(plan.cache, plan.source, plan.info, plan.key,
                                             program, replan=plan.replan)
            fastcall.prefetch()  # the C call path's extension builds meanwhile, if needed
            return program
        if module is not None or any(_runs_inner_graphs(node) for node in order):
            program = self._program(fgraph, keep, order, plan)
            program.install(module if module is not None else plan.build())
            return program
        made = []

        def early():  # the program and its kernel calls, made while the module compiles
            program = self._program(fgraph, keep, order, plan)
            program.prepare_early()
            made.append(program)

        with meanwhile.tasks(early):
            module = plan.build(extension=False)
        program = made[0]
        program.install(module)
        program.follow_extension(module)  # (its thread's Python did not slow the install)
        return program

    def _program(self, fgraph, keep, order, plan=None):
        """The :class:`CProgram` of ``fgraph`` running every node in Python: the
        Python linker lays out storage, thunks and the release schedule; the C
        nodes' thunks are then swapped for kernel calls (:meth:`CProgram.install`)."""
        base = PythonLinker(inner=self).link(fgraph, keep=keep)
        if list(base.nodes) != list(order):  # pragma: no cover - toposort is stable
            raise RuntimeError("the Python linker ordered the graph differently")
        program = CProgram.__new__(CProgram)
        program.__dict__.update(base.__dict__)
        program.kinds = ["py"] * len(order)
        program.module = None
        program.linker = self.mode
        program._plan = plan
        program.make_fast_run()
        return program

    def _in_background(self, c_nodes):
        """Whether a module for ``c_nodes`` compiles on a worker thread (cvm, when
        every node can run ``perform`` meanwhile; see :mod:`.background`)."""
        from nbgraph.linkers.c import background

        use_background = (self.background_compile if self.background_compile is not None
                          else background.ENABLED)
        return bool(use_background and self.mode == "cvm"
                    and all(_has_perform(node) for node in c_nodes))

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
