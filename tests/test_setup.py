"""Tests for nbgraph.config and for the test-suite set-up itself (tests/conftest.py)."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import pytest

from nbgraph.config import FLOATX_DTYPES, LINKERS, Config, config

ENV_VARS = ("NBGRAPH_LINKER", "NBGRAPH_CACHE_DIR", "NBGRAPH_FLOATX", "XDG_CACHE_HOME")


@pytest.fixture
def clean_env(monkeypatch):
    """An environment without any variable that nbgraph's settings read."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# -- defaults ---------------------------------------------------------------


def test_defaults(clean_env):
    cfg = Config()
    assert cfg.linker == "auto"
    assert cfg.floatX == "float64"
    assert cfg.cache_dir == Path.home() / ".cache" / "nbgraph"
    assert isinstance(cfg.cache_dir, Path)


def test_cache_dir_follows_xdg_cache_home(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert Config().cache_dir == tmp_path / "nbgraph"


def test_relative_xdg_cache_home_is_ignored(clean_env):
    clean_env.setenv("XDG_CACHE_HOME", "relative/dir")
    assert Config().cache_dir == Path.home() / ".cache" / "nbgraph"


def test_empty_env_values_mean_default(clean_env):
    for name in ENV_VARS[:3]:
        clean_env.setenv(name, "")
    cfg = Config()
    assert (cfg.linker, cfg.floatX) == ("auto", "float64")


def test_module_object_is_a_config():
    assert isinstance(config, Config)
    assert config.linker in LINKERS
    assert config.floatX in FLOATX_DTYPES


def test_public_api():
    # nbgraph/__init__ binds the name `config` to the settings object, which
    # shadows the submodule as an attribute: fetch the module itself.
    mod = importlib.import_module("nbgraph.config")

    assert set(mod.__all__) == {"Config", "config", "LINKERS", "FLOATX_DTYPES", "C_ENV",
                                "env_switch", "env_num_threads"}
    assert LINKERS == ("auto", "py", "c", "cvm", "debug")
    assert FLOATX_DTYPES == ("float32", "float64")
    assert Config.settings() == ("linker", "cache_dir", "cache_max_mb", "floatX", "node_trace",
                                 "exception_verbosity")
    assert Config.env_var("floatX") == "NBGRAPH_FLOATX"


# -- environment overrides --------------------------------------------------


@pytest.mark.parametrize("linker", LINKERS)
def test_env_linker(clean_env, linker):
    clean_env.setenv("NBGRAPH_LINKER", linker)
    assert Config().linker == linker


def test_env_floatx(clean_env):
    clean_env.setenv("NBGRAPH_FLOATX", "float32")
    assert Config().floatX == "float32"


def test_env_values_are_normalised(clean_env):
    clean_env.setenv("NBGRAPH_LINKER", " CVM ")
    clean_env.setenv("NBGRAPH_FLOATX", "Float32")
    cfg = Config()
    assert (cfg.linker, cfg.floatX) == ("cvm", "float32")


def test_env_cache_dir_wins_over_xdg(clean_env, tmp_path):
    clean_env.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    clean_env.setenv("NBGRAPH_CACHE_DIR", str(tmp_path / "mine"))
    assert Config().cache_dir == tmp_path / "mine"


def test_env_cache_dir_expands_user(clean_env):
    clean_env.setenv("NBGRAPH_CACHE_DIR", "~/nbg-cache")
    assert Config().cache_dir == Path.home() / "nbg-cache"


def test_explicit_environ_mapping(clean_env):
    cfg = Config(environ={"NBGRAPH_LINKER": "py", "NBGRAPH_CACHE_DIR": "/tmp/x"})
    assert (cfg.linker, cfg.cache_dir, cfg.floatX) == ("py", Path("/tmp/x"), "float64")


def test_invalid_env_value_names_the_variable(clean_env):
    clean_env.setenv("NBGRAPH_LINKER", "fast")
    with pytest.raises(ValueError) as info:
        Config()
    msg = str(info.value)
    assert "NBGRAPH_LINKER" in msg
    assert "'fast'" in msg
    for allowed in LINKERS:
        assert repr(allowed) in msg


def test_env_does_not_leak_into_module_config(clean_env):
    """The module-level object is read once at import, not on every access."""
    before = config.floatX
    clean_env.setenv("NBGRAPH_FLOATX", "float32" if before == "float64" else "float64")
    assert config.floatX == before


# -- validation -------------------------------------------------------------


def test_assignment_is_validated():
    cfg = Config(environ={})
    cfg.linker = "c"
    assert cfg.linker == "c"
    cfg.floatX = "FLOAT32"
    assert cfg.floatX == "float32"
    cfg.cache_dir = "/tmp/somewhere"
    assert cfg.cache_dir == Path("/tmp/somewhere")


@pytest.mark.parametrize(
    "name, bad, allowed",
    [
        ("linker", "vm", LINKERS),
        ("linker", None, LINKERS),
        ("floatX", "float16", FLOATX_DTYPES),
        ("floatX", 64, FLOATX_DTYPES),
    ],
)
def test_bad_value_message(name, bad, allowed):
    cfg = Config(environ={})
    before = getattr(cfg, name)
    with pytest.raises(ValueError) as info:
        setattr(cfg, name, bad)
    msg = str(info.value)
    assert repr(name) in msg
    assert repr(bad) in msg
    for value in allowed:
        assert repr(value) in msg
    assert getattr(cfg, name) == before


@pytest.mark.parametrize("bad", ["", "   ", 3, None])
def test_bad_cache_dir(bad):
    cfg = Config(environ={})
    with pytest.raises(ValueError, match="'cache_dir'"):
        cfg.cache_dir = bad


def test_unknown_setting_is_refused():
    cfg = Config(environ={})
    with pytest.raises(AttributeError,
                       match="no setting 'linkr'.*linker, cache_dir, cache_max_mb, floatX"):
        cfg.linkr = "py"
    with pytest.raises(AttributeError):
        del cfg.linker


def test_node_trace_and_exception_verbosity_settings():
    cfg = Config(environ={})
    assert cfg.node_trace is True and cfg.exception_verbosity == "low"
    cfg = Config(environ={"NBGRAPH_NODE_TRACE": "0", "NBGRAPH_EXCEPTION_VERBOSITY": "HIGH"})
    assert cfg.node_trace is False and cfg.exception_verbosity == "high"
    cfg.node_trace = "on"
    assert cfg.node_trace is True
    with pytest.raises(ValueError, match="node_trace"):
        cfg.node_trace = "sometimes"
    with pytest.raises(ValueError, match="NBGRAPH_EXCEPTION_VERBOSITY"):
        Config(environ={"NBGRAPH_EXCEPTION_VERBOSITY": "loud"})


def test_repr_lists_settings():
    cfg = Config(environ={"NBGRAPH_CACHE_DIR": "/tmp/c"})
    text = repr(cfg)
    assert text.startswith("Config(linker='auto', cache_dir=")
    assert "floatX='float64'" in text
    assert "0x" not in text


# -- change() ---------------------------------------------------------------


def test_change_sets_and_restores():
    cfg = Config(environ={})
    with cfg.change(linker="py", floatX="float32") as inside:
        assert inside is cfg
        assert (cfg.linker, cfg.floatX) == ("py", "float32")
    assert (cfg.linker, cfg.floatX) == ("auto", "float64")


def test_change_restores_after_exception():
    cfg = Config(environ={})
    with pytest.raises(RuntimeError):
        with cfg.change(linker="debug"):
            raise RuntimeError("boom")
    assert cfg.linker == "auto"


def test_change_nests():
    cfg = Config(environ={})
    with cfg.change(linker="c"):
        with cfg.change(linker="py", floatX="float32"):
            assert (cfg.linker, cfg.floatX) == ("py", "float32")
        assert (cfg.linker, cfg.floatX) == ("c", "float64")
    assert cfg.linker == "auto"


def test_change_restores_value_assigned_inside():
    cfg = Config(environ={})
    with cfg.change(floatX="float32"):
        cfg.floatX = "float64"
    assert cfg.floatX == "float64"
    with cfg.change(linker="py"):
        cfg.linker = "c"
    assert cfg.linker == "auto"


def test_change_with_bad_value_changes_nothing():
    cfg = Config(environ={})
    with pytest.raises(ValueError, match="'floatX'"):
        with cfg.change(linker="py", floatX="int8"):
            pass  # pragma: no cover
    assert cfg.linker == "auto"
    with pytest.raises(AttributeError, match="no setting"):
        with cfg.change(linkr="py"):
            pass  # pragma: no cover


def test_change_on_module_config_restores():
    before = config.as_dict()
    with config.change(linker="py", floatX="float32"):
        assert config.linker == "py"
    assert config.as_dict() == before


# -- conftest markers -------------------------------------------------------


@pytest.mark.needs_dot
def test_needs_dot_marker_runs_only_with_dot():
    assert shutil.which("dot") is not None


@pytest.mark.needs_cc
def test_needs_cc_marker_runs_only_with_cc():
    assert shutil.which("cc") or shutil.which("gcc") or os.environ.get("CC")


def test_marker_skips(pytester, monkeypatch):
    """needs_dot / needs_cc tests are skipped with a clear reason when the tool is missing."""
    conftest = Path(__file__).with_name("conftest.py").read_text()
    pytester.makeconftest(conftest)
    pytester.makeini(
        "[pytest]\nmarkers =\n    needs_dot: x\n    needs_cc: x\n"
    )
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.needs_dot
        def test_dot():
            pass

        @pytest.mark.needs_cc
        def test_cc():
            pass

        def test_plain():
            pass
        """
    )
    monkeypatch.setenv("PATH", str(pytester.path))  # nothing on PATH
    monkeypatch.delenv("CC", raising=False)
    result = pytester.runpytest_inprocess("-ra")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*graphviz's dot program is not installed (apt-get install graphviz)*",
            "*no working C compiler*",
        ]
    )

    monkeypatch.setenv("CC", "no-such-compiler-xyz -O2")
    result = pytester.runpytest_inprocess("-ra")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*CC='no-such-compiler-xyz -O2' is not on PATH*"])


def test_cache_max_mb_setting():
    assert Config(environ={}).cache_max_mb == 1024.0
    assert Config(environ={"NBGRAPH_CACHE_MAX_MB": "64"}).cache_max_mb == 64.0
    assert Config(environ={"NBGRAPH_CACHE_MAX_MB": "0"}).cache_max_mb == 0.0  # no limit
    assert Config.env_var("cache_max_mb") == "NBGRAPH_CACHE_MAX_MB"
    for bad in ("-1", "lots", "inf", "nan"):
        with pytest.raises(ValueError, match="NBGRAPH_CACHE_MAX_MB.*cache_max_mb"):
            Config(environ={"NBGRAPH_CACHE_MAX_MB": bad})
    cfg = Config(environ={})
    cfg.cache_max_mb = 0.5
    assert cfg.cache_max_mb == 0.5
    with pytest.raises(ValueError):
        cfg.cache_max_mb = True
