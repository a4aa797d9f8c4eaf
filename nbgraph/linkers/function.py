"""function(): compile a graph into a callable, and the Function it returns.

>>> import nbgraph.tensor as nt
>>> x, y = nt.dscalar("x"), nt.dscalar("y")
>>> f = function([x, y], x + y)
>>> f(16.3, 12.1)
array(28.4)
"""

import functools
import warnings
import weakref

import numpy as np

from nbgraph.config import config
from nbgraph.core.fgraph import FunctionGraph, MissingInputError, path_to
from nbgraph.core.graph import Constant, Variable, ancestors, clone_replace, graph_inputs
from nbgraph.core.type import DowncastError
from nbgraph.linkers.codecache import compile_source
from nbgraph.linkers.concurrency import SharedGate, contended_call, holding
from nbgraph.linkers.io import FunctionExtras, unpack_inputs, unpack_outputs
from nbgraph.linkers.profile import PROFILE_OFF, ProfileStats

__all__ = ["function", "Function", "UnusedInputError", "resolve_linker", "LINKERS"]

LINKERS = ("py", "c", "cvm", "debug")


class UnusedInputError(ValueError):
    """An input of function() is not needed by any output or update."""


def resolve_linker(linker):
    """The linker name to use for ``linker`` (None/"auto": the configured default)."""
    name = linker or config.linker
    if name == "auto":
        return _default_linker()
    if name not in LINKERS:
        raise ValueError("unknown linker %r; choose one of %s" % (name, ", ".join(LINKERS)))
    return name


def _default_linker():
    try:
        from nbgraph.linkers import c as c_backend
    except ImportError:
        return "py"
    return c_backend.default_linker()


def _make_linker(name):
    if name == "py":
        from nbgraph.linkers.python import PythonLinker

        return PythonLinker()
    from nbgraph.linkers import c as c_backend

    return c_backend.make_linker(name)


def _shared_type():
    from nbgraph.tensor.variable import SharedVariable

    return SharedVariable


def _check_inputs(inputs):
    SharedVariable = _shared_type()
    seen = set()
    for i, var in enumerate(inputs):
        if not isinstance(var, Variable):
            raise TypeError("input %d of function() must be a Variable, got %s %r" % (
                i, type(var).__name__, var))
        if isinstance(var, Constant):
            continue  # refused by _check_constants, after missing inputs are reported
        if isinstance(var, SharedVariable):
            raise TypeError("input %d of function(), %r, is a shared variable: functions read "
                            "it implicitly; do not list it as an input" % (i, var))
        if var.owner is not None:
            raise TypeError("input %d of function(), %r, is computed by %s; inputs must be "
                            "root variables (use givens to substitute an intermediate)" % (
                                i, var, var.owner.op))
        if var in seen:
            raise ValueError("input %d of function(), %r, is listed twice" % (i, var))
        seen.add(var)


def _check_constants(inputs):
    for i, var in enumerate(inputs):
        if isinstance(var, Constant):
            raise TypeError("input %d of function(), %r, is a Constant: its value is fixed, "
                            "so it cannot be an input" % (i, var))


def _normalize_updates(updates):
    SharedVariable = _shared_type()
    pairs = list(updates.items()) if isinstance(updates, dict) else list(updates or ())
    out = []
    for target, expr in pairs:
        if not isinstance(target, SharedVariable):
            raise TypeError("updates must target shared variables; %r is not one" % (target,))
        if not isinstance(expr, Variable):
            from nbgraph.tensor.variable import as_tensor_variable

            expr = as_tensor_variable(expr)
        try:
            expr = target.type.filter_variable(expr)
        except TypeError as exc:
            raise TypeError("the update of %r has type %r, which cannot be stored in %r of "
                            "type %r: %s" % (target, expr.type, target, target.type, exc)) \
                from exc
        out.append((target, expr))
    targets = [t for t, _ in out]
    if len(set(targets)) != len(targets):
        raise ValueError("a shared variable is updated twice: %r" % (targets,))
    return out


