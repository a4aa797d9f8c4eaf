"""Generating one C module for the C-capable nodes of a compiled function.

:func:`node_kernel` turns one Apply node into the text of a kernel function
(the operands' Types declare and read the arguments, the Op's ``c_code``
computes); :func:`module_source` joins kernels into a module: the shared
prelude, each distinct support-code block once, each distinct kernel once
(structurally equal nodes share one C function, which keeps modules and
compile times small), and the exported table described in
:mod:`nbgraph.linkers.c`.  A kernel's helper functions (``sub["helpers"]``,
e.g. the tasks of a parallel loop) are part of its text, so they are shared
and renamed with it.
"""


import functools
import re
import threading
from collections import OrderedDict

from nbgraph.core.c_interface import CLinkerType, c_source, c_template
from nbgraph.core.graph import Constant
from nbgraph.linkers.c import compiler as _compiler
from nbgraph.linkers.c import units
from nbgraph.linkers.c.compiler import sha256
from nbgraph.linkers.c.threads import ERRLEN, RUNTIME_VERSION

__all__ = ["prelude", "as_standalone", "node_kernel", "module_source", "KernelSource",
           "ERROR_CODES", "operand_layout", "c_supported", "source_parts", "SPLIT_CHARS",
           "PART_MARK", "MATH_H", "MATH_DECLARATIONS", "math_used", "math_block",
           "STD_HEADERS"]

#: Return codes of kernels and the Python exceptions they become.
ERROR_CODES = {1: ValueError, 2: TypeError, 3: IndexError, 4: MemoryError, 5: RuntimeError,
               6: ZeroDivisionError, 7: OverflowError}


#: A module whose kernels hold more C than this (characters) is compiled as two
#: translation units at once (:data:`PART_MARK`; a machine has 2 cores or more):
#: each part repeats the prelude and support code, which costs less than the
#: compiler's time on the kernels of a big module (a 12-layer MLP's gradient).
#: The parts are balanced by their kernels' estimated compile work
#: (:func:`_cost`), the second part starting with the support code it always
#: holds, the first gaining what its kernels need (the 12-layer MLP's parts:
#: 1441 + 1170 million compiler instructions -> 1376 + 1237, valgrind; Dot's
#: packing function is support code of the second part).
SPLIT_CHARS = 24_000

#: What one loop of a kernel weighs in :func:`_cost`, in characters of its text.
#: GCC's loop passes and vectoriser are most of a kernel's compile work: in the
#: 12-layer MLP's module (valgrind, compiler instructions) a kernel costs ~30-60M
#: per loop and 2-8M without one, while its length says little (a 5.6k-character
#: kernel of 3 loops took 118M, a 2.8k one of 3 loops 137M, 4.7k of 6 loops 232M).
LOOP_CHARS = 9_000

#: The line between two translation units of one module's source.
PART_MARK = "\n/* ---- nbgraph: next translation unit ---- */\n"


def prelude(info, standalone=False, math=None):
    """The text every module starts with: ``csrc/module_head.h`` (filled in),
    libmvec's declarations when the compiler probe found it, ``csrc/common.h``,
    then ``csrc/prelude.h``; a *standalone* module (no runtime library, see
    :func:`nbgraph.linkers.c.threads.standalone`) has ``csrc/helpers.h`` in
    between, the others call the runtime's copy of the helpers.  ``math``:
    the head's access to math functions (:func:`math_block`; default: the
    whole ``<math.h>``)."""
    head = c_template(__package__, "csrc/module_head.h", abi=_compiler.ABI_VERSION,
                      errlen=ERRLEN, rt_version=RUNTIME_VERSION,
                      math=MATH_H if math is None else math,
                      std_types=c_source(__package__, "csrc/std_types.h"))
    mvec = ""
    if info is not None and info.mvec:
        mvec = "/* vector versions of libm functions (glibc libmvec) */\n" + \
            _compiler._mvec_declarations()
    helpers = ""
    if standalone:
        helpers = _STANDALONE + standalone_helpers()
    return head + mvec + c_source(__package__, "csrc/common.h") + helpers + \
        c_source(__package__, "csrc/prelude.h") + _GLUE


