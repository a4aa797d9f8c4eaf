"""The 12-layer tanh MLP + grad of the compile-latency rows, written once.

:data:`MLP` is the program's text over names a caller binds: ``np``,
``FUNCTION``, ``SHARED``, ``GRAD`` and ``nt`` (the tensor module); it leaves
the compiled function in ``f`` and the input in ``xv``.  In-process rows
``exec`` it (compiled once); fresh-process rows run it through
:func:`bench.process.seconds_printed` with :func:`mlp_script`.
"""

__all__ = ["MLP", "LIBRARIES", "mlp_code", "mlp_script"]

MLP = """rng = np.random.default_rng(0)
x = nt.dmatrix("x")
h, params = x, []
for i in range(12):
    w = SHARED(rng.standard_normal((16, 16)) * 0.1, name="W%d" % i)
    b = SHARED(np.zeros(16), name="b%d" % i)
    params += [w, b]
    h = nt.tanh(nt.dot(h, w) + b)
cost = (h ** 2).mean()
f = FUNCTION([x], [cost] + GRAD(cost, params)LINKER)
xv = np.ones((4, 16))
"""

#: The imports binding :data:`MLP`'s names, per library.
LIBRARIES = {
    "nbgraph": ("import nbgraph as ng, nbgraph.tensor as nt\n"
                "FUNCTION, SHARED, GRAD = ng.function, ng.shared, ng.grad\n"),
    "pytensor": ("import pytensor, pytensor.tensor as nt\n"
                 "FUNCTION, SHARED, GRAD = pytensor.function, pytensor.shared, pytensor.grad\n"),
}


def _text(linker):
    return MLP.replace("LINKER", "" if linker is None else ", linker=%r" % (linker,))


def mlp_code(linker):
    """:data:`MLP` compiled, for ``exec`` in a namespace binding its names."""
    return compile(_text(linker), "<bench mlp>", "exec")


def mlp_script(library="nbgraph", linker=None, then="f(xv)\n", time_imports=True):
    """A script timing the MLP's build and ``then`` (default: its first call),
    from before the imports or (``time_imports=False``) after them; it prints
    the seconds."""
    imports = "import numpy as np\n" + LIBRARIES[library]
    start = "import time\nt = time.perf_counter()\n"
    head = start + imports if time_imports else imports + start
    return head + _text(linker) + then + "print(time.perf_counter() - t)\n"
