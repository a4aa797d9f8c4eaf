"""``theano.config``: ``floatX`` reads and writes nbgraph's ``config.floatX``; the
other settings Theano programs commonly read have fixed, honest values."""

from nbgraph.config import config as _config

__all__ = ["config", "TheanoConfig"]

_FIXED = {
    "device": "cpu", "mode": "FAST_RUN", "optimizer": "fast_run", "linker": "cvm",
    "compute_test_value": "off", "warn_float64": "ignore", "exception_verbosity": "low",
    "allow_gc": True, "openmp": False, "cxx": "cc", "on_unused_input": "raise",
    "print_active_device": False, "profile": False, "deterministic": "default",
}


class TheanoConfig:
    """Theano's ``config`` object, backed by :data:`nbgraph.config.config`."""

    @property
    def floatX(self):
        """nbgraph's ``config.floatX``."""
        return _config.floatX

    @floatX.setter
    def floatX(self, value):
        _config.floatX = value

    def __getattr__(self, name):
        if name in _FIXED:
            return _FIXED[name]
        raise AttributeError("theano.config.%s has no equivalent in nbgraph; its settings "
                             "are in nbgraph.config (linker, floatX, cache_dir)" % name)

    def __setattr__(self, name, value):
        if name == "floatX":
            object.__setattr__(self, name, value)
            return
        if name in _FIXED:
            if value != _FIXED[name] and name not in ("compute_test_value", "warn_float64",
                                                      "exception_verbosity", "profile",
                                                      "on_unused_input", "allow_gc"):
                raise ValueError("theano.config.%s=%r is not supported by nbgraph (it is %r)"
                                 % (name, value, _FIXED[name]))
            return  # a debugging aid nbgraph does not need: accepted, no effect
        raise AttributeError("theano.config.%s has no equivalent in nbgraph" % name)

    def __repr__(self):
        return "<theano.config backed by nbgraph.config: floatX=%r>" % self.floatX


config = TheanoConfig()