#: A kernel whose body only checks its operands and hands its loop to the runtime
#: (``sub["glue"]`` set by the Op's ``c_code``: the elementwise loops, whose rows
#: are helper functions) is compiled at -O1, and so are the strided rows of
#: elementwise loops (plain scalar loops): a module of one 6-op chain took 332
#: million compiler instructions, 306 with these (cachegrind); -O0 kernels
#: (291) cost ~0.1 us more per call.  The level changes no result: no
#: contraction (-ffp-contract=off), no vectorisation of these functions.
_GLUE = """/* NBG_GLUE: kernels that only check operands and hand rows to the runtime;
   NBG_STRIDED_ROW: the scalar loop of a row of other strides than 1
   (see nbgraph/linkers/c/codegen.py, nbgraph/tensor/c_code/parallel.py) */
#if defined(__GNUC__) && !defined(__clang__)
#define NBG_GLUE __attribute__((optimize("O1")))
#define NBG_STRIDED_ROW __attribute__((optimize("O1")))
#else
#define NBG_GLUE
#define NBG_STRIDED_ROW
#endif
"""


_STANDALONE = "#define NBG_STANDALONE 1\n"


def as_standalone(source, info):
    """``source`` (a module generated to call the runtime library's helpers) with
    the standalone prelude instead (see :func:`prelude`)."""
    common = c_source(__package__, "csrc/common.h")
    rest = c_source(__package__, "csrc/prelude.h")
    return source.replace(common + rest, common + _STANDALONE + standalone_helpers() + rest)


def standalone_helpers():
    """What a standalone module compiles of the runtime's C: ``csrc/helpers.h``
    and the reduction driver ``csrc/reduce.h``."""
    return c_source(__package__, "csrc/helpers.h") + c_source(__package__, "csrc/reduce.h")


#: How a module that needs more of math.h than :data:`MATH_DECLARATIONS` gets it.
MATH_H = "#include <math.h>"

#: The math functions kernels call most, declared by the module head instead of
#: parsing <math.h> (~20 ms of every compile): name -> number of arguments; the
#: float versions (``expf``) too.  The simd declarations of libmvec's functions
#: (:func:`nbgraph.linkers.c.compiler._mvec_declarations`) follow them.
MATH_DECLARATIONS = dict(
    [(f, 1) for f in ("acos", "asin", "atan", "cos", "sin", "tan", "acosh", "asinh", "atanh",
                      "cosh", "sinh", "tanh", "exp", "exp2", "expm1", "log", "log10",
                      "log1p", "log2", "cbrt", "fabs", "sqrt", "erf", "erfc", "ceil",
                      "floor", "nearbyint", "rint", "round", "trunc")]
    + [(f, 2) for f in ("atan2", "pow", "hypot", "fmod", "remainder", "copysign", "fmax",
                        "fmin", "nextafter")]
    + [("fma", 3)])

#: math.h's macros the head defines as glibc's <math.h> does with GCC (a compiler
#: other than GCC or clang gets <math.h>).
_MATH_MACROS = {
    "INFINITY": "(__builtin_inff())", "NAN": "(__builtin_nanf(\"\"))",
    "HUGE_VAL": "(__builtin_huge_val())", "HUGE_VALF": "(__builtin_huge_valf())",
    "isnan(x)": "__builtin_isnan(x)", "isinf(x)": "__builtin_isinf_sign(x)",
    "isfinite(x)": "__builtin_isfinite(x)", "isnormal(x)": "__builtin_isnormal(x)",
    "signbit(x)": "__builtin_signbit(x)"}

_DECLARED = frozenset(list(MATH_DECLARATIONS) + [f + "f" for f in MATH_DECLARATIONS]
                      + [m.split("(")[0] for m in _MATH_MACROS])
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


