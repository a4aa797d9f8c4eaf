"""IPython magics: ``%load_ext nbgraph`` registers ``%%graph`` and ``%graph``.

IPython is imported only when the extension is loaded.
"""

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython):
    """Register the magics on ``ipython`` (loading twice is harmless)."""
    from nbgraph.magics.graph import GraphMagics

    ipython.register_magics(GraphMagics)


def unload_ipython_extension(ipython):
    """Remove the magics registered by :func:`load_ipython_extension`."""
    magics = ipython.magics_manager.magics
    for kind in ("line", "cell"):
        magics[kind].pop("graph", None)
    ipython.magics_manager.registry.pop("GraphMagics", None)
