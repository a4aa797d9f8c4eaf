"""Ways to look at graphs: text trees (:func:`dprint`), and later diagrams and widgets.

Display only reads graphs; nothing here changes them.
"""

from nbgraph.display.text import dprint, dprint_text

__all__ = ["dprint", "dprint_text"]