@functools.cache
def _names(name):
    """The identifiers listed in the file ``csrc/<name>`` (a frozenset)."""
    text = c_source(__package__, "csrc/" + name)
    return frozenset(word for line in text.splitlines() if not line.startswith("#")
                     for word in line.split())


@functools.cache
def _math_names():
    """Every identifier of glibc's <math.h> (``csrc/math_names.txt``), and those
    of <stdint.h> and <stddef.h> the module head does not define itself
    (``csrc/std_names.txt``)."""
    return _names("math_names.txt") | _names("std_names.txt")


#: What the module head says when a module uses names of <stdint.h> or
#: <stddef.h> beyond the types it defines (``csrc/module_head.h``).
STD_HEADERS = "#define NBG_STD_HEADERS 1"


def math_used(text):
    """The identifiers of <math.h> that the C ``text`` uses (a frozenset), with
    those of <stdint.h> and <stddef.h> the module head does not define; words in
    comments do not count ("finite" in a sentence is not a call of finite())."""
    return _math_names().intersection(_WORD.findall(_COMMENT.sub(" ", text)))


def math_block(used):
    """The module head's access to math functions for a module using the math.h
    names ``used``: declarations of the ones :data:`MATH_DECLARATIONS` and the
    macros cover (compiled as calls to GCC's built-ins, as with the header),
    else ``#include <math.h>``; preceded by :data:`STD_HEADERS` when ``used``
    holds names of <stdint.h> or <stddef.h> (:func:`math_used`)."""
    used = set(used)
    std = used & _names("std_names.txt")
    if std:
        return STD_HEADERS + "\n" + math_block(used - std)
    if not used <= _DECLARED:
        return MATH_H
    lines = ["/* math.h's functions and macros this module uses (the header is not parsed) */",
             "#if defined(__GNUC__) || defined(__clang__)"]
    for name in sorted(MATH_DECLARATIONS):
        n = MATH_DECLARATIONS[name]
        for fname, ctype in ((name, "double"), (name + "f", "float")):
            if fname in used:
                lines.append("%s %s(%s);" % (ctype, fname, ", ".join([ctype] * n)))
    for macro, value in sorted(_MATH_MACROS.items()):
        if macro.split("(")[0] in used:
            lines.append("#define %s %s" % (macro, value))
    lines += ["#else", MATH_H, "#endif"]
    return "\n".join(lines)


def c_supported(vtype):
    """True when values of ``vtype`` can be passed to C kernels."""
    return isinstance(vtype, CLinkerType) and getattr(vtype, "c_arg_kind", None) is not None


def operand_layout(node):
    """[(variable, role, kind, dims offset)] for the node's inputs then outputs.

    ``kind`` is the Type's ``c_arg_kind`` ("tensor", "cdata", "scalar");
    ``dims offset`` is where its entries start in the kernel's dims array.
    """
    layout = []
    offset = 0
    for role, variables in (("in", node.inputs), ("out", node.outputs)):
        for var in variables:
            kind = var.type.c_arg_kind
            layout.append((var, role, kind, offset))
            if kind == "tensor":
                offset += 2 * var.type.ndim
    return layout, offset


class KernelSource:
    """The C text of one node's kernel (with a placeholder function name) and
    what the module needs for it (``math_names``: the <math.h> identifiers
    its body uses)."""

    def __init__(self, body, support, headers, freefuncs):
        self.body = body
        self.support = support
        self.headers = headers
        self.freefuncs = freefuncs
        self.digest = sha256(body.encode()).hexdigest()[:16]
        self.math_names = math_used(body)


_BLOCK_MATH: dict = {}


def _block_math(block):
    """:func:`math_used` of a support block (remembered: blocks are shared)."""
    found = _BLOCK_MATH.get(block)
    if found is None:
        if len(_BLOCK_MATH) > 256:
            _BLOCK_MATH.clear()
        found = _BLOCK_MATH[block] = math_used(block)
    return found


