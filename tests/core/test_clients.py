"""ClientList: a list of a Variable's readers with constant-time membership and removal."""

import time

import pytest

from nbgraph.core.clients import ClientList


def test_reads_like_the_list_of_clients_in_arrival_order():
    clients = ClientList([("a", 0), ("b", 1)])
    clients.append(("output", 0))
    assert clients == [("a", 0), ("b", 1), ("output", 0)]
    assert list(clients) == [("a", 0), ("b", 1), ("output", 0)]
    assert len(clients) == 3 and clients and not ClientList()
    assert clients[0] == ("a", 0) and clients[-1] == ("output", 0) and clients[1] == ("b", 1)
    assert clients[1:] == [("b", 1), ("output", 0)]
    assert ("b", 1) in clients and ("b", 0) not in clients
    assert list(reversed(clients)) == [("output", 0), ("b", 1), ("a", 0)]
    assert clients.index(("b", 1)) == 1
    assert repr(clients) == "[('a', 0), ('b', 1), ('output', 0)]"
    assert clients != [("a", 0)] and clients == ClientList(clients)


def test_removal_keeps_the_order_of_the_others():
    clients = ClientList([("a", 0), ("b", 0), ("c", 0)])
    clients.remove(("b", 0))
    assert clients == [("a", 0), ("c", 0)]
    assert clients.pop() == ("c", 0) and clients == [("a", 0)]
    clients[0] = ("output", 3)
    assert clients == [("output", 3)]
    assert clients.copy() == [("output", 3)] and type(clients.copy()) is list


def test_bookkeeping_errors_are_refused():
    clients = ClientList([("a", 0)])
    with pytest.raises(ValueError, match="already a client"):
        clients.append(("a", 0))
    with pytest.raises(ValueError, match="not a client"):
        clients.remove(("a", 1))
    with pytest.raises(TypeError):
        hash(clients)


def test_removing_a_hundred_thousand_clients_one_by_one_is_linear():
    # a list would scan to the end on each removal: ~5e9 comparisons, minutes, not ms
    pairs = [("n%d" % i, 0) for i in range(100_000)]
    clients = ClientList(pairs)
    start = time.perf_counter()
    for pair in reversed(pairs):
        clients.remove(pair)
    print("100,000 removals in %.3f s" % (time.perf_counter() - start))
    assert not clients
