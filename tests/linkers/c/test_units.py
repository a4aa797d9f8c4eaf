"""A one-unit module cut by function (linkers/c/units.py): what is cut, and the same bits."""

import numpy as np
import pytest

import nbgraph as ng
import nbgraph.tensor as nt
from nbgraph.config import config
from nbgraph.linkers.c import codegen, units

_ROW = """typedef struct { char none; } ctx_t;
#define TWICE(x) (2 * (x))
static NBG_NOINLINE NBG_STRIDED_ROW int slow(const ctx_t *c, double *p, long n) {
    long i; for (i = 0; i < n; i++) p[i] = TWICE(p[i]); return 0;
}
static int row(const void *c, double *p, long n) {
    long i; if (n < 0) return slow((const ctx_t *)c, p, n);
    for (i = 0; i < n; i++) p[i] += 1.0; /* "{" in a comment */ return 0;
}
NBG_GLUE
static int kernel(void **ptrs, const long *dims, char *err) {
    const char *text = "} ;";
    return run(row, ptrs, dims, err, text);
}
"""


def _heavy(text):
    return 10**6 if "row(" in text.split("{")[0] else 0


def test_top_level_items_of_generated_c():
    items = units.top_level(_ROW)
    assert [item.name for item in items] == [None, None, "slow", "row", "kernel"]
    assert "ctx_t;" in items[0].text and items[1].text.lstrip().startswith("#define")
    assert items[4].header.lstrip().startswith("NBG_GLUE")
    assert "".join(item.text for item in items) == _ROW.rstrip()


@pytest.mark.parametrize("text", [
    "#if 1\nstatic int f(void) { return 1; }\n#endif\n",  # a conditional
    "static int state = 0;\nstatic int f(void) { return state++; }\n",  # a static variable
    "static int f(void) { return 1; }\n}\n",  # unbalanced
])
def test_text_it_does_not_cut(text):
    assert units.top_level(text) is None


def test_the_heaviest_function_moves_with_its_helpers_declared():
    moved, rest = units.split_functions([_ROW], _heavy)
    assert "int row(const void *c" in moved and "static int row" not in moved
    hidden = '__attribute__((visibility("hidden"))) '
    assert hidden + "NBG_NOINLINE NBG_STRIDED_ROW int slow(const ctx_t *c, double *p, long n);" \
        in moved
    assert "typedef struct { char none; } ctx_t;" in moved and "#define TWICE" in moved
    assert hidden + "int row(const void *c, double *p, long n);" in rest[0]
    assert "\nNBG_NOINLINE NBG_STRIDED_ROW int slow(" in rest[0]  # defined here, not static
    assert "static int kernel(" in rest[0]


def test_a_cut_is_remembered_and_its_answer_not_shared(monkeypatch):
    calls = []
    real = units._split_functions
    monkeypatch.setattr(units, "_split_functions", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(units, "_RECENT", {})
    first = units.split_functions([_ROW], _heavy)
    first[1].append("changed by a caller")
    again = units.split_functions([str(_ROW)], _heavy)  # (equal text, as a new graph makes)
    assert calls == [1] and again[0] == first[0] and again[1] == [first[1][0]]
    monkeypatch.setattr(units, "MIN_MOVED_COST", 10**9)  # (part of the key)
    assert units.split_functions([_ROW], _heavy) is None and calls == [1, 1]


def test_a_called_function_or_an_o3_helper_used_elsewhere_is_not_moved():
    called = _ROW.replace("return run(row,", "row(0, 0, 0); return run(row,")
    assert units.split_functions([called], _heavy) is None
    for helper in ("static int slow", "static NBG_NOINLINE int slow",  # inlinable, -O3
                   "static NBG_STRIDED_ROW int slow"):
        text = _ROW.replace("static NBG_NOINLINE NBG_STRIDED_ROW int slow", helper)
        moved, rest = units.split_functions([text], _heavy)  # only row uses it: it moves too
        assert helper + "(const ctx_t *c" in moved and "slow" not in rest[0]
        shared = text.replace("return run(row,", "slow(0, 0, 0); return run(row,")
        assert units.split_functions([shared], _heavy) is None  # the kernel calls it too
    assert units.split_functions([_ROW], lambda text: 10) is None  # not worth a unit


def test_a_helper_named_by_two_moving_functions_moves_with_them_in_any_order():
    """The row names ``tiles`` and ``loop``, ``tiles`` names ``loop`` too (-O3
    helpers, as a row's unit-stride loop is): all three move, whichever comes
    first."""
    loop = "static inline int loop(double *p, long n) { long i; " \
        "for (i = 0; i < n; i++) p[i] += 1.0; return 0; }\n"
    tiles = "static NBG_NOINLINE int tiles(double *p, long n) { " \
        "return loop(p, n / 2) + loop(p + n / 2, n - n / 2); }\n"
    row = _ROW.replace("for (i = 0; i < n; i++) p[i] += 1.0;",
                       "if (n > 99) return tiles(p, n); return loop(p, n);")
    head, rest = row.split("static int row(")
    for helpers in (loop + tiles, tiles + loop):  # (only the order of the text counts)
        moved, kept = units.split_functions([head + helpers + "static int row(" + rest], _heavy)
        assert "int tiles(" in moved and "int loop(double *p" in moved, helpers
        assert "tiles" not in kept[0] and "loop" not in kept[0]
    shared = head + loop + tiles + "static int row(" + rest.replace(
        "return run(row,", "loop(0, 0); return run(row,")
    assert units.split_functions([shared], _heavy) is None  # the kernel calls loop too


@pytest.mark.parametrize("build", [
    lambda x, y: nt.tanh(nt.exp(x) * y) - nt.maximum(x, y),
    lambda x, y: (x * y).all() + nt.tanh(x),  # a reduction stays whole, the row moves
    lambda x, y: x * 2.0 + y,
    lambda x, y: nt.sigmoid(nt.sin(x + y)) / nt.log1p(abs(y)),
])
def test_a_module_cut_by_function_computes_the_same_bits(build, tmp_path, monkeypatch,
                                                        module_sources):
    sources = module_sources
    rng = np.random.default_rng(3)
    xv, yv = rng.standard_normal(1001) * 3, rng.standard_normal(1001) * 3
    xv[::7] = np.nan
    monkeypatch.setattr(codegen, "SPLIT_CHARS", 10**9)  # (no module split by kernels)
    results = []
    for limit in (10**9, units.MIN_MOVED_COST):  # one unit, then the row function apart
        monkeypatch.setattr(units, "MIN_MOVED_COST", limit)
        with config.change(cache_dir=str(tmp_path / str(limit))):
            x, y = nt.dvector("x"), nt.dvector("y")
            f = ng.function([x, y], build(x, y), linker="c")
            results.append(np.array(f(xv, yv)))
            results.append(np.array(f(xv[::3], yv[::3])))  # strided rows (the other unit's)
    assert len(codegen.source_parts(sources[-2])) == 1
    first, second = codegen.source_parts(sources[-1])
    assert "nbg_table" in second and "nbg_table" not in first
    assert "void nbg_attach_part(const nbg_runtime *r) { nbg_rt = r; }" in first
    for whole, cut in zip(results[:2], results[2:], strict=True):
        assert whole.tobytes() == cut.tobytes()