#: KernelSources of recent nodes, by structure (see :func:`node_kernel`).
_KERNELS = OrderedDict()
_KERNELS_LIMIT = 256
_kernels_lock = threading.Lock()


def _structure(node):
    """What a kernel's text depends on: the Op, the operands' Types and the data
    of size-1 constant inputs (which kernels may spell as literals)."""
    consts = []
    for var in node.inputs:
        data = getattr(var, "data", None) if isinstance(var, Constant) else None
        consts.append(var.signature() if data is not None and getattr(data, "size", 1) == 1
                      else None)
    return (node.op, tuple(v.type for v in node.inputs), tuple(v.type for v in node.outputs),
            tuple(consts))


def node_kernel(node):
    """The :class:`KernelSource` of ``node`` (raises MethodNotDefined without C code).

    Memoised by structure: a graph built again (a notebook cell re-run, a
    constant passed as a kernel argument changed) does not generate its C again.
    """
    try:
        key = _structure(node)
        hash(key)
    except TypeError:  # an unhashable Op or Type: no memo
        return _generate_kernel(node)
    with _kernels_lock:
        found = _KERNELS.get(key)
        if found is not None:
            _KERNELS.move_to_end(key)
            return found
    found = _generate_kernel(node)
    with _kernels_lock:
        _KERNELS[key] = found
        while len(_KERNELS) > _KERNELS_LIMIT:
            _KERNELS.popitem(last=False)
    return found


#: The first line of every kernel's definition (the calling convention of
#: :mod:`nbgraph.linkers.c`); NBG_KERNEL_NAME becomes ``nbg_k<position>`` in the module.
_KERNEL_SIGNATURE = ("static int NBG_KERNEL_NAME(void **nbg_ptrs, const int64_t *nbg_dims, "
                     "char *nbg_err) {")


def _generate_kernel(node):
    op = node.op
    layout, ndims = operand_layout(node)
    decls, extracts, syncs, cleanups = [], [], [], []
    in_names, out_names = [], []
    for j, (var, role, kind, off) in enumerate(layout):
        index = j if role == "in" else j - len(node.inputs)
        name = ("i%d" if role == "in" else "o%d") % index
        (in_names if role == "in" else out_names).append(name)
        if kind == "cdata" and role == "out":
            slot = "(*(void **)nbg_ptrs[%d])" % j
        else:
            slot = "nbg_ptrs[%d]" % j
        sub = {"slot": slot, "dims": "(nbg_dims + %d)" % off, "fail": "goto nbg_fail;",
               "err": "nbg_err", "set_error": "nbg_set_error(nbg_err, %s);"}
        vt = var.type
        decls.append(vt.c_declare(name, sub))
        extracts.append(vt.c_init(name, sub))
        if role == "in":
            extracts.append(vt.c_extract(name, sub))
        else:
            extracts.append(vt.c_extract_out(name, sub))
            syncs.append(vt.c_sync(name, sub))
        cleanups.append(vt.c_cleanup(name, sub))
    sub = {"fail": "goto nbg_fail;", "err": "nbg_err",
           "set_error": "nbg_set_error(nbg_err, %s);", "ptrs": "nbg_ptrs",
           "dims": "nbg_dims", "kernel": "NBG_KERNEL_NAME", "helpers": [],
           "operands": _operand_slots(layout, len(node.inputs))}
    code = op.c_code(node, "node", in_names, out_names, sub)
    head = sub["helpers"] + (["NBG_GLUE"] if sub.get("glue") else []) + [_KERNEL_SIGNATURE]
    if sub.get("entry"):  # the Op's code is the kernel's whole body
        if any(text.strip() for text in syncs + cleanups):
            raise TypeError("%s: a kernel written whole cannot take operands that need "
                            "writing back or cleaning up" % op)
        return _kernel_source(node, "\n".join(head + [_indent(code), "}"]))
    body = "\n".join(head + [
        "    int nbg_status = NBG_VALUE_ERROR;",
        "    (void)nbg_dims; (void)nbg_err; (void)nbg_status;",
        _indent("".join(decls)),
        _indent("".join(extracts)),
        "    {",
        _indent(code, 8),
        "    }",
        _indent("".join(syncs)),
        _indent("".join(reversed(cleanups))),
        "    return 0;",
        "nbg_fail:",
        "    if (!nbg_err[0]) nbg_errorf(nbg_err, \"the C code failed\");",
        _indent("".join(reversed(cleanups))),
        "    return nbg_status ? nbg_status : NBG_VALUE_ERROR;",
        "}",
    ])
    return _kernel_source(node, body)


