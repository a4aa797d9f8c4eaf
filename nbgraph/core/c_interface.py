"""The C side of Ops and Types, declared: every hook the C linker may call.

An Op that has C code says so in its class line, ``class Elemwise(ElemwiseC,
Op)``, where ``ElemwiseC`` derives from :class:`CLinkerOp` and overrides the
hooks below.  Nothing is installed onto a class from outside, and the C
linker (:mod:`nbgraph.linkers.c`, which documents the calling convention in
full) calls only the methods declared here: an Op that is not a
:class:`CLinkerOp` runs in Python.

* :class:`CLinkerOp` — the kernel (``c_code``), what the module needs for it
  (``c_support_code``, ``c_headers``), its version (``c_code_cache_version``),
  how the outputs are made before the call (``c_output_rule``, with
  ``c_prepare_outputs`` for a :data:`OutputRule.CUSTOM` rule) and where the
  C-VM linker had better run ``perform`` (``c_view_only``, ``c_preferred``);
* :class:`OutputRule` — the small frozen value an Op returns from
  ``c_output_rule``: the linker derives the Python preparation, the
  generated call and the C call path from it;
* :class:`CLinkerType` — how values of a Type are declared, read and
  written in C; :class:`CDataType` — an opaque C pointer (cffi is imported
  here only, and only when such a value is checked).

>>> from nbgraph.core.op import Op
>>> class Twice(CLinkerOp, Op):
...     def c_code(self, node, name, inputs, outputs, sub):
...         return "*%s = 2 * *%s;" % (outputs[0], inputs[0])
>>> Twice().has_c_code(None), Twice().c_output_rule(None)
(True, OutputRule('static'))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from nbgraph.core.type import MethodNotDefined, Type

if TYPE_CHECKING:
    from nbgraph.core.graph import Apply

__all__ = ["CLinkerOp", "CLinkerType", "CDataType", "OutputRule", "c_source", "c_template"]

_SOURCES: dict[tuple[str, str], str] = {}


def c_source(package: str, name: str) -> str:
    """The text of the C file ``name`` shipped in ``package`` (package data, read once).

    Read through the package's loader, as ``pkgutil.get_data`` does (without
    importing pkgutil, or ``importlib.resources``, which costs tens of
    milliseconds in a fresh process: a warm-cache first call cannot afford it).
    """
    key = (package, name)
    text = _SOURCES.get(key)
    if text is None:
        import importlib
        import os

        module = importlib.import_module(package)
        loader = getattr(module.__spec__, "loader", None)
        if loader is None or not hasattr(loader, "get_data") or module.__file__ is None:
            raise FileNotFoundError("%s has no resource %s" % (package, name))  # pragma: no cover
        path = os.path.join(os.path.dirname(module.__file__), *name.split("/"))
        text = _SOURCES[key] = loader.get_data(path).decode("utf-8")
    return text


def c_template(package: str, name: str, **keys: object) -> str:
    """:func:`c_source` with its ``${key}`` placeholders filled (``string.Template``'s
    rules: ``$key`` and ``${key}``, a missing key raises KeyError, ``$$`` is a
    literal dollar, any other ``$`` raises ValueError)."""
    return _substitute(c_source(package, name), keys)


_IDENT_START = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_IDENT = _IDENT_START | frozenset("0123456789")


def _identifier_end(text: str, start: int) -> int:
    """The end of the ASCII identifier starting at ``start`` (``start`` when none does)."""
    if start >= len(text) or text[start] not in _IDENT_START:
        return start
    end = start + 1
    while end < len(text) and text[end] in _IDENT:
        end += 1
    return end


def _substitute(text: str, keys: dict[str, object]) -> str:
    """``string.Template(text).substitute(keys)``, without importing ``string`` (whose
    Template class compiles its pattern on import) or compiling a pattern at all
    (milliseconds of a fresh process's first compile): a scan from ``$`` to ``$``."""
    out = []
    pos = 0
    while True:
        dollar = text.find("$", pos)
        if dollar < 0:
            out.append(text[pos:])
            return "".join(out)
        out.append(text[pos:dollar])
        after = dollar + 1
        if text.startswith("$", after):
            out.append("$")
            pos = after + 1
            continue
        end = _identifier_end(text, after)
        if end > after:  # $name
            out.append(str(keys[text[after:end]]))
            pos = end
            continue
        if text.startswith("{", after):  # ${name}
            end = _identifier_end(text, after + 1)
            if end > after + 1 and text.startswith("}", end):
                out.append(str(keys[text[after + 1:end]]))
                pos = end + 1
                continue
        lines = text[:after].splitlines(keepends=True)
        column = after - len("".join(lines[:-1])) if lines else 1
        raise ValueError("Invalid placeholder in string: line %d, col %d"
                         % (len(lines) or 1, column))


class OutputRule:
    """How a C-run node's output arrays are made before its kernel runs.

    ``kind`` is one of

    ``"broadcast"``
        every output has the broadcast shape of the inputs (all of one ndim);
        ``targets[j]`` is the input output ``j`` is written into (in place,
        it must have that shape) or -1 for a fresh array;
    ``"drop_axes"``
        one fresh output: the broadcast shape of the inputs less ``axes``
        (a reduction);
    ``"same_as"``
        one output that is input ``input`` itself (a view that checks);
    ``"static"``
        fresh outputs of their Types' static shapes;
    ``"custom"``
        the Op's :meth:`CLinkerOp.c_prepare_outputs` makes them.

    Rules compare and hash by value; ``repr`` shows the fields that matter.
    """

    __slots__ = ("kind", "targets", "axes", "input")
    KINDS = ("broadcast", "drop_axes", "same_as", "static", "custom")
    #: Fresh outputs of their Types' static shapes (set below the class).
    STATIC: ClassVar[OutputRule]
    #: Outputs made by the Op's ``c_prepare_outputs`` (set below the class).
    CUSTOM: ClassVar[OutputRule]

    kind: str
    targets: tuple[int, ...]
    axes: tuple[int, ...]
    input: int

    def __init__(self, kind: str, targets: Iterable[int] = (), axes: Iterable[int] = (),
                 input: int = 0) -> None:
        if kind not in self.KINDS:
            raise ValueError("OutputRule kind must be one of %s, got %r" % (self.KINDS, kind))
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "targets", tuple(int(t) for t in targets))
        object.__setattr__(self, "axes", tuple(int(a) for a in axes))
        object.__setattr__(self, "input", int(input))

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError("OutputRule is frozen")

    @classmethod
    def broadcast(cls, targets: Iterable[int] = (), nout: int = 1) -> OutputRule:
        """Outputs of the inputs' broadcast shape; ``targets`` as in the class doc
        (default: ``nout`` fresh arrays)."""
        return cls("broadcast", targets=tuple(targets) or (-1,) * nout)

    @classmethod
    def drop_axes(cls, axes: Iterable[int]) -> OutputRule:
        """One output: the inputs' broadcast shape without ``axes``."""
        return cls("drop_axes", axes=tuple(axes))

    @classmethod
    def same_as(cls, i: int) -> OutputRule:
        """One output that is input ``i``."""
        return cls("same_as", input=i)

    @property
    def in_place(self) -> bool:
        """True when a broadcast rule writes some output into an input."""
        return any(t >= 0 for t in self.targets)

    def _key(self) -> tuple[str, tuple[int, ...], tuple[int, ...], int]:
        return (self.kind, self.targets, self.axes, self.input)

    def __eq__(self, other: object) -> bool:
        return type(other) is OutputRule and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = {"broadcast": ", targets=%r" % (self.targets,),
                 "drop_axes": ", axes=%r" % (self.axes,),
                 "same_as": ", input=%d" % self.input}.get(self.kind, "")
        return "OutputRule(%r%s)" % (self.kind, extra)