def function(inputs, outputs=None, updates=None, givens=None, linker=None, rewrite="fast",
             name=None, on_unused_input="raise", profile=False, trust_input=False,
             no_default_updates=False, mode=None, allow_input_downcast=None,
             accept_inplace=False):
    """Compile ``outputs`` as a function of ``inputs``.

    A single output Variable gives a function returning one array; a list
    gives a list.  ``updates`` (pairs or dict: shared variable -> new value)
    are written after each call; ``givens`` substitutes variables before
    compiling.  ``rewrite="fast"`` runs the rewrite pipeline, including the
    ``stabilize`` stage (:mod:`nbgraph.tensor.stabilize`: ``log(1 - sigmoid(x))``
    becomes ``-softplus(x)`` and the like, changing results only toward the
    exact value); ``rewrite="exact"`` runs it without that stage (NumPy's
    results, overflow included); None runs none (or pass a graph rewriter to
    run instead).  ``linker`` is "py", "c", "cvm" or
    "debug" (default: config.linker).
    A shared variable the graph reads whose ``default_update`` is set (a random
    state) is updated with it unless ``updates`` names it or
    ``no_default_updates`` is True or a list holding it.

    Theano's options: inputs may be :class:`~nbgraph.linkers.io.In` (default
    values, keyword names) and outputs :class:`~nbgraph.linkers.io.Out`;
    ``mode`` (a :class:`~nbgraph.linkers.mode.Mode` or a name such as
    "FAST_RUN", "FAST_COMPILE", "DebugMode") chooses the linker and rewrites
    when ``linker``/``rewrite`` are left at their defaults;
    ``allow_input_downcast=True`` lets arguments be cast to the inputs' dtypes
    even when precision is lost (float64 data into a float32 input);
    ``accept_inplace`` is accepted (nbgraph's graphs never hold user-made
    in-place Ops that could overwrite an argument).
    """
    if on_unused_input not in ("raise", "warn", "ignore"):
        raise ValueError("on_unused_input must be 'raise', 'warn' or 'ignore', got %r" % (
            on_unused_input,))
    if isinstance(inputs, Variable) or not isinstance(inputs, (list, tuple)):
        raise TypeError("function() needs a list of input Variables, got %r" % (inputs,))
    options = {"givens": givens, "linker": linker, "rewrite": rewrite, "name": name,
               "on_unused_input": on_unused_input, "trust_input": trust_input, "mode": mode,
               "allow_input_downcast": allow_input_downcast,
               "no_default_updates": no_default_updates}
    if mode is not None:
        from nbgraph.linkers.mode import get_mode

        mode_obj = get_mode(mode)
        linker = linker if linker is not None else mode_obj.linker
        rewrite = mode_obj.rewrite if rewrite == "fast" else rewrite
    if rewrite not in ("fast", "exact", None) and not hasattr(rewrite, "rewrite"):
        raise ValueError("rewrite must be 'fast', 'exact', None or a graph rewriter, got %r"
                         % (rewrite,))
    inputs, input_specs = unpack_inputs(inputs)
    outputs = unpack_outputs(outputs)
    _check_inputs(inputs)
    single = isinstance(outputs, Variable)
    out_list = [outputs] if single else list(outputs or [])
    for i, out in enumerate(out_list):
        if not isinstance(out, Variable):
            from nbgraph.tensor.variable import as_tensor_variable

            try:
                out_list[i] = as_tensor_variable(out)
            except TypeError as exc:
                raise TypeError("output %d of function() must be a Variable, got %r" % (
                    i, out)) from exc
    explicit_updates = _normalize_updates(updates)
    update_pairs = explicit_updates + _default_updates(out_list, explicit_updates,
                                                       no_default_updates)
    computed = out_list + [expr for _, expr in update_pairs]
    if givens:
        pairs = list(givens.items()) if isinstance(givens, dict) else list(givens)
        computed = clone_replace(computed, pairs) if computed else []
    # a missing input is reported first, even when a Constant is listed too:
    # function([a], [a + b]) names b, function([a, b], [a + b]) then refuses a
    _check_missing(inputs, computed, [t for t, _ in update_pairs])
    _check_constants(inputs)
    _check_unused(inputs, computed, on_unused_input)

    SharedVariable = _shared_type()
    shared_inputs = []
    for var in graph_inputs(computed) + [t for t, _ in update_pairs]:
        if isinstance(var, SharedVariable) and var not in shared_inputs:
            shared_inputs.append(var)
    fgraph = FunctionGraph(inputs + shared_inputs, computed, clone=True, name=name)
    if rewrite in ("fast", "exact"):
        from nbgraph.tensor.rewriting import rewrite_graph

        rewrite_graph(fgraph, exclude=("stabilize",) if rewrite == "exact" else ())
    elif rewrite is not None:
        rewrite.rewrite(fgraph)
    linker_name = resolve_linker(linker)
    fn = Function(fgraph, inputs, out_list, single, shared_inputs, update_pairs,
                  linker_name, name=name, profile=profile, trust_input=trust_input,
                  allow_input_downcast=allow_input_downcast, input_specs=input_specs)
    fn.build_options = {"outputs": out_list, "single": single, "updates": explicit_updates,
                        "kwargs": options}
    return fn