def _operand_slots(layout, n_inputs):
    """``{name: (slot, dims offset, ndim)}`` of a kernel's tensor operands
    (``i<k>``, ``o<k>``): where each is found in ``nbg_ptrs`` and ``nbg_dims``
    (``sub["operands"]``, for kernels whose whole body is the Op's code)."""
    found = {}
    for j, (var, role, kind, off) in enumerate(layout):
        if kind == "tensor":
            name = "i%d" % j if role == "in" else "o%d" % (j - n_inputs)
            found[name] = (j, off, var.type.ndim)
    return found


def _kernel_source(node, body):
    op = node.op
    support = []
    try:
        block = op.c_support_code(node)
    except TypeError:
        block = op.c_support_code()
    if block:
        support.append(block)
    headers = list(op.c_headers())
    freefuncs = []
    for var in node.inputs + node.outputs:
        f = getattr(var.type, "freefunc", None)
        if f and f not in freefuncs:
            freefuncs.append(f)
    return KernelSource(body, support, headers, freefuncs)


def _indent(text, n=4):
    pad = " " * n
    return "\n".join(pad + line if line.strip() else line for line in text.splitlines())


def _add_new(items, into):
    for item in items:
        if item not in into:
            into.append(item)


def module_source(kernels, info, standalone=False):
    """The module text for ``kernels`` (a list of KernelSource); ``standalone``:
    see :func:`prelude`.

    Returns ``(source, kernel_index, freefuncs)``: ``kernel_index[i]`` is the
    table position of ``kernels[i]`` (equal kernels share one), ``freefuncs``
    the free-function names in table order.
    """
    headers, support, freefuncs = [], [], []
    bodies = []
    needs = []  # the support blocks of each distinct kernel
    positions = {}
    kernel_index = []
    for ks in kernels:
        _add_new(ks.headers, headers)
        _add_new(ks.support, support)
        _add_new(ks.freefuncs, freefuncs)
        pos = positions.get(ks.body)
        if pos is None:
            pos = positions[ks.body] = len(bodies)
            bodies.append(ks.body.replace("NBG_KERNEL_NAME", "nbg_k%d" % pos))
            needs.append(ks.support)
        kernel_index.append(pos)
    used = set()
    for block in support:  # (a block including <math.h> itself gets it whole)
        used |= _block_math(block) | ({"math.h"} if "<math.h>" in block else set())
    for ks in kernels:
        used |= ks.math_names
    head = [prelude(info, standalone, math_block(used))]
    standard = {"stdint.h", "stddef.h", "math.h"}
    head += ["#include <%s>" % h if not h.startswith(("<", '"')) else "#include %s" % h
             for h in headers if h not in standard]
    table = ", ".join("nbg_k%d" % i for i in range(len(bodies))) or "0"
    frees = ", ".join("(nbg_freefn)%s" % f for f in freefuncs) or "0"
    first, last = _split(bodies, needs, support)
    cut = None if first or standalone else units.split_functions(bodies, _cost)
    tail = c_template(__package__, "csrc/module_tail.c", table=table, frees=frees,
                      abi=_compiler.ABI_VERSION, nkernels=len(bodies),
                      nfreefns=len(freefuncs), attach_parts="nbg_attach_part(r);"
                      if first or cut else "")
    if cut is not None:  # one function compiled beside the rest (units.split_functions)
        moved, rest = cut
        wanted = {block for k, body in enumerate(bodies) if body not in rest
                  for block in needs[k]}
        return _two_units(head, support, [b for b in support if b in wanted], [moved],
                          rest, tail, declared=[]), kernel_index, freefuncs
    if not first:
        return "\n".join(head + support + bodies + [tail]), kernel_index, freefuncs
    wanted = {block for k in first for block in needs[k]}
    return _two_units(head, support, [b for b in support if b in wanted],
                      [_global_kernel(bodies[k]) for k in first], [bodies[k] for k in last],
                      tail, declared=[_kernel_name(bodies[k]) for k in first]), \
        kernel_index, freefuncs


