"""The worker's block pool (nbgraph.linkers.dask.reuse): a released output block
is handed out again for the next block of the same size, never while anything
still refers to it, and free blocks are bounded in bytes and age."""

import numpy as np
import pytest

import nbgraph
import nbgraph.tensor as nt
from nbgraph.linkers.dask import DaskLinker, reuse

N = reuse.MIN_BYTES // 8  # float64 elements of the smallest pooled block


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_released_block_is_reused_for_the_next_of_the_same_size():
    pool = reuse.BlockPool(cap=1 << 30)
    a = pool.empty((N,), np.float64)
    address = a.ctypes.data
    a[:] = 1.0
    del a
    b = pool.empty((N // 2, 2), np.int64)  # same bytes, other shape and dtype
    assert b.ctypes.data == address and b.shape == (N // 2, 2) and b.dtype == np.int64
    assert b.flags.c_contiguous and b.flags.writeable
    c = pool.empty((N,), np.float64)  # b is alive: a new block
    assert c.ctypes.data != address
    assert pool.stats == {"made": 2, "reused": 1}


def _holder(block, kind):
    if kind == "view":
        return block[::2]
    if kind == "memoryview":
        return memoryview(block)
    return block.base if kind == "base" else [block]


@pytest.mark.parametrize("holder", ["view", "memoryview", "base", "list"])
def test_a_block_is_not_reused_while_anything_refers_to_it(holder):
    pool = reuse.BlockPool(cap=1 << 30)
    a = pool.empty((N,), np.float64)
    address = a.ctypes.data
    kept = _holder(a, holder)
    del a
    assert pool.empty((N,), np.float64).ctypes.data != address
    del kept
    assert pool.empty((N,), np.float64).ctypes.data == address


def test_small_blocks_do_not_go_through_the_pool():
    pool = reuse.BlockPool(cap=1 << 30)
    a = pool.empty((N - 1,), np.float64)
    assert a.flags.owndata and pool.held() == 0


def test_free_blocks_are_bounded_in_bytes_and_age():
    clock = Clock()
    pool = reuse.BlockPool(cap=reuse.MIN_BYTES * 2, clock=clock)
    blocks = [pool.empty((N,), np.float64) for _ in range(3)]
    del blocks
    pool.trim()
    assert pool.held() == 2 and pool.free_bytes() == 2 * reuse.MIN_BYTES
    clock.now += reuse.KEEP_SECONDS / 2
    kept = pool.empty((N,), np.float64)  # reused: no longer free, its age restarts
    clock.now += reuse.KEEP_SECONDS / 2 + 1
    pool.trim()
    assert pool.held() == 1 and pool.free_bytes() == 0
    del kept
    pool.trim()
    assert pool.free_bytes() == reuse.MIN_BYTES
    clock.now += reuse.KEEP_SECONDS + 1
    pool.trim()
    assert pool.held() == 0
    assert pool.stats == {"made": 3, "reused": 1}


def test_no_free_block_is_kept_under_memory_pressure():
    state = {"high": False}
    pool = reuse.BlockPool(cap=1 << 30, pressure=lambda: state["high"])
    blocks = [pool.empty((N,), np.float64) for _ in range(2)]
    del blocks
    pool.trim()
    assert pool.held() == 2
    kept = pool.empty((N,), np.float64)  # in use: never dropped
    state["high"] = True
    pool.trim()
    assert pool.held() == 1 and pool.stats == {"made": 2, "reused": 1}
    del kept


def test_the_worker_pool_s_pressure_is_the_first_dask_threshold_minus_the_margin():
    class Manager:
        memory_limit = 1000
        memory_target_fraction = False
        memory_spill_fraction = 0.7
        memory_pause_fraction = 0.8

    class Monitor:
        rss = 0

        def get_process_memory(self):
            return self.rss

    class Worker:
        monitor = Monitor()

    pressure = reuse._pressure(Worker, Manager, 1000)
    Worker.monitor.rss = 649
    assert not pressure()
    Worker.monitor.rss = 651
    assert pressure()
    Manager.memory_spill_fraction = False
    assert not reuse._pressure(Worker, Manager, 1000)()  # pause (0.8) is the first
    Manager.memory_pause_fraction = False
    assert reuse._pressure(Worker, Manager, 1000) is None


def test_pooled_outputs_leave_inputs_and_small_outputs_alone():
    pool = reuse.BlockPool(cap=1 << 30)
    x = np.ones(N)
    small = np.ones(3)
    fresh = np.empty(N)
    prepare = reuse.pooled_prepare(lambda inputs: [inputs[0], small, fresh, fresh[:N // 2]],
                                   pool)
    outs = prepare([x])
    assert outs[0] is x and outs[1] is small and outs[3].base is fresh
    assert outs[2] is not fresh and outs[2].shape == fresh.shape and pool.held() == 1


def test_no_pool_outside_a_distributed_worker_or_when_switched_off(monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(reuse, "_pool", {"checked": False, "pool": None})
    assert reuse.worker_pool() is None
    monkeypatch.setattr(distributed, "get_worker", lambda: object())
    monkeypatch.setattr(reuse, "_pool", {"checked": False, "pool": None})
    assert reuse.worker_pool().cap == reuse.DEFAULT_CAP
    monkeypatch.setenv("NBGRAPH_DASK_BLOCK_POOL", "0")
    monkeypatch.setattr(reuse, "_pool", {"checked": False, "pool": None})
    assert reuse.worker_pool() is None


def test_kernels_in_a_worker_reuse_their_released_blocks(dk):
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from nbgraph.linkers.dask import local_cluster

    x, y = nt.dvector("x"), nt.dvector("y")
    with local_cluster(n_workers=1, memory_limit="1GB") as cluster, \
            distributed.Client(cluster) as client:
        f = nbgraph.function([x, y], x + y * 2.0, linker=DaskLinker(scheduler=client))
        rng = da.random.default_rng(1)
        args = client.persist([rng.standard_normal(3 * N, chunks=N) for _ in "xy"])
        for _ in range(3):
            out = client.persist(f(*args))
            distributed.wait(out)
            got = out.compute()
            del out
        stats = list(client.run(lambda: reuse.worker_pool().stats).values())[0]
        a, b = (v.compute() for v in args)
    dk.assert_bit_equal(got, dk.reference([x, y], [x + y * 2.0], [a, b])[0])
    assert stats["made"] >= 3 and stats["reused"] >= 3, stats
