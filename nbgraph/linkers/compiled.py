"""Function: a compiled graph, callable with one value per input.

:func:`nbgraph.function` makes them.  A call follows the Function's
:class:`~nbgraph.linkers.call_plan.CallPlan`; the common call runs generated
code rendered from it (:mod:`nbgraph.linkers.call_code`, shown by
``f.call_source``), or a C ``Kernel`` object when the graph is one kernel.
"""

from __future__ import annotations

import weakref

from nbgraph.core.graph import Constant
from nbgraph.linkers import call_code
from nbgraph.linkers.call_plan import CallPlan
from nbgraph.linkers.concurrency import SharedGate, contended_call, holding
from nbgraph.linkers.io import FunctionExtras, unpack_inputs
from nbgraph.linkers.profile import PROFILE_OFF, ProfileStats

__all__ = ["Function", "make_linker"]


def make_linker(name: str):
    """A new linker object for the linker ``name`` ("py", "c", "cvm" or "debug")."""
    if name == "py":
        from nbgraph.linkers.python import PythonLinker

        return PythonLinker()
    from nbgraph.linkers import c as c_backend

    return c_backend.make_linker(name)


class Function(FunctionExtras):
    """A compiled graph.  Call it with one value per input.

    Attributes: ``inputs``/``outputs`` (the caller's Variables), ``fgraph``
    (the rewritten graph it runs), ``linker``, ``profile`` (a ProfileStats
    when compiled with ``profile=True``), ``trust_input`` (skip argument
    checks when True), ``maker`` (Theano's view: ``f.maker.fgraph``),
    ``call_source`` (the generated Python of the current call path).
    Inputs given as ``In(var, value=...)`` may be left out of a call.

    Threads: one Function may be called from many threads at once, with every
    linker.  A call holds the Function's token; a call that finds it taken runs
    on a *twin* (the same graph and compiled module, its own storage), made
    once and kept for later contended calls.  A Function that reads or updates
    shared variables holds their locks for the whole call, so concurrent
    updates apply atomically per call; profiled calls run one at a time.  See
    :mod:`nbgraph.linkers.concurrency`.
    """

    def __init__(self, fgraph, inputs, outputs, single, shared_inputs, updates, linker,
                 name=None, profile=False, trust_input=False, allow_input_downcast=None,
                 input_specs=None, saved=None) -> None:
        self.fgraph = fgraph
        self.inputs = inputs
        self.outputs = outputs
        self.single = single
        self.name = name
        self.linker = linker
        self._trust_input = bool(trust_input)
        self.shared_inputs = shared_inputs
        self.updates = updates
        self.input_specs = input_specs or unpack_inputs(inputs)[1]
        self._input_names = [spec.name for spec in self.input_specs]
        self._has_defaults = any(spec.has_default for spec in self.input_specs)
        self._allow_downcast = allow_input_downcast
        # saved: the C module of this graph, known from the function cache
        self.program = make_linker(linker).link(fgraph, **({"saved": saved} if saved else {}))
        # Thread safety (nbgraph.linkers.concurrency): a call holds the token
        # (list.pop / append: atomic and cheap); a call finding it taken runs on
        # a twin from this pool; shared variables' locks are held by the gate.
        self._token = [True]
        self._twins = []
        self._gate = SharedGate(self, [s.container for s in shared_inputs]) \
            if shared_inputs else None
        self.program.token = self._token
        self._plan = self._make_plan()
        self._profile = ProfileStats(self) if profile else None
        self._run = self.program.run
        self._nargs = len(inputs)
        self.call_source = ""
        # Each Function gets its own subclass whose __call__ is generated code:
        # one Python frame per call instead of two.
        self.__class__ = type(Function.__name__, (Function,),
                              {"__module__": Function.__module__,
                               "__doc__": Function.__doc__, "__slots__": ()})
        self._install_call_path()

    def _make_plan(self) -> CallPlan:
        input_types = [v.type for v in self.fgraph.inputs[:len(self.inputs)]]
        return CallPlan(self.fgraph, self.program, len(self.outputs), self.shared_inputs,
                        self.updates, input_types, self._allow_downcast, self.single,
                        self._trust_input)

    @property
    def trust_input(self) -> bool:
        """When True, arguments are used as given, without any check (for hot loops)."""
        return self._trust_input

    @trust_input.setter
    def trust_input(self, value: bool) -> None:
        self._trust_input = bool(value)
        if hasattr(self, "_nargs"):  # after __init__: regenerate the call path
            self._plan.trust_input = self._trust_input
            self._install_call_path()

    @property
    def profile(self):
        """A ProfileStats collecting per-node times; without profiling, a falsy
        :data:`~nbgraph.linkers.profile.PROFILE_OFF` whose repr says how to turn it on.
        Setting it (a ProfileStats, True for a new one, None/False for none)
        regenerates the call path."""
        return PROFILE_OFF if self._profile is None else self._profile

    @profile.setter
    def profile(self, value) -> None:
        if value is True:
            value = ProfileStats(self)
        elif value is False or value is PROFILE_OFF:
            value = None
        self._profile = value
        if hasattr(self, "_nargs"):
            self._install_call_path()

    def _install_call_path(self) -> None:
        """Generate ``__call__`` for the current trust_input and profile settings."""
        self._drop_c_call()
        self._twins = []  # made with the previous settings
        self._fast, type(self).__call__, self.call_source = call_code.render_call(self)
        if getattr(self.program, "direct_call", None) is not None:
            if self.program.module is not None:
                self._install_direct()
            if self.program.compiling:
                # the kernel is still compiling (or the C call path's extension, see
                # fastcall.Upgrade): keep the generic call until it is in
                ref = weakref.ref(self)
                self.program.on_install = [lambda program: ref() and ref()._install_direct()]

    def _drop_c_call(self) -> None:
        call = self.__dict__.pop("_c_call", None)
        if call is not None:
            call.reset()  # its previous outputs are not kept alive any longer

    def __del__(self) -> None:
        self._drop_c_call()
        release = getattr(self.__dict__.get("program"), "release_buffers", None)
        if release is not None:
            release()

    def _direct_arguments(self):
        """``(argmap, consts)`` when the graph is one kernel reading only the
        arguments (``argmap[j]``: argument k, or constant ``k - nargs``) and
        writing only the outputs; None otherwise."""
        program, fgraph = self.program, self.fgraph
        if self._profile is not None or not self._plan.direct_candidate \
                or len(program.nodes) != 1:
            return None
        node = program.nodes[0]
        graph_ins = fgraph.inputs
        if len(graph_ins) != self._nargs or list(fgraph.outputs) != list(node.outputs):
            return None
        argmap, consts = [], []
        for var in node.inputs:
            if var in graph_ins:
                argmap.append(graph_ins.index(var))
            elif isinstance(var, Constant):
                argmap.append(self._nargs + len(consts))
                consts.append(program.storage[var][0])
            else:
                return None
        return argmap, consts

    def _install_direct(self) -> None:
        """When the graph is one C kernel whose inputs are the function's inputs and
        whose outputs are its outputs: make ``__call__`` call it with no cells and
        no Program.run.  With the C call path (:mod:`nbgraph.linkers.c.fastcall`),
        ``__call__`` is a C ``Kernel`` object, for trusted calls and for untrusted
        ones whose checks it can do itself (every input's Type accepts exact
        ndarrays of one dtype and ndim unchanged); anything else it hands to the
        generated Python call.  Without it, trusted calls get generated Python."""
        found = self._direct_arguments()
        if found is None:
            return
        argmap, consts = found
        program = self.program
        node = program.nodes[0]
        if self._trust_input and not consts:
            direct = program.direct_call()
            if direct is None:
                return
            self._fast, type(self).__call__, self.call_source = call_code.render_direct(
                self, direct, argmap, len(node.outputs))
        elif not self._trust_input and not self._c_checks_suffice(argmap):
            return
        fallback = type(self).__call__
        cells, token = self._plan.arg_cells, self._token

        def on_error(code, message, args):
            __tracebackhide__ = True
            from nbgraph.linkers.c.runtime import error_from_message

            exc = error_from_message(code, message, node)
            with holding(token):  # the cells are the generated call's too
                for cell, value in zip(cells, args, strict=False):
                    cell[0] = value  # for the error's input listing
                program.reraise(exc, 0)

        call = program.kernel_call(fallback, on_error, argmap, self._nargs,
                                   aslist=not self.single, consts=consts)
        if call is not None:
            self._c_call = call
            type(self).__call__ = call
            self.call_source = ("# __call__ is a C Kernel object calling the module's only "
                                "kernel;\n# calls it cannot check go to:\n" + self.call_source)

    def _c_checks_suffice(self, argmap) -> bool:
        """True when checking "exact ndarray of the node input's dtype and ndim" is
        all that the input Types' filters would do with the arguments."""
        if sorted({k for k in argmap if k < self._nargs}) != list(range(self._nargs)):
            return False  # an unused argument still has to be filtered
        for ttype in self._plan.input_types:
            spec = getattr(ttype, "filter_fast_path", lambda: None)()
            if spec is None or getattr(ttype, "c_arg_kind", None) != "tensor" \
                    or spec != (ttype.numpy_dtype, ttype.ndim):
                return False
        return True

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == self._nargs and self._profile is None:
            return self._fast(*args)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        """Any call but plain positional arguments, holding the token (or on a twin);
        profiled calls wait for the token instead: one ProfileStats records them."""
        __tracebackhide__ = True  # IPython and pytest show the caller's line instead
        token = self._token
        if self._profile is None:
            try:
                token.pop()
            except IndexError:
                return contended_call(weakref.ref(self), args, kwargs or {})
            try:
                return self._call_gated(args, kwargs)
            finally:
                token.append(True)
        with holding(token):
            return self._call_gated(args, kwargs)

    def _call_gated(self, args, kwargs):
        if self._gate is None:
            return self._call_held(args, kwargs)
        self._gate.enter()
        try:
            return self._call_held(args, kwargs)
        finally:
            self._gate.leave()

    def _call_held(self, args, kwargs):
        """The call itself, interpreting the plan; the caller holds the token (and
        the gate)."""
        plan = self._plan
        args = self._positional(args, kwargs)
        if len(args) != plan.nargs:
            raise TypeError("%s expects %d arguments (%s), got %d" % (
                self._describe(), plan.nargs, ", ".join(repr(v) for v in self.inputs),
                len(args)))
        plan.store_arguments(args, self._input_names, self._describe())
        plan.load_shared()
        if self._profile is not None:
            self._profile.calls += 1
            self._last_args = list(args)  # for f.show(values=True)
            self.program.run_profiled(self._profile)
        else:
            self._run()
        return plan.finish()

    def _positional(self, args, kwargs) -> list | tuple:
        """One value per input: ``args``, keywords by input name, then defaults."""
        if self._has_defaults or kwargs:
            return self._fill_defaults(args, kwargs)
        return args

    def _describe(self) -> str:
        return "function %r" % self.name if self.name else "the function"

    def show(self, values=None, profile=False, **options):
        """The diagram of the compiled graph with run-time overlays: ``values`` (True:
        the last profiled call's; or the arguments) on edges, ``profile=True`` colours
        nodes by time share (see :mod:`nbgraph.display.overlay`)."""
        from nbgraph.display.overlay import show

        return show(self, values=values, profile=profile, **options)

    def dprint(self, file=None, print_type=False, **kwargs):
        """dprint of the compiled (rewritten) graph (keywords as
        :func:`nbgraph.dprint`, e.g. ``print_destroy_map=True``)."""
        from nbgraph.display.text import dprint

        return dprint(self.fgraph, file=file, print_type=print_type, **kwargs)

    def __repr__(self) -> str:
        """``<Function (x, y) -> (cost, out[1]), updates W, linker=cvm, 7 nodes>``: the
        caller's names (``out[i]`` for an unnamed output), never an Op's output repr."""
        ins = ", ".join(repr(v) for v in self.inputs)
        n_out = len(self.outputs)
        outs = ", ".join(v.name if getattr(v, "name", None) else
                         ("out" if n_out == 1 else "out[%d]" % i)
                         for i, v in enumerate(self.outputs))
        targets = [getattr(target, "name", None) or "shared"
                   for target, _ in (getattr(self, "updates", None) or ())]
        updates = ", updates %s" % ", ".join(targets) if targets else ""
        n = len(self.fgraph.apply_nodes)
        return "<Function%s (%s) -> (%s)%s, linker=%s, %d node%s>" % (
            " " + self.name if self.name else "", ins, outs, updates, self.linker, n,
            "" if n == 1 else "s")