def _two_units(head, support, own, first, last, tail, declared):
    """Two translation units: the first one's text (``first``: kernels or
    functions, hidden globals the second one uses, ``declared`` the kernels its
    table names) has its own copy of nbg_rt, set through nbg_attach_part when
    the module is bound; it holds only the support code its kernels need
    (``own``), the second one all of it (the table's free functions)."""
    unit1 = head + own + first + [
        "NBG_LOAD_TIME void nbg_attach_part(const nbg_runtime *r) { nbg_rt = r; }"]
    unit2 = head + support + [
        "int %s(void **, const int64_t *, char *);" % name for name in declared] + [
        "void nbg_attach_part(const nbg_runtime *r);"] + last + [tail]
    return "\n".join(unit1) + PART_MARK + "\n".join(unit2)


def _split(bodies, needs=(), support=()):
    """(positions of the kernels of a first translation unit, of the others), each
    in table order: no first one for a module below :data:`SPLIT_CHARS`, else
    about half the estimated compile work each (:func:`_cost`; the heaviest
    kernel first, each to the lighter unit; ties by position).  The second unit
    holds every ``support`` block, the first one those its kernels need
    (``needs[k]``: kernel ``k``'s blocks), so each unit starts with, and the
    first one gains, that support code's estimated work too (support-object
    sections left out: they compile apart)."""
    if len(bodies) < 2 or sum(len(b) for b in bodies) <= SPLIT_CHARS:
        return [], list(range(len(bodies)))
    costs = [_cost(b) for b in bodies]
    block_cost = {block: _cost(_without_objects(block)) for block in support}
    parts = ([], [])
    held = [0, sum(block_cost.values())]
    have = set()
    for k in sorted(range(len(bodies)), key=lambda k: (-costs[k], k)):
        new = [b for b in needs[k] if b not in have and b in block_cost] if k < len(needs) else []
        extra = sum(block_cost[b] for b in new)  # (the first unit's copy of its support)
        u = 0 if held[0] + extra <= held[1] else 1
        parts[u].append(k)
        held[u] += costs[k]
        if u == 0:
            held[0] += extra
            have.update(new)
    return sorted(parts[0]), sorted(parts[1])


def _without_objects(block):
    """A support block's text without its support-object sections."""
    from nbgraph.linkers.c import support

    while support.BEGIN in block and support.END in block:
        start = block.index(support.BEGIN)
        end = block.find(support.END, start)
        if end < 0:
            break
        block = block[:start] + block[end + len(support.END):]
    return block


def _cost(body):
    """A kernel body's estimated compile work, in characters: its length plus
    :data:`LOOP_CHARS` per loop."""
    return len(body) + LOOP_CHARS * body.count("for (")


def _kernel_line(body):
    """Where ``body`` defines its kernel (after the helpers it may start with)."""
    return body.rindex("static int ", 0, body.index("(void **nbg_ptrs, const int64_t *nbg_dims"))


def _kernel_name(body):
    i = _kernel_line(body) + len("static int ")
    return body[i:body.index("(", i)]


def _global_kernel(body):
    """``body`` with its kernel function not static (hidden: modules are built
    with -fvisibility=hidden), for the other translation unit's table."""
    i = _kernel_line(body)
    return body[:i] + body[i + len("static "):]


def source_parts(source):
    """The translation units of a module's source (one, unless it was split)."""
    return source.split(PART_MARK)