OutputRule.STATIC = OutputRule("static")
OutputRule.CUSTOM = OutputRule("custom")


class CLinkerOp:
    """The C side of an Op: derive from it (before ``Op``) and override :meth:`c_code`.

    ``class MyOp(CLinkerOp, Op)``.  Every method has a documented default, so
    an Op overrides only what it needs; the C linker calls nothing else.
    """

    def c_code(self, node: Apply, name: str, inputs: Sequence[str],
               outputs: Sequence[str], sub: dict[str, Any]) -> str:
        """C statements computing the outputs of ``node``.

        ``inputs`` / ``outputs`` are the C names of the operands (declared by
        their Types' :class:`CLinkerType` hooks: a tensor ``x`` is ``T *x``
        with ``x_dims`` and ``x_strides``); ``name`` is unique in the module;
        ``sub`` holds ``"fail"`` (the statement aborting the kernel), ``"err"``
        (the message buffer for ``nbg_errorf``), ``"kernel"`` (a prefix for
        helper names) and ``"helpers"`` (a list to append whole C functions
        to, emitted before the kernel).
        """
        raise MethodNotDefined("%s has no C implementation" % (self,))

    def has_c_code(self, node: Apply | None) -> bool:
        """True when ``node`` can run as C (default: this class defines :meth:`c_code`)."""
        return type(self).c_code is not CLinkerOp.c_code

    def c_handles_restricted(self, node: Apply) -> bool:
        """True when the C of ``node`` is right for operands whose Types are
        *restricted* (:meth:`CLinkerType.c_restricted`: float16 and complex
        tensors).  Default False: such a node runs in Python under the C-VM
        linker and is refused, with its reason, by ``linker="c"``."""
        return False

    def c_support_code(self, node: Apply | None = None) -> str:
        """C definitions (helper functions, structs) the code needs, once per module."""
        return ""

    def c_headers(self) -> list[str]:
        """Header files to ``#include`` (``"math.h"``, or ``"<x.h>"`` / ``'"x.h"'``)."""
        return []

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """Version tuple of the C code (part of the module's cache key); ``()``: unversioned."""
        return ()

    def c_output_rule(self, node: Apply | None) -> OutputRule:
        """The :class:`OutputRule` of ``node``'s outputs.

        Default: :data:`OutputRule.CUSTOM` when the class defines
        :meth:`c_prepare_outputs`, else :data:`OutputRule.STATIC` (the linker
        refuses a node whose outputs then have no static shape).
        """
        if type(self).c_prepare_outputs is not CLinkerOp.c_prepare_outputs:
            return OutputRule.CUSTOM
        return OutputRule.STATIC

    def c_prepare_outputs(self, node: Apply, inputs: Sequence[Any]) -> list[Any]:
        """For a ``"custom"`` rule: the output values for input values ``inputs``.

        Called in Python before the kernel: return fresh arrays of the right
        shape and dtype, an input (in place) or a view.  The kernel re-checks
        every size it relies on.
        """
        raise MethodNotDefined("%s does not define c_prepare_outputs" % (self,))

    def c_constant_arguments(self, node: Apply) -> tuple[Apply, list[Any]] | None:
        """None, or ``(kernel_node, values)``: an equivalent node whose kernel reads
        some of ``node``'s constants from inputs appended after its own, and
        the values of those appended inputs.

        The C text (and so the compiled module, its cache entry and its
        compile time) then depends on the constants' types, not their
        values: a cell re-run with ``0.5`` changed to ``0.6`` reuses the
        module.  The kernel node's outputs have the node's types; its first
        inputs stand for the node's inputs (a constant among them may be a
        plain variable of its type: its value is passed as it is).
        """
        return None

    def c_view_only(self, node: Apply) -> bool:
        """True when the C code only re-checks what a cheap ``perform`` does (a view):
        the C-VM linker then runs ``perform``."""
        return False

    def c_preferred(self, node: Apply) -> bool:
        """False where ``perform`` is faster than this C (the C-VM linker then runs it)."""
        return True

    def c_call_choice(self, node: Apply) -> Callable[..., bool] | None:
        """For a node ``c_preferred`` leaves to ``perform``: None (the default), or a
        function of the node's input values telling whether *this call* runs the C.

        The C-VM linker then compiles the node's C too and picks per call (the
        C's results must agree with ``perform``'s within the output Type's
        tolerance); the node's kind stays "py"."""
        return None


