"""Processes killed, racing and clearing the cache: real processes, a real compiler.

Each test has a cache directory of its own and a module no cache has; the
children stop at the compiler wrapper's gate (see conftest.py), or right after
publishing a sidecar, so a kill or a ``cache clear`` lands at a known point of the
build every time, without sleeps.
"""

import os

import pytest

pytestmark = pytest.mark.needs_cc


#: Child code: stop for good right after publishing a module's sidecar (before its library)
_STOP_AFTER_SIDECAR = """
import os, time
_rename = os.rename
def rename(src, dst):
    _rename(src, dst)
    name = os.path.basename(str(dst))
    if name.endswith(".meta") and not name.startswith(("runtime-", "nbg-fastcall-")):
        gate = os.environ["NBG_PUBLISH_GATE"]
        with open(gate + ".tmp", "w") as f:  # announced whole, as the compiler wrapper does
            f.write(str(os.getpid()))
        _rename(gate + ".tmp", gate + ".waiting")
        time.sleep(600)
os.rename = rename
"""


def test_processes_killed_mid_compile_leave_nothing_loadable_and_the_next_one_recovers(lab):
    d = lab.new_cache("killed")
    k = 1.0 + 1 / 1024
    code = lab.graph_code(k)
    in_compiler = lab.spawn(code, d, gate="before")  # killed while the compiler runs
    half_written = lab.spawn(code, d, gate="partial")  # killed with half a library written
    orphaning = lab.spawn(code, d, gate="before")  # killed; its compiler finishes afterwards
    compiler_pids = [c.wait_at_gate() for c in (in_compiler, half_written, orphaning)]
    publish_gate = str(lab.tmp / "publish")
    publishing = lab.spawn(lab.graph_code(k, before=_STOP_AFTER_SIDECAR), d,
                           env={"NBG_PUBLISH_GATE": publish_gate})
    publishing.gate = publish_gate  # killed between publishing the sidecar and the library
    publishing.wait_at_gate()
    assert len(lab.temporaries(d)) == 4  # one private build directory each
    in_compiler.kill()
    half_written.kill()
    publishing.kill()
    orphaning.kill(group=False)
    orphaning.release()
    lab.process_gone(compiler_pids[2])  # its compiler wrote a whole library, to no one

    assert lab.modules(d) == []  # no library was published (one sidecar was)
    partial = [os.path.join(d, t, n) for t in lab.temporaries(d)
               for n in os.listdir(d / t) if n.endswith(".so")]
    assert partial, "the killed builds should have left libraries in their build directories"
    info = lab.cli(d, "info")
    assert info.returncode == 0 and "leftover temporaries: 4" in info.stdout, info.stdout

    after = lab.run(code, d)
    assert after["result"] == lab.expected(k)
    assert after["stats"]["compiles"] == 1  # built anew, never loaded a leftover
    assert after["stats"]["disk_loads"] == after["stats"]["rebuilt_corrupt"] == 0
    assert lab.temporaries(d) == []  # the dead processes' leftovers were swept
    assert len(lab.modules(d)) == 1
    lab.assert_consistent(d)
    assert lab.run(code, d)["stats"]["disk_loads"] == 1  # and the published one is used


def test_eight_processes_racing_on_one_new_graph_publish_one_whole_library(lab):
    d = lab.new_cache("race")
    k = 1.0 + 2 / 1024
    code = lab.graph_code(k)
    children = [lab.spawn(code, d, gate="before") for _ in range(8)]
    for child in children:  # all eight are in the compiler ...
        child.wait_at_gate()
    for child in children:  # ... and finish and publish at once
        child.release()
    results = [child.result() for child in children]
    assert all(r["result"] == lab.expected(k) for r in results)
    assert all(r["stats"]["compiles"] == 1 for r in results)
    assert all(r["warnings"] == [] for r in results)
    assert len(lab.modules(d)) == 1
    assert len([n for n in os.listdir(d) if n.endswith(".meta")
                and not n.startswith(("runtime-", "nbg-fastcall-"))]) == 1
    lab.assert_consistent(d)
    assert lab.temporaries(d) == []


def test_cache_clear_while_another_process_compiles_hurts_neither(lab):
    d = lab.new_cache("clear")
    k = 1.0 + 3 / 1024
    code = lab.graph_code(k)
    compiling = lab.spawn(code, d, gate="before")
    compiling.wait_at_gate()
    cleared = lab.cli(d, "clear")
    assert cleared.returncode == 0, cleared.stderr
    assert "removed" in cleared.stdout
    assert len(lab.temporaries(d)) == 1  # a live process's build is not a leftover
    compiling.release()
    done = compiling.result()
    assert done["result"] == lab.expected(k)
    assert done["warnings"] == []
    assert lab.temporaries(d) == []
    assert len(lab.modules(d)) == 1
    lab.assert_consistent(d)
    again = lab.cli(d, "clear")  # nothing compiling now: everything goes
    assert again.returncode == 0
    assert lab.modules(d) == [] and lab.temporaries(d) == []