def _default_updates(outputs, update_pairs, no_default_updates):
    """``(shared, default_update)`` pairs for the shared variables the graph reads."""
    if no_default_updates is True:
        return []
    if no_default_updates is False or no_default_updates is None:
        skip = set()
    elif isinstance(no_default_updates, (list, tuple, set)):
        skip = set(no_default_updates)
    else:
        raise TypeError("no_default_updates must be True, False or a list of shared "
                        "variables, got %r" % (no_default_updates,))
    SharedVariable = _shared_type()
    done = {t for t, _ in update_pairs} | skip
    found = []
    pending = list(outputs) + [e for _, e in update_pairs]
    while pending:
        new = []
        for var in graph_inputs(pending):
            update = getattr(var, "default_update", None)
            if isinstance(var, SharedVariable) and update is not None and var not in done:
                done.add(var)
                found.append((var, update))
                new.append(update)
        pending = new  # an update's graph may read further states
    return _normalize_updates(found) if found else []


def _check_missing(inputs, computed, update_targets):
    SharedVariable = _shared_type()
    allowed = set(inputs)
    for var in graph_inputs(computed):
        if var in allowed or isinstance(var, (Constant, SharedVariable)):
            continue
        raise MissingInputError(var, path_to(computed, var))


def _check_unused(inputs, computed, policy):
    if policy == "ignore":
        return
    used = set(ancestors(computed)) if computed else set()
    for i, var in enumerate(inputs):
        if var in used:
            continue
        message = ("input %d of function(), %r, is not used by any output; pass "
                   "on_unused_input='ignore' to allow it" % (i, var))
        if policy == "raise":
            raise UnusedInputError(message)
        warnings.warn(message, stacklevel=3)


