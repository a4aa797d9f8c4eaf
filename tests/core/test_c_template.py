"""c_template fills placeholders by string.Template's rules without importing string."""

from string import Template

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbgraph.core.c_interface import _substitute

CASES = ["a ${x} b $y $$ c", "${x}${x}$$$y", "no keys", "x$", "a $ b", "${1a}", "$x_1 ${y}z",
         "line1\nline2 $ bad", "$X", "\n\n$", "$", "ab\n$", "${x", "$}", "int ${x}[${y}];"]


def _outcome(fn):
    try:
        return "ok", fn()
    except (KeyError, ValueError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize("keys", [{"x": 1, "y": "Y", "x_1": 3, "X": 9}, {"x": 1}])
def test_same_result_or_error_as_string_template(text, keys):
    assert _outcome(lambda: _substitute(text, keys)) == \
        _outcome(lambda: Template(text).substitute(keys))


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="$${}_aZz09x\n é", max_size=24))
def test_any_text_same_as_string_template(text):
    keys = {"a": 1, "x": "X", "aZ": 2, "z0": 3, "_": 4}
    assert _outcome(lambda: _substitute(text, keys)) == \
        _outcome(lambda: Template(text).substitute(keys))
