"""The runtime library's own declarations of the C library (csrc/runtime.c, on
Linux x86-64 and AArch64) against this machine's system headers: every pthread
object and the signal set it declares as storage are at least as big and as
aligned as the headers' types, the headers' initialisers it writes as zeros are
zeros, and its constants are theirs.  The build with the headers
(NBG_RT_SYSTEM_HEADERS, what other machines compile) compiles too."""

import platform
import re
import subprocess
import sys

import pytest

from nbgraph.linkers.c.cache import get_cache
from nbgraph.linkers.c.compiler import probe
from nbgraph.linkers.c.threads import runtime_source

_DECLARED = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")

_FACTS = r"""#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdio.h>
#include <time.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_once_t o = PTHREAD_ONCE_INIT;
static int zeros(const void *p, size_t n) {
    const unsigned char *b = p;
    while (n--) if (*b++) return 0;
    return 1;
}
int main(void) {
    printf("mutex %zu %zu\n", sizeof(pthread_mutex_t), alignof(pthread_mutex_t));
    printf("cond %zu %zu\n", sizeof(pthread_cond_t), alignof(pthread_cond_t));
    printf("attr %zu %zu\n", sizeof(pthread_attr_t), alignof(pthread_attr_t));
    printf("sigset %zu %zu\n", sizeof(sigset_t), alignof(sigset_t));
    printf("pthread_t %zu\n", sizeof(pthread_t));
    printf("once %zu %d\n", sizeof(pthread_once_t), (int)o);
    printf("timespec %zu %zu %zu\n", sizeof(struct timespec),
           sizeof(((struct timespec *)0)->tv_sec), sizeof(clockid_t));
    printf("constants %d %d\n", SIG_SETMASK, CLOCK_MONOTONIC);
    printf("zeros %d %d\n", zeros(&m, sizeof m), zeros(&c, sizeof c));
    return 0;
}
"""


def _compiler():
    info = probe(get_cache())
    return info.argv + info.flags


def _sizes():
    text = runtime_source()
    return {name.lower(): int(value) for name, value in
            re.findall(r"#define NBG_SYS_(\w+)_BYTES (\d+)", text)}


@pytest.mark.skipif(not _DECLARED, reason="the runtime declares the C library on Linux "
                    "x86-64 and AArch64 only")
def test_the_declared_storage_holds_the_headers_types(tmp_path):
    src, exe = tmp_path / "facts.c", tmp_path / "facts"
    src.write_text(_FACTS)
    cc = probe(get_cache()).argv
    subprocess.run(cc + ["-o", str(exe), str(src), "-pthread"], check=True, timeout=120)
    facts = {line.split()[0]: [int(w) for w in line.split()[1:]]
             for line in subprocess.run([str(exe)], capture_output=True, text=True,
                                        check=True).stdout.splitlines()}
    sizes = _sizes()
    assert set(sizes) == {"mutex", "cond", "attr", "sigset"}
    for name in ("mutex", "cond", "attr", "sigset"):
        size, align = facts[name]
        assert size <= sizes[name], (name, size, sizes[name])
        assert align <= 8, (name, align)  # (the storage: a long / long long member)
        assert sizes[name] % align == 0
    assert facts["pthread_t"] == [8]
    assert facts["once"] == [4, 0]
    assert facts["timespec"] == [16, 8, 4]
    assert facts["constants"] == [2, 1]
    assert facts["zeros"] == [1, 1]


@pytest.mark.skipif(not _DECLARED, reason="Linux x86-64 and AArch64 only")
def test_the_runtime_parses_no_system_header_but_the_compiler_s(tmp_path):
    src = tmp_path / "runtime.c"
    src.write_text(runtime_source())
    out = subprocess.run(_compiler() + ["-E", str(src)], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    headers = set(re.findall(r'^# \d+ "([^"]+\.h)"', out, re.M))
    names = {h.rsplit("/", 1)[-1] for h in headers}
    assert names <= {"stdarg.h", "stdatomic.h", "stdc-predef.h"}, headers


def test_the_runtime_compiles_with_the_system_headers(tmp_path):
    src = tmp_path / "runtime.c"
    src.write_text(runtime_source())
    proc = subprocess.run(_compiler() + ["-pthread", "-DNBG_RT_SYSTEM_HEADERS",
                                         "-Werror=implicit-function-declaration",
                                         "-fsyntax-only", str(src)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