class Function(FunctionExtras):
    """A compiled graph.  Call it with one value per input.

    Attributes: ``inputs``/``outputs`` (the caller's Variables), ``fgraph``
    (the rewritten graph it runs), ``linker``, ``profile`` (a ProfileStats
    when compiled with ``profile=True``), ``trust_input`` (skip argument
    checks when True), ``maker`` (Theano's view: ``f.maker.fgraph``).
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
                 input_specs=None):
        self.fgraph = fgraph
        self.inputs = inputs
        self.outputs = outputs
        self.single = single
        self.name = name
        self.linker = linker
        self._trust_input = bool(trust_input)
        self.shared_inputs = shared_inputs
        self.updates = updates
        n_in, n_out = len(inputs), len(outputs)
        self._input_types = [v.type for v in fgraph.inputs[:n_in]]
        self.input_specs = input_specs or unpack_inputs(inputs)[1]
        self._input_names = [spec.name for spec in self.input_specs]
        self._has_defaults = any(spec.has_default for spec in self.input_specs)
        self._allow_downcast = allow_input_downcast
        self._filters = [functools.partial(t.filter, allow_downcast=True)
                         if allow_input_downcast else t.filter for t in self._input_types]
        self.program = _make_linker(linker).link(fgraph)
        # Thread safety (nbgraph.linkers.concurrency): a call holds the token
        # (list.pop / append: atomic and cheap); a call finding it taken runs on
        # a twin from this pool; shared variables' locks are held by the gate.
        self._token = [True]
        self._twins = []
        self._gate = SharedGate(self, [s.container for s in shared_inputs]) \
            if shared_inputs else None
        self.program.token = self._token
        cells = self.program.input_cells
        self._arg_cells = cells[:n_in]
        self._shared_cells = list(zip(cells[n_in:], [s.container for s in shared_inputs]))
        out_cells = self.program.output_cells
        self._out_cells = out_cells[:n_out]
        # An update whose value is a constant's data or an input's array is
        # stored as a copy, so the shared variable never aliases either.
        self._update_cells = [(t.container, cell, isinstance(v, Constant) or v in fgraph.inputs)
                              for (t, _), cell, v in zip(updates, out_cells[n_out:],
                                                         fgraph.outputs[n_out:])]
        # An output is copied before it is returned when its array lives on
        # after the call: a constant's data, an input's value, a value that an
        # update stores in a shared variable, the same variable returned
        # at an earlier position (two results must not be one array), or the
        # visible output of a node with hidden outputs (it may be a view of
        # the node's private buffer, which the next call reuses).
        graph_outs = fgraph.outputs
        self._constant_outputs = [
            isinstance(v, Constant) or v in fgraph.inputs or v in graph_outs[:i]
            or v in graph_outs[n_out:] or _has_hidden_siblings(v)
            for i, v in enumerate(graph_outs[:n_out])]
        # Cells emptied after each call: never a constant's (it holds the data).
        self._cleared_cells = [cell for v, cell in zip(graph_outs, out_cells)
                               if not isinstance(v, Constant)]
        self._profile = ProfileStats(self) if profile else None
        self._run = self.program.run
        self._nargs = n_in
        # Each Function gets its own subclass whose __call__ is generated code:
        # one Python frame per call instead of two.
        self.__class__ = type(Function.__name__, (Function,),
                              {"__module__": Function.__module__,
                               "__doc__": Function.__doc__, "__slots__": ()})
        self._install_call_path()

    @property
    def trust_input(self):
        """When True, arguments are used as given, without any check (for hot loops)."""
        return self._trust_input

    @trust_input.setter
    def trust_input(self, value):
        self._trust_input = bool(value)
        if hasattr(self, "_nargs"):  # after __init__: regenerate the call path
            self._install_call_path()

    @property
    def profile(self):
        """A ProfileStats collecting per-node times; without profiling, a falsy
        :data:`~nbgraph.linkers.profile.PROFILE_OFF` whose repr says how to turn it on.
        Setting it (a ProfileStats, True for a new one, None/False for none)
        regenerates the call path."""
        return PROFILE_OFF if self._profile is None else self._profile

    @profile.setter
    def profile(self, value):
        if value is True:
            value = ProfileStats(self)
        elif value is False or value is PROFILE_OFF:
            value = None
        self._profile = value
        if hasattr(self, "_nargs"):
            self._install_call_path()

    def _install_call_path(self):
        """Generate ``__call__`` for the current trust_input and profile settings."""
        self._drop_c_call()
        self._twins = []  # made with the previous settings
        self._fast, call = self._make_fast_call()
        type(self).__call__ = call
        if getattr(self.program, "direct_call", None) is not None:
            if self.program.module is not None:
                self._install_direct()
            elif self.program.compiling:
                # the kernel is still compiling: keep the generic call until it is in
                ref = weakref.ref(self)
                self.program.on_install = [lambda program: ref() and ref()._install_direct()]

    def _drop_c_call(self):
        call = self.__dict__.pop("_c_call", None)
        if call is not None:
            call.reset()  # its previous outputs are not kept alive any longer

    def __del__(self):
        self._drop_c_call()
        release = getattr(self.__dict__.get("program"), "release_buffers", None)
        if release is not None:
            release()

    def _install_direct(self):
        """When the graph is one C kernel whose inputs are the function's inputs and
        whose outputs are its outputs: make ``__call__`` call it with no cells and
        no Program.run.  With the C call path (:mod:`nbgraph.linkers.c.fastcall`),
        ``__call__`` is a C ``Kernel`` object, for trusted calls and for untrusted
        ones whose checks it can do itself (every input's Type accepts exact
        ndarrays of one dtype and ndim unchanged); anything else it hands to the
        generated Python call.  Without it, trusted calls get generated Python."""
        program = self.program
        if self._profile is not None or self._shared_cells or self._update_cells \
                or any(self._constant_outputs) or len(program.nodes) != 1:
            return
        fgraph = self.fgraph
        node = program.nodes[0]
        graph_ins = fgraph.inputs
        if len(graph_ins) != self._nargs or list(fgraph.outputs) != list(node.outputs):
            return
        argmap, consts = [], []  # argument k, or constant k - nargs
        for var in node.inputs:
            if var in graph_ins:
                argmap.append(graph_ins.index(var))
            elif isinstance(var, Constant):
                argmap.append(self._nargs + len(consts))
                consts.append(program.storage[var][0])
            else:
                return
        if self._trust_input and not consts:
            direct = program.direct_call()
            if direct is None:
                return
            self._install_python_direct(direct, argmap, len(node.outputs))
        elif not self._trust_input and not self._c_checks_suffice(argmap):
            return
        fallback = type(self).__call__
        cells, single, token = self._arg_cells, self.single, self._token

        def on_error(code, message, args):
            __tracebackhide__ = True
            from nbgraph.linkers.c.runtime import error_from_message

            exc = error_from_message(code, message, node)
            with holding(token):  # the cells are the generated call's too
                for cell, value in zip(cells, args):
                    cell[0] = value  # for the error's input listing
                program.reraise(exc, 0)

        call = program.kernel_call(fallback, on_error, argmap, self._nargs,
                                   aslist=not single, consts=consts)
        if call is not None:
            self._c_call = call
            type(self).__call__ = call

    def _c_checks_suffice(self, argmap):
        """True when checking "exact ndarray of the node input's dtype and ndim" is
        all that the input Types' filters would do with the arguments."""
        if sorted({k for k in argmap if k < self._nargs}) != list(range(self._nargs)):
            return False  # an unused argument still has to be filtered
        for ttype in self._input_types:
            spec = getattr(ttype, "filter_fast_path", lambda: None)()
            if spec is None or getattr(ttype, "c_arg_kind", None) != "tensor" \
                    or spec != (ttype.numpy_dtype, ttype.ndim):
                return False
        return True

    def _install_python_direct(self, direct, argmap, n_outputs):
        """Generated Python for a trusted call of the program's single kernel."""
        params = ["_nbg_arg%d" % i for i in range(self._nargs)]
        names = {"DIRECT": direct, "P": self.program, "MISSING": _MISSING,
                 "SLOWCALL": _slow_call}
        self._guard_names(names)
        ret = "DIRECT(%s)" % ", ".join(params[k] for k in argmap)
        if not self.single and n_outputs == 1:
            ret = "[%s]" % ret
        failed = []
        for i, cell in enumerate(self._arg_cells):
            names["c%d" % i] = cell
            failed.append("c%d[0] = %s" % (i, params[i]))  # for the error's input listing
        body = ["try:", "    return " + ret, "except Exception as exc:",
                "    __tracebackhide__ = True"] + \
            ["    " + line for line in failed] + ["    P.reraise(exc, 0)"]
        body = self._guarded(body, params)
        guard = _call_guard(self, params)
        call_body = ["if %s:" % " or ".join(guard),
                     "    return SLOWCALL(_nbg_self, (%s) + _nbg_rest, _nbg_kw)"
                     % "".join(p + ", " for p in params)] + body
        source = "def fast(%s):\n%s\n" % (", ".join(params),
                                           "\n".join("    " + line for line in body))
        source += "\ndef call(_nbg_self, %s*_nbg_rest, **_nbg_kw):\n%s\n" % (
            "".join(p + "=MISSING, " for p in params),
            "\n".join("    " + line for line in call_body))
        exec(compile_source(source, "<nbgraph direct call>"), names)
        self._fast = names["fast"]
        type(self).__call__ = names["call"]

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == self._nargs and self._profile is None:
            return self._fast(*args)
        return self._call(args, kwargs)

    def _make_fast_call(self):
        """Straight-line code for the common call (positional arguments, no profile).

        It does exactly what :meth:`_call` does; when an argument is refused it
        hands over to :meth:`_call`, which reports the error.
        """
        # (a weak reference: the generated code must not keep the Function alive)
        names = {"RUN": self._run, "SELF": weakref.ref(self), "ndarray": np.ndarray}
        self._guard_names(names)
        params = ["_nbg_arg%d" % i for i in range(self._nargs)]
        body = []
        for i, cell in enumerate(self._arg_cells):
            names["c%d" % i] = cell
            if self.trust_input:
                body.append("c%d[0] = _nbg_arg%d" % (i, i))
            else:
                ttype = self._input_types[i]
                names["F%d" % i] = self._filters[i]
                spec = getattr(ttype, "filter_fast_path", lambda: None)()
                if spec is not None:
                    # the values the type's filter returns unchanged, accepted inline
                    names["D%d" % i], ndim = spec
                    body += ["if type(%s) is ndarray and %s.dtype is D%d and %s.ndim == %d:"
                             % (params[i], params[i], i, params[i], ndim),
                             "    c%d[0] = _nbg_arg%d" % (i, i),
                             "else:",
                             "    c%d[0] = F%d(_nbg_arg%d)" % (i, i, i)]
                    continue
                body.append("c%d[0] = F%d(_nbg_arg%d)" % (i, i, i))
        if not self.trust_input and self._arg_cells:
            body = (["try:"] + ["    " + line for line in body] +
                    ["except (TypeError, ValueError):"] +
                    ["    c%d[0] = None" % i for i in range(self._nargs)] +
                    ["    return SELF()._call_held((%s), None)"
                     % "".join(p + ", " for p in params)])
        for k, (cell, container) in enumerate(self._shared_cells):
            names["s%d" % k], names["S%d" % k] = cell, container
            body.append("s%d[0] = S%d[0]" % (k, k))
        # (a failing run's frame is left out of IPython's and pytest's tracebacks)
        body += ["try:", "    RUN()", "except BaseException:", "    __tracebackhide__ = True",
                 "    raise"]
        results = []
        for j, (cell, copy_needed) in enumerate(zip(self._out_cells, self._constant_outputs)):
            names["o%d" % j] = cell
            body.append("r%d = o%d[0]" % (j, j))
            if copy_needed:
                body.append("if isinstance(r%d, ndarray):" % j)
                body.append("    r%d = r%d.copy()" % (j, j))
            results.append("r%d" % j)
        for k, (container, cell, copy_needed) in enumerate(self._update_cells):
            names["U%d" % k], names["u%d" % k] = container, cell
            body.append("v = u%d[0]" % k)
            if copy_needed:
                body.append("if isinstance(v, ndarray):")
                body.append("    v = v.copy()")
            body.append("U%d[0] = v" % k)
        for k, cell in enumerate(self._cleared_cells):
            names["z%d" % k] = cell
            body.append("z%d[0] = None" % k)
        for i in range(self._nargs):
            body.append("c%d[0] = None" % i)
        if self.single:
            body.append("return r0")
        else:
            body.append("return [%s]" % ", ".join(results))
        body = self._guarded(body, params)
        source = "def fast(%s):\n%s\n" % (", ".join(params),
                                           "\n".join("    " + line for line in body))
        # The same body as the class's __call__: positional arguments bound
        # directly; anything else (keywords, a wrong count, profiling) goes to _call.
        names["MISSING"], names["SLOWCALL"] = _MISSING, _slow_call
        # (names no input's keyword can collide with)
        guard = _call_guard(self, params)
        call_body = ["if %s:" % " or ".join(guard),
                     "    return SLOWCALL(_nbg_self, (%s) + _nbg_rest, _nbg_kw)"
                     % "".join(p + ", " for p in params)] + body
        source += "\ndef call(_nbg_self, %s*_nbg_rest, **_nbg_kw):\n%s\n" % (
            "".join(p + "=MISSING, " for p in params),
            "\n".join("    " + line for line in call_body))
        exec(compile_source(source, "<nbgraph function call>"), names)
        return names["fast"], names["call"]

    def _guard_names(self, names):
        """The names :meth:`_guarded` code uses."""
        names.update(TAKE=self._token.pop, GIVE=self._token.append, CONTENDED=contended_call)
        names.setdefault("SELF", weakref.ref(self))
        if self._gate is not None:
            names.update(GATE_IN=self._gate.enter, GATE_OUT=self._gate.leave)

    def _guarded(self, body, params):
        """Generated ``body`` wrapped so that it runs holding the token (a twin runs
        the call when the token is taken) and, with shared variables, their locks.

        Invariant every call path must keep (the C ``Kernel`` path excepted: it
        touches no cells): storage cells, a program's scratch and the shared
        containers are only read or written while the token (and gate) is held.
        """
        if self._gate is not None:
            body = ["GATE_IN()", "try:"] + ["    " + line for line in body] + \
                ["finally:", "    GATE_OUT()"]
        return (["try:", "    TAKE()", "except IndexError:",
                 "    return CONTENDED(SELF, (%s))" % "".join(p + ", " for p in params),
                 "try:"] + ["    " + line for line in body] +
                ["finally:", "    GIVE(True)"])

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
        """The call itself; the caller holds the token (and the gate)."""
        if self._has_defaults:
            args = self._fill_defaults(args, kwargs)
        elif kwargs:
            args = self._merge_kwargs(args, kwargs)
        if len(args) != len(self._arg_cells):
            raise TypeError("%s expects %d arguments (%s), got %d" % (
                self._describe(), len(self._arg_cells),
                ", ".join(repr(v) for v in self.inputs), len(args)))
        if self.trust_input:
            for cell, value in zip(self._arg_cells, args):
                cell[0] = value
        else:
            for i, (cell, value, ttype) in enumerate(zip(self._arg_cells, args,
                                                         self._input_types)):
                try:
                    cell[0] = self._filters[i](value)
                except (TypeError, ValueError) as exc:
                    for done in self._arg_cells[:i]:
                        done[0] = None  # keep no reference to the earlier arguments
                    reason = exc
                    if isinstance(exc, DowncastError):
                        reason = "%s; cast it first or compile with function(..., " \
                            "allow_input_downcast=True)" % (exc.reason,)
                    raise TypeError("bad argument %d (%s) to %s: expected %r, got %s: %s" % (
                        i, self._input_names[i] or "unnamed", self._describe(), ttype,
                        _value_text(value), reason)) from None
        for cell, container in self._shared_cells:
            cell[0] = container[0]
        if self._profile is not None:
            self._profile.calls += 1
            self.program.run_profiled(self._profile)
        else:
            self._run()
        results = []
        for cell, copy_needed in zip(self._out_cells, self._constant_outputs):
            value = cell[0]
            if copy_needed and isinstance(value, np.ndarray):
                value = value.copy()
            results.append(value)
        for container, cell, copy_needed in self._update_cells:
            value = cell[0]
            if copy_needed and isinstance(value, np.ndarray):
                value = value.copy()
            container[0] = value
        for cell in self._cleared_cells:
            cell[0] = None
        for cell in self._arg_cells:
            cell[0] = None
        if self.single:
            return results[0]
        return results

    def _merge_kwargs(self, args, kwargs):
        args = list(args)
        names = self._input_names
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError("%s has no input named %r (inputs: %s)" % (
                    self._describe(), key, names))
            if names.count(key) > 1:
                raise TypeError("%s has %d inputs named %r; pass their values by position" % (
                    self._describe(), names.count(key), key))
            pos = names.index(key)
            while len(args) <= pos:
                args.append(_MISSING)
            if args[pos] is not _MISSING:
                raise TypeError("%s got two values for input %r" % (self._describe(), key))
            args[pos] = value
        if any(a is _MISSING for a in args):
            missing = [names[i] for i, a in enumerate(args) if a is _MISSING]
            raise TypeError("%s is missing values for %s" % (self._describe(), missing))
        return args

    def _describe(self):
        return "function %r" % self.name if self.name else "the function"

    def dprint(self, file=None, print_type=False, **kwargs):
        """dprint of the compiled (rewritten) graph (keywords as
        :func:`nbgraph.dprint`, e.g. ``print_destroy_map=True``)."""
        from nbgraph.display.text import dprint

        return dprint(self.fgraph, file=file, print_type=print_type, **kwargs)

    def __repr__(self):
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


_MISSING = object()


def _slow_call(function, args, kwargs):
    """The generated __call__'s way out: every case but plain positional calls."""
    return function._call(tuple(a for a in args if a is not _MISSING), kwargs)


def _call_guard(function, params):
    """The conditions sending a generated ``__call__`` to :meth:`Function._call`
    (a profiled function always goes there; setting ``profile`` regenerates it)."""
    if function._profile is not None:
        return ["True"]
    return ["_nbg_rest", "_nbg_kw"] + (["%s is MISSING" % params[-1]] if params else [])


def _has_hidden_siblings(var):
    """True when ``var`` comes from a node whose Op hides other outputs."""
    node = var.owner
    return (node is not None and len(node.outputs) > 1
            and getattr(node.op, "default_output", None) is not None)


def _value_text(value):
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None:
        return "%s of shape %s and dtype %s" % (type(value).__name__, shape, dtype)
    return "%s %r" % (type(value).__name__, value)