class CLinkerType:
    """The C side of a Type: how the C linker declares, reads and writes its values.

    Each hook returns C source.  ``name`` is the C identifier chosen for the
    value; ``sub`` maps special names to code, at least ``sub["fail"]`` (the
    statement that reports an error) and, for the hooks that move data in and
    out, ``sub["slot"]`` (the C expression of the value's slot in the argument
    block the linker passes) and ``sub["dims"]`` (its sizes and strides).
    ``nbgraph.linkers.c`` documents that calling convention in full.  Hooks a
    Type does not implement raise :class:`MethodNotDefined`, and the C linker
    then runs that value's Ops in Python.
    """

    #: How the C linker passes values: ``"tensor"`` (data pointer plus sizes and
    #: strides), ``"cdata"`` (an opaque pointer) or None (not at all).
    c_arg_kind: str | None = None

    def _not_defined(self, hook: str) -> NoReturn:
        raise MethodNotDefined("%s does not define the C hook %s()" % (
            type(self).__name__, hook))

    def c_declare(self, name: str, sub: dict[str, Any], check_input: bool = True) -> str:
        """C declarations of the variables that hold the value named ``name``."""
        self._not_defined("c_declare")

    def c_init(self, name: str, sub: dict[str, Any]) -> str:
        """C code giving the declared variables an empty initial state."""
        self._not_defined("c_init")

    def c_extract(self, name: str, sub: dict[str, Any], check_input: bool = True) -> str:
        """C code reading the value from its slot into the declared variables."""
        self._not_defined("c_extract")

    def c_extract_out(self, name: str, sub: dict[str, Any],
                      check_input: bool = True) -> str:
        """Like :meth:`c_extract` for an output slot, which may still be empty."""
        return self.c_extract(name, sub, check_input)

    def c_cleanup(self, name: str, sub: dict[str, Any]) -> str:
        """C code releasing what :meth:`c_extract` acquired."""
        return ""

    def c_sync(self, name: str, sub: dict[str, Any]) -> str:
        """C code writing the declared variables back into the value's slot."""
        self._not_defined("c_sync")

    def c_code_cache_version(self) -> tuple[Any, ...]:
        """Version tuple of the C code; ``()`` means never cache across processes."""
        return ()

    def c_is_simple(self) -> bool:
        """True for builtin C types and small structs passed by value."""
        return False

    def c_literal(self, data: Any) -> str:
        """A C expression for the constant value ``data``."""
        self._not_defined("c_literal")

    def c_restricted(self) -> bool:
        """True when only Ops that say so (``CLinkerOp.c_handles_restricted``)
        may touch values of this Type in C (float16 and complex tensors: C's
        arithmetic on them is not NumPy's unless written for it)."""
        return False


