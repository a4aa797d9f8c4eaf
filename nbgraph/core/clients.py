"""ClientList: who reads a Variable inside a FunctionGraph.

:attr:`nbgraph.core.fgraph.FunctionGraph.clients` maps each Variable to one of
these.  Rewrites rewire clients one at a time; with a plain list, removing one
of the 100,000 readers of a merged constant scans the list, and rewiring them
all takes quadratic time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Literal, overload

if TYPE_CHECKING:
    from nbgraph.core.graph import Apply

__all__ = ["Client", "ClientList"]

#: One reader of a Variable: ``(node, input index)``, or ``("output", i)`` when
#: the Variable is the FunctionGraph's ``i``-th output.
Client = tuple["Apply | Literal['output']", int]


class ClientList:
    """The readers of one Variable: ``(node, input index)`` pairs, ``("output", i)``.

    It reads like a list in the order the clients arrived (iteration, ``len``,
    indexing, ``==`` with a list) but ``in``, ``append`` and ``remove`` take
    constant time, so a value read by 100,000 nodes (a shared constant after
    merging) is rewired in linear time.  A client is listed once:
    appending one already there raises ValueError.
    """

    __slots__ = ("_items",)
    __hash__ = None  # type: ignore[assignment]  # mutable and compared like a list: unhashable

    def __init__(self, clients: Iterable[Client] = ()) -> None:
        self._items: dict[Client, None] = {}
        for client in clients:
            self.append(client)

    def append(self, client: Client) -> None:
        """Add ``client`` at the end."""
        if client in self._items:
            raise ValueError("%r is already a client" % (client,))
        self._items[client] = None

    def remove(self, client: Client) -> None:
        """Forget ``client`` (ValueError when it is not one)."""
        try:
            del self._items[client]
        except KeyError:
            raise ValueError("%r is not a client" % (client,)) from None

    def pop(self, index: int = -1) -> Client:
        """Remove and return the client at ``index`` (the last by default)."""
        client = self[index]
        del self._items[client]
        return client

    def index(self, client: Client) -> int:
        """The position of ``client`` (ValueError when it is not one)."""
        return list(self._items).index(client)

    def copy(self) -> list[Client]:
        """The clients as a new plain list."""
        return list(self._items)

    def __setitem__(self, index: int, client: Client) -> None:
        items = list(self._items)
        items[index] = client
        self._items = dict.fromkeys(items)

    @overload
    def __getitem__(self, index: int) -> Client: ...

    @overload
    def __getitem__(self, index: slice) -> list[Client]: ...

    def __getitem__(self, index: int | slice) -> Client | list[Client]:
        if index == 0 and self._items:
            return next(iter(self._items))
        if index == -1 and self._items:
            return next(reversed(self._items))
        return list(self._items)[index]

    def __iter__(self) -> Iterator[Client]:
        return iter(self._items)

    def __reversed__(self) -> Iterator[Client]:
        return reversed(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, client: object) -> bool:
        return client in self._items

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClientList):
            return list(self._items) == list(other._items)
        if isinstance(other, (list, tuple)):
            return list(self._items) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self._items))
