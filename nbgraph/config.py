"""Run-time settings for nbgraph, with environment-variable overrides.

The module-level :data:`config` object holds the settings every other part of
nbgraph reads:

``linker``
    Which linker :func:`nbgraph.function` uses when none is given: ``"auto"``
    (C where a compiler works, Python otherwise), ``"py"``, ``"c"``, ``"cvm"``
    or ``"debug"``.  Environment variable ``NBGRAPH_LINKER``; default ``"auto"``.
``cache_dir``
    Directory (a :class:`pathlib.Path`) for compiled C modules.  Environment
    variable ``NBGRAPH_CACHE_DIR``; default ``$XDG_CACHE_HOME/nbgraph``, or
    ``~/.cache/nbgraph`` when ``XDG_CACHE_HOME`` is unset.
``cache_max_mb``
    Size limit (MiB, a number >= 0) of the on-disk C module cache: beyond it the
    least recently used modules are removed.  ``0`` means no limit.
    Environment variable ``NBGRAPH_CACHE_MAX_MB``; default ``1024``.
``floatX``
    The float dtype of unprefixed constructors (``nt.vector`` and friends):
    ``"float64"`` or ``"float32"``.  Environment variable ``NBGRAPH_FLOATX``;
    default ``"float64"``.

``node_trace``
    Record, for every Apply node built, the user's line that built it
    (``var.tag.trace``), shown when running the node fails.  Environment
    variable ``NBGRAPH_NODE_TRACE`` (``1``/``0``); default on.
``exception_verbosity``
    ``"low"``: an error raised while a compiled function runs shows the
    node, its inputs and where it was built, without nbgraph's internal
    frames; ``"high"``: the frames inside the failing Op too.  Environment
    variable ``NBGRAPH_EXCEPTION_VERBOSITY``; default ``"low"``.

Every assignment is validated; a bad value raises :class:`ValueError` naming
the setting and the allowed values.  :meth:`Config.change` sets values for the
duration of a ``with`` block::

    from nbgraph.config import config
    with config.change(linker="py", floatX="float32"):
        ...                     # settings in force here
    # previous values restored, even if the block raised

Three more variables tune the C linker; they are read (here, by
:func:`env_switch` and :func:`env_num_threads`) when the C linker first
needs them, so a subprocess or a test may set them late:

``NBGRAPH_NUM_THREADS``
    threads big C loops use, the calling one included (an integer >= 1;
    default: the CPUs this process may use);
``NBGRAPH_C_FASTCALL``
    ``0``/``no``/``false``/``off``: never build or use the C call path;
``NBGRAPH_C_BACKGROUND``
    ``0``/``no``/``false``/``off``: ``linker="cvm"`` compiles before
    returning instead of on a worker thread.

This module imports nothing from the rest of nbgraph, so any module may import it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, NamedTuple
from collections.abc import Callable, Iterator, Mapping

__all__ = ["Config", "config", "LINKERS", "FLOATX_DTYPES", "C_ENV", "env_switch",
           "env_num_threads"]

#: Values accepted for ``config.linker``.
LINKERS: tuple[str, ...] = ("auto", "py", "c", "cvm", "debug")

#: Values accepted for ``config.floatX``.
FLOATX_DTYPES: tuple[str, ...] = ("float32", "float64")


def _default_cache_dir(environ: Mapping[str, str]) -> Path:
    """Return ``$XDG_CACHE_HOME/nbgraph``, else ``~/.cache/nbgraph``.

    As the XDG base-directory specification asks, a relative
    ``XDG_CACHE_HOME`` is ignored.
    """
    xdg = environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "nbgraph"
    return Path.home() / ".cache" / "nbgraph"


def _choice(name: str, allowed: tuple[str, ...]) -> Callable[[Any], str]:
    """Build a validator accepting one of ``allowed`` (case and spaces ignored)."""

    def validate(value: Any) -> str:
        if isinstance(value, str):
            normalised = value.strip().lower()
            for choice in allowed:
                if normalised == choice.lower():
                    return choice
        raise ValueError(
            f"invalid value {value!r} for nbgraph setting {name!r}; "
            f"allowed values: {', '.join(repr(a) for a in allowed)}"
        )

    return validate


def _validate_cache_dir(value: Any) -> Path:
    """Accept a non-empty path (``str`` or path-like); expand ``~``."""
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if isinstance(text, str) and text.strip():
            return Path(text).expanduser()
    raise ValueError(
        f"invalid value {value!r} for nbgraph setting 'cache_dir'; "
        "allowed values: a non-empty directory path (str or os.PathLike)"
    )


def _validate_cache_max_mb(value: Any) -> float:
    """Accept a number of MiB >= 0 (int, float or their text); 0 means no limit."""
    number = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not number >= 0 or number == float("inf"):
        raise ValueError(
            f"invalid value {value!r} for nbgraph setting 'cache_max_mb'; "
            "allowed values: a size in MiB >= 0 (0: no limit)"
        )
    return number


def _flag(name: str) -> Callable[[Any], bool]:
    """Build a validator accepting a bool or 1/0, true/false, on/off, yes/no."""

    def validate(value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            text = value.strip().lower()
            if text in ("1", "true", "on", "yes"):
                return True
            if text in ("0", "false", "off", "no"):
                return False
        raise ValueError(
            f"invalid value {value!r} for nbgraph setting {name!r}; "
            "allowed values: True/False (or 1/0, on/off)"
        )

    return validate


class _Setting(NamedTuple):
    env: str
    default: Callable[[Mapping[str, str]], Any]
    validate: Callable[[Any], Any]
    doc: str


_SETTINGS: dict[str, _Setting] = {
    "linker": _Setting(
        "NBGRAPH_LINKER",
        lambda environ: "auto",
        _choice("linker", LINKERS),
        "default linker for function()",
    ),
    "cache_dir": _Setting(
        "NBGRAPH_CACHE_DIR",
        _default_cache_dir,
        _validate_cache_dir,
        "directory of the on-disk C module cache",
    ),
    "cache_max_mb": _Setting(
        "NBGRAPH_CACHE_MAX_MB",
        lambda environ: 1024.0,
        _validate_cache_max_mb,
        "size limit of the on-disk C module cache in MiB (0: none)",
    ),
    "floatX": _Setting(
        "NBGRAPH_FLOATX",
        lambda environ: "float64",
        _choice("floatX", FLOATX_DTYPES),
        "dtype of unprefixed float constructors",
    ),
    "node_trace": _Setting(
        "NBGRAPH_NODE_TRACE",
        lambda environ: True,
        _flag("node_trace"),
        "record the user's line that built each node",
    ),
    "exception_verbosity": _Setting(
        "NBGRAPH_EXCEPTION_VERBOSITY",
        lambda environ: "low",
        _choice("exception_verbosity", ("low", "high")),
        "how much of nbgraph's own traceback a run-time error shows",
    ),
}


class Config:
    """A validated set of nbgraph settings.

    ``Config()`` reads the ``NBGRAPH_*`` variables from :data:`os.environ`
    (or from ``environ`` when given) once, at construction.  An invalid
    environment value raises :class:`ValueError` naming the variable.
    Assigning an unknown attribute raises :class:`AttributeError`, so a typo
    never silently creates a new setting.
    """

    __slots__ = tuple(_SETTINGS)

    linker: str
    cache_dir: Path
    cache_max_mb: float
    floatX: str
    node_trace: bool
    exception_verbosity: str

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        if environ is None:
            environ = os.environ
        for name, setting in _SETTINGS.items():
            raw = environ.get(setting.env)
            if raw is None or raw == "":
                value = setting.default(environ)
            else:
                try:
                    value = setting.validate(raw)
                except ValueError as exc:
                    raise ValueError(
                        f"environment variable {setting.env}: {exc}"
                    ) from None
            object.__setattr__(self, name, value)

    @staticmethod
    def settings() -> tuple[str, ...]:
        """Names of all settings."""
        return tuple(_SETTINGS)

    @staticmethod
    def env_var(name: str) -> str:
        """The environment variable that overrides setting ``name``."""
        return Config._lookup(name).env

    @staticmethod
    def _lookup(name: str) -> _Setting:
        try:
            return _SETTINGS[name]
        except KeyError:
            raise AttributeError(
                f"nbgraph has no setting {name!r}; "
                f"settings are: {', '.join(_SETTINGS)}"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, self._lookup(name).validate(value))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"nbgraph settings cannot be deleted ({name!r})")

    def as_dict(self) -> dict[str, Any]:
        """The current settings as a plain dict."""
        return {name: getattr(self, name) for name in _SETTINGS}

    @contextlib.contextmanager
    def change(self, **settings: Any) -> Iterator[Config]:
        """Set ``settings`` for the duration of a ``with`` block.

        All values are validated before any is applied, so a bad value leaves
        the configuration untouched.  On exit the previous values are
        restored, whether or not the block raised.  Blocks may be nested.
        """
        new = {name: self._lookup(name).validate(v) for name, v in settings.items()}
        old = {name: getattr(self, name) for name in new}
        for name, value in new.items():
            object.__setattr__(self, name, value)
        try:
            yield self
        finally:
            for name, value in old.items():
                object.__setattr__(self, name, value)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"Config({body})"


#: The settings nbgraph uses; read once from the environment at import.
config = Config()


#: The C linker's environment variables (see the module docstring).
C_ENV: tuple[str, ...] = ("NBGRAPH_NUM_THREADS", "NBGRAPH_C_FASTCALL", "NBGRAPH_C_BACKGROUND")

_OFF = ("0", "no", "false", "off")


def env_switch(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """False when the C linker switch ``name`` (one of :data:`C_ENV`) is set off."""
    if name not in C_ENV:
        raise ValueError(f"{name!r} is not one of nbgraph's C settings {C_ENV}")
    environ = os.environ if environ is None else environ
    return environ.get(name, "1").strip().lower() not in _OFF


def env_num_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """``NBGRAPH_NUM_THREADS`` as an integer >= 1, or None when unset.

    A value that is not such an integer gives one RuntimeWarning and None.
    """
    environ = os.environ if environ is None else environ
    text = environ.get("NBGRAPH_NUM_THREADS", "").strip()
    if not text:
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n >= 1:
        return n
    import warnings

    warnings.warn(f"nbgraph: NBGRAPH_NUM_THREADS={text!r} is not an integer >= 1; using the "
                  "number of CPUs", RuntimeWarning, stacklevel=3)
    return None