class CDataType(CLinkerType, Type):
    """An opaque C pointer passed between Ops' C code.

    ``ctype`` is the C pointer type, star included (``"struct counter *"``);
    ``freefunc`` names a ``void f(ctype)`` C function that releases the
    pointer when its Python holder is collected.  At run time the value is a
    cffi pointer object.
    """

    __props__ = ("ctype", "freefunc")
    c_arg_kind = "cdata"

    def __init__(self, ctype: str, freefunc: str | None = None) -> None:
        if not isinstance(ctype, str) or not ctype.strip().endswith("*"):
            raise TypeError("CDataType needs a C pointer type such as 'struct foo *', got %r"
                            % (ctype,))
        if freefunc is not None and not (isinstance(freefunc, str) and freefunc.isidentifier()):
            raise TypeError("freefunc must be the name of a C function, got %r" % (freefunc,))
        self.ctype = " ".join(ctype.replace("*", " * ").split())
        self.freefunc = freefunc

    def filter(self, data: Any, strict: bool = False,
               allow_downcast: bool | None = None) -> Any:
        ctype_of = _cffi_pointer_ctype(data)
        if ctype_of is None:
            raise TypeError("%r expects a cffi pointer, got %s" % (self, type(data).__name__))
        if ctype_of not in (self.ctype, "void *"):
            raise TypeError("%r expects a pointer of C type '%s', got '%s'" % (
                self, self.ctype, ctype_of))
        return data

    def values_eq(self, a: Any, b: Any) -> bool:
        return bool(a == b)

    def c_declare(self, name: str, sub: dict[str, Any], check_input: bool = True) -> str:
        return "%s %s;\n" % (self.ctype, name)

    def c_init(self, name: str, sub: dict[str, Any]) -> str:
        return "%s = NULL;\n" % name

    def c_extract(self, name: str, sub: dict[str, Any], check_input: bool = True) -> str:
        return "%s = (%s)(%s);\n" % (name, self.ctype, sub["slot"])

    def c_sync(self, name: str, sub: dict[str, Any]) -> str:
        return "%s = (void *)%s;\n" % (sub["slot"], name)

    def c_code_cache_version(self) -> tuple[Any, ...]:
        return (1,)

    def c_is_simple(self) -> bool:
        return True

    def __str__(self) -> str:
        return "CDataType(%s)" % self.ctype


def _cffi_pointer_ctype(data: object) -> str | None:
    try:
        import cffi  # type: ignore[import-untyped]  # cffi ships no type stubs
    except ImportError:  # pragma: no cover - cffi is a dependency
        return None
    ffi = cffi.FFI()
    if not isinstance(data, ffi.CData):
        return None  # ffi.typeof would parse a string such as "int *" as a type name
    try:
        ctype = ffi.typeof(data)
    except TypeError:
        return None
    if ctype.kind != "pointer":
        return None
    return " ".join(ctype.cname.replace("*", " * ").split())
