"""A full disk and a read-only cache directory, in real processes with a real compiler.

* a file-size limit (``RLIMIT_FSIZE``, set by the child itself: works for every
  user) makes every write past it fail: the compile fails with an error that
  says so and names the path, nothing is published, nothing is left behind, and
  the same process builds once the limit is lifted;
* a cache directory on a full file system (a small tmpfs: root only) makes the
  build fall back to a private temporary directory, with one warning;
* a cache directory the process may not write (a child of root runs without
  the capabilities by which root ignores permissions) is used for what it
  holds, and new modules are built privately, with one warning for the whole
  process.
"""

import os
import subprocess

import pytest

pytestmark = pytest.mark.needs_cc


def _fsize_code(k):
    return f"""
import json, os, resource, warnings
import numpy as np
import nbgraph as ng, nbgraph.tensor as nt
from nbgraph.linkers.c import cache, compiler
from nbgraph.tensor.c_code import constants
constants.ENABLED = False
sources = []
build_library = compiler.build_library
def spy(info, source, *args):
    sources.append(len(source.encode()))
    return build_library(info, source, *args)
compiler.build_library = spy
d = os.environ["NBGRAPH_CACHE_DIR"]
x = nt.dvector("x")
out = {{}}
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
twin = ng.function([x], x * {k + 1!r} + 1, linker="c")  # same structure, no limit
library = os.path.getsize(twin.program.module.path)
def listing():  # (a finished build's directory is removed on a thread: not compared)
    return sorted(n for n in os.listdir(d) if not n.startswith(".build-"))
out["before"] = listing()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    # the C source does not fit; then it does, and the library does not
    for case in ("source", "compiler"):
        limit = 256 if case == "source" else sources[0] + 512
        if limit >= library:
            out[case] = "the C source is as big as the library: no such limit"
            continue
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        try:
            ng.function([x], x * {k!r} + 1, linker="c")
            out[case] = "built"
        except Exception as exc:
            out[case] = "%s: %s" % (type(exc).__name__, exc)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        out["files " + case] = listing()
    f = ng.function([x], x * {k!r} + 1, linker="c")  # the limit lifted
    out["result"] = f(np.arange(4.0)).tolist()
out["stats"] = cache.STATS
out["warnings"] = [str(w.message) for w in caught]
print(json.dumps(out))
"""


def test_a_file_size_limit_fails_the_compile_clearly_and_leaves_nothing(lab):
    d = lab.new_cache("fsize")
    k = 1.0 + 5 / 1024
    out = lab.run(_fsize_code(k), d)
    for case, says in (("source", "File too large: " + str(d)),
                       ("compiler", "File size limit exceeded writing in " + str(d))):
        message = out[case]
        if case == "compiler" and "no such limit" in message:
            continue  # (a compiler whose libraries are smaller than their C source)
        assert message.startswith("CacheWriteError"), message
        assert says in message and "RLIMIT_FSIZE" in message, message
        assert out["files " + case] == out["before"]  # nothing published, nothing left
    assert out["warnings"] == []
    assert out["result"] == lab.expected(k)
    assert out["stats"]["compiles"] == 2
    assert len(lab.modules(d)) == 2
    lab.assert_consistent(d)
    assert lab.temporaries(d) == []


def _can_mount_tmpfs(where):
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                       check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return "cannot mount a tmpfs here: %s" % (getattr(exc, "stderr", "") or exc)
    subprocess.run(["umount", str(where)], capture_output=True, timeout=60)
    return None


def test_a_full_file_system_falls_back_to_a_private_build_with_one_warning(lab, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    why = _can_mount_tmpfs(mnt)
    if why:
        pytest.skip(why)
    # room for what every module needs (probe record, runtime, extension) and little more
    need = sum(-(-os.path.getsize(lab.seed / n) // 4096) * 4096 for n in os.listdir(lab.seed)
               if n.startswith(("probe-", "runtime-", "nbg-fastcall-")))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d,mode=0700" % (need + 4096), "tmpfs",
                    str(mnt)], check=True, capture_output=True, timeout=60)
    try:
        d = lab.new_cache("cache", parent=mnt)
        before = sorted(os.listdir(d))
        k = 1.0 + 6 / 1024
        out = lab.run(lab.graph_code([k, k + 1]), d)
        assert out["result"] == [lab.expected(k), lab.expected(k + 1)]
        assert len(out["warnings"]) == 1, out["warnings"]
        warning = out["warnings"][0]
        assert str(d) in warning and "No space left on device" in warning, warning
        assert sorted(os.listdir(d)) == before  # nothing half-written stays
        assert out["stats"]["compiles"] == 2
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)


def _read_only_setup(lab, missing):
    """A cache directory the child cannot write: present with mode 0500, or missing
    under a parent with mode 0555."""
    if os.geteuid() == 0:
        why = lab.root_can_drop_powers()
        if why:
            pytest.skip(why)
    parent = lab.tmp / "ro"
    parent.mkdir(mode=0o755)
    d = parent / "cache"
    if missing:
        os.chmod(parent, 0o555)
    else:
        lab.new_cache("cache", parent=parent)
        os.chmod(d, 0o500)
    return d


@pytest.mark.parametrize("missing", [False, True], ids=["read-only", "not-creatable"])
def test_a_read_only_cache_directory_falls_back_with_one_warning(lab, missing):
    d = _read_only_setup(lab, missing)
    try:
        before = sorted(os.listdir(d)) if d.exists() else None
        k = 1.0 + (7 + missing) / 1024
        systmp = lab.tmp / "systmp"  # the child's temporary directory, with the leftover
        systmp.mkdir(mode=0o700)     # of a private build whose process was killed
        dead = subprocess.Popen(["true"])
        dead.wait()
        (systmp / ("nbgraph-build-%d-leftover" % dead.pid)).mkdir()
        out = lab.run(lab.graph_code([k, k + 1]), d, permissions_apply=True,
                      env={"TMPDIR": str(systmp)})
        assert out["result"] == [lab.expected(k), lab.expected(k + 1)]
        assert len(out["warnings"]) == 1, out["warnings"]
        warning = out["warnings"][0]
        assert str(d) in warning and "cannot be written" in warning, warning
        assert out["stats"]["compiles"] == 2
        assert os.listdir(systmp) == []  # private builds removed, the leftover swept
        if missing:
            assert not d.exists()
        else:
            assert sorted(os.listdir(d)) == before
            assert out["stats"]["runtime_builds"] == 0  # what the directory holds is used
    finally:
        os.chmod(d.parent, 0o755)
        if d.exists():
            os.chmod(d, 0o700)
