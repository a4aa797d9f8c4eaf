"""Finding the C compiler, probing its flags once, and building shared libraries.

The probe answers, for one compiler binary on one CPU: does it work, which
version is it, and which optional flags it accepts (``-march=native``,
glibc's vector math library ``libmvec``).  The answer is kept in memory for
the process and in a small JSON record in the cache directory, keyed by the
compiler's path and file identity and by the CPU's feature flags, so a fresh
process whose modules are all cached never runs the compiler at all.

Floating-point flags never change a value NumPy would compute:
``-ffp-contract=off`` keeps ``a*b + c`` as two rounded operations (no fused
multiply-add), ``-fno-math-errno`` only drops the errno side effect of libm
calls, and ``-fno-trapping-math`` only drops floating-point exception flags.
``-ffast-math`` and ``-ffinite-math-only`` are never used: NaN, infinities
and signed zeros behave exactly as in NumPy.
"""

import os
import threading

from nbgraph.linkers import meanwhile

try:  # CPython's built-in SHA-256: importing hashlib loads OpenSSL (~3-4 ms)
    from _sha2 import sha256
except ImportError:  # pragma: no cover - Python < 3.12 or another implementation
    try:
        from _sha256 import sha256
    except ImportError:
        from hashlib import sha256

__all__ = ["ABI_VERSION", "CompilerInfo", "CompileError", "CompilerUnavailable",
           "ProbeMismatch", "find_compiler", "probe", "probe_nowait", "confirm",
           "build_library", "MVEC_FUNCTIONS", "probe_function", "RuntimeMissing", "which",
           "run_compiler", "run_compilers", "command_text", "check_opened"]

#: Version of the calling convention between Python and generated C.  Part
#: of every module's cache key: bump it whenever generated code changes shape.
ABI_VERSION = 5


class RuntimeMissing(RuntimeError):
    """A module that calls the runtime library's helpers was loaded where the
    runtime is unavailable (:meth:`~nbgraph.linkers.c.cache.ModuleCache.get`
    rebuilds it standalone)."""


def check_opened(path: str, abi: int, attach_status: int, runtime_given: bool) -> None:
    """Raise unless a just-opened module speaks :data:`ABI_VERSION` and accepted the
    runtime table it was given (``attach_status`` 0); both module loaders
    (:class:`~nbgraph.linkers.c.cache.LoadedModule` through cffi,
    :class:`~nbgraph.linkers.c.fastcall.NativeModule` through the extension) call it."""
    if abi != ABI_VERSION:
        raise OSError("module %s has ABI %d, expected %d" % (path, abi, ABI_VERSION))
    if attach_status != 0:
        if not runtime_given:
            raise RuntimeMissing("module %s needs the runtime library" % path)
        raise OSError("module %s rejected the thread-pool runtime" % path)

#: Base flags: optimisation, position-independent shared library, C11 with
#: GNU extensions, IEEE-exact floating point (see the module docstring),
#: hidden symbols except the module's entry points, and stripped output (so
#: two builds of one source are byte-identical).
BASE_FLAGS = ["-O3", "-fPIC", "-shared", "-std=gnu11", "-ffp-contract=off",
              "-fno-math-errno", "-fno-trapping-math", "-fvisibility=hidden", "-s",
              "-Werror=implicit-function-declaration", "-Werror=int-conversion",
              "-Werror=incompatible-pointer-types", "-Werror=return-type"]
BASE_LIBS = ["-lm"]

#: libm functions with vector versions in glibc's libmvec (double and float).
MVEC_FUNCTIONS = ("exp", "log", "sin", "cos", "tan", "expm1", "log1p", "tanh")
MVEC_BINARY = ("pow",)


class CompileError(RuntimeError):
    """The C compiler rejected a generated module (the message shows why)."""


class CompilerUnavailable(RuntimeError):
    """No working C compiler: the C linkers cannot be used."""


class ProbeMismatch(RuntimeError):
    """Code was generated for the probe's usual answer while it ran, and it found
    otherwise: ``info`` is its answer (generate again with it)."""

    def __init__(self, info):
        super().__init__("the compiler probe found %r" % (info,))
        self.info = info


class CompilerInfo:
    """What the probe found: ``argv`` (the compiler command), ``version`` (its
    first ``--version`` line), ``flags`` and ``libs`` to build with, and
    ``mvec`` (whether vector math functions are declared).  ``confirmed`` is
    False for the answer :func:`probe_nowait` expects while the probe runs:
    code built with it runs only after :func:`confirm`."""

    def __init__(self, argv, version, flags, libs, mvec, confirmed=True):
        self.argv = list(argv)
        self._version = version
        self.flags = list(flags)
        self.libs = list(libs)
        self.mvec = bool(mvec)
        self.confirmed = confirmed

    @property
    def version(self):
        """The compiler's first ``--version`` line (run when first needed: the
        answer :func:`probe_nowait` expects is made before, while the probe's
        thread runs the command)."""
        if self._version is None:
            self._version = _version(self.argv)
        return self._version

    def key_text(self):
        """The text that enters every module's cache key.  With ``-march=native``
        (or another ``=native`` flag) it names this CPU too: a cache directory
        shared by machines of different CPUs must not hand one of them code built
        for another's instruction set."""
        parts = [self.version, " ".join(self.argv), " ".join(self.flags),
                 " ".join(self.libs), str(int(self.mvec)), str(ABI_VERSION)]
        if any(flag.endswith("=native") for flag in self.flags):
            parts.append(_cpu_identity())
        return "\0".join(parts)

    def as_dict(self):
        return {"argv": self.argv, "version": self.version, "flags": self.flags,
                "libs": self.libs, "mvec": self.mvec, "abi": ABI_VERSION}

    def __repr__(self):
        return "<CompilerInfo %s: %s %s>" % (self.version, " ".join(self.argv),
                                             " ".join(self.flags))


_found = {}


def find_compiler():
    """The compiler command as a list (``$CC`` split, else ``cc``/``gcc``), or None.

    Remembered per (``$CC``, ``$PATH``).
    """
    key = (os.environ.get("CC", ""), os.environ.get("PATH", ""))
    if key not in _found:
        _found[key] = _find_compiler()
    found = _found[key]
    return list(found) if found else None


def _find_compiler():
    cc = os.environ.get("CC", "").strip()
    if cc:
        import shlex

        try:
            words = shlex.split(cc)
        except ValueError:
            return None
        if not words:
            return None
        path = which(words[0])
        return [path] + words[1:] if path else None
    path = which("cc") or which("gcc")
    return [path] if path else None


def which(name: str) -> str | None:
    """The executable ``name`` on PATH (or the path itself if it has a slash), else None.

    The POSIX part of ``shutil.which``, without importing shutil (and its
    compression modules) in every process that uses the C linker.
    """
    if os.path.dirname(name):
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or os.curdir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


_cpu = []


def _cpu_identity():
    """A short hash of this CPU's model and feature flags (for -march=native)."""
    if not _cpu:
        _cpu.append(_read_cpu_identity())
    return _cpu[0]


def _read_cpu_identity():
    try:
        with open("/proc/cpuinfo", "rb") as f:
            text = f.read(65536)
    except OSError:
        return "unknown"
    wanted = []
    for line in text.splitlines():
        if line.startswith((b"flags", b"model name", b"vendor_id", b"Features",
                            b"CPU part", b"CPU implementer")):
            wanted.append(line)
            if line.startswith((b"flags", b"Features")):
                break
    return sha256(b"\n".join(wanted)).hexdigest()[:16]


_ids = {}  # (argv, ABI, CPU) -> (os.stat(argv[0]) stamp, probe id)


def _probe_id(argv):
    """The probe record's id for the compiler ``argv`` on this CPU (remembered while
    ``os.stat(argv[0])``, which follows its links, is unchanged: a replaced binary
    or a repointed link is probed again)."""
    try:
        st = os.stat(argv[0])
        stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    except (OSError, IndexError):
        return _compute_probe_id(argv)
    key = (tuple(argv), ABI_VERSION, _cpu_identity())
    found = _ids.get(key)
    if found is None or found[0] != stamp:
        found = _ids[key] = (stamp, _compute_probe_id(argv))
    return found[1]


def _compute_probe_id(argv):
    parts = [str(ABI_VERSION), _cpu_identity()]
    for word in argv[:1]:
        try:
            real = os.path.realpath(word)
            st = os.stat(real)
            parts += [real, str(st.st_size), str(st.st_mtime_ns), str(st.st_ino)]
        except OSError:
            parts.append(word)
    parts += argv[1:]
    return sha256("\0".join(parts).encode()).hexdigest()[:24]


_probe_lock = threading.Lock()
_probed = {}


def probe(cache=None, argv=None):
    """The :class:`CompilerInfo` of the compiler (probed once per process).

    ``cache`` is a :class:`~nbgraph.linkers.c.cache.ModuleCache` whose
    directory remembers the answer between processes.  Raises
    :class:`CompilerUnavailable` when there is no working compiler.
    """
    argv = argv or find_compiler()
    if not argv:
        cc = os.environ.get("CC", "").strip()
        raise CompilerUnavailable(
            "no C compiler found (%s); install gcc (apt-get install gcc libc6-dev) or set CC"
            % ("CC=%r is not on PATH" % cc if cc else "neither cc nor gcc is on PATH"))
    return _probe(cache, argv, _probe_id(argv))


def _probe(cache, argv, pid, record=None):
    """:func:`probe` for the compiler ``argv`` whose probe id is ``pid`` (``record``:
    its probe record, when the caller has just read it)."""
    with _probe_lock:
        found = _probed.get(pid)
        if found is not None:
            if isinstance(found, Exception):
                raise found
            return found
        if record is None and cache is not None:
            record = cache.read_probe(pid)
        if record is not None:
            info = CompilerInfo(record["argv"], record["version"], record["flags"],
                                record["libs"], record["mvec"])
        else:
            from nbgraph.linkers.c import probe_program

            try:
                info = probe_program.run_probe(argv, cache)
            except CompilerUnavailable as exc:
                _probed[pid] = exc
                raise
            if cache is not None:
                cache.write_probe(pid, info.as_dict())
        _probed[pid] = info
        return info


_threads = {}  # probe id -> the thread running probe() for it (see probe_nowait)
_threads_lock = threading.Lock()


def probe_nowait(cache, argv=None):
    """The :class:`CompilerInfo` to generate code with now: the probe's answer when
    it is known (in memory or recorded in ``cache``); else the probe is started
    on a thread and the usual answer (every optional flag) comes back with
    ``confirmed`` False: code built with it must not run before :func:`confirm`.

    On a first use the probe is the build of the runtime library (see
    :func:`_run_probe`), so the first module compiles while it runs.
    """
    argv = argv or find_compiler()
    if not argv or cache is None:
        return probe(cache, argv)
    pid = _probe_id(argv)
    record = None
    if pid not in _probed:
        with _threads_lock:
            running = pid in _threads and _threads[pid].is_alive()
            if not running:
                record = cache.read_probe(pid)  # (read once: _probe takes it)
            if not running and record is None:
                from nbgraph.linkers.c import threads  # (its units start at once, here)

                threads.start_early(cache, _usual(argv))
                thread = threading.Thread(target=_probe_quietly, args=(cache, argv),
                                          name="nbgraph-probe", daemon=True)
                _threads[pid] = thread
                thread.start()
                running = True
        if running and pid not in _probed:
            return _usual(argv)
    return _probe(cache, argv, pid, record)


def _usual(argv):
    """The probe's usual answer for ``argv`` (every optional flag), unconfirmed."""
    return CompilerInfo(argv, None, BASE_FLAGS + ["-march=native"], BASE_LIBS + ["-lmvec"],
                        True, confirmed=False)


def _probe_quietly(cache, argv):
    try:
        probe(cache, argv)
    except Exception:  # noqa: BLE001 - confirm() probes again and raises it
        pass


def confirm(info, cache=None):
    """``info`` once the probe agrees with it (waiting for a probe running on a
    thread); raises :class:`ProbeMismatch` with the probe's answer when it
    differs, or what the probe raised."""
    if info.confirmed:
        return info
    thread = _threads.get(_probe_id(info.argv))
    if thread is not None:
        thread.join()
    found = probe(cache, info.argv)
    if found.key_text() != info.key_text():
        raise ProbeMismatch(found)
    info.confirmed = True
    return info


_versions = {}
_versions_lock = threading.Lock()


def _version(argv):
    """The first line of ``argv --version`` (run once per command, whichever
    thread asks first; the others wait for its answer)."""
    key = tuple(argv)
    if key in _versions:
        return _versions[key]
    with _versions_lock:
        return _version_locked(argv, key)


def _version_locked(argv, key):
    if key not in _versions:
        import subprocess

        try:
            proc = subprocess.run(argv + ["--version"], capture_output=True, text=True,
                                  timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CompilerUnavailable("the C compiler %s cannot be run: %s" % (argv[0], exc)) \
                from None
        lines = (proc.stdout or proc.stderr).strip().splitlines()
        _versions[key] = lines[0] if lines else "unknown"
    return _versions[key]


def _forget_threads_in_child():
    global _probe_lock, _threads_lock, _versions_lock
    _probe_lock = threading.Lock()
    _threads_lock = threading.Lock()
    _versions_lock = threading.Lock()
    _threads.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads_in_child)


def _mvec_declarations():
    lines = []
    for f in MVEC_FUNCTIONS:
        lines.append('__attribute__((simd("notinbranch"))) double %s(double);' % f)
        lines.append('__attribute__((simd("notinbranch"))) float %sf(float);' % f)
    for f in MVEC_BINARY:
        lines.append('__attribute__((simd("notinbranch"))) double %s(double, double);' % f)
        lines.append('__attribute__((simd("notinbranch"))) float %sf(float, float);' % f)
    return "\n".join(lines) + "\n"


def probe_function(mvec):
    """C text of the probe's test function ``nbg_probe`` without any header (see
    :func:`nbgraph.linkers.c.probe_program.probe_function`)."""
    from nbgraph.linkers.c import probe_program

    return probe_program.probe_function(mvec)


def loads_and_runs(path):
    """True when the library at ``path`` loads and its ``nbg_probe`` runs, in a
    child process (see :func:`nbgraph.linkers.c.probe_program.loads_and_runs`)."""
    from nbgraph.linkers.c import probe_program

    return probe_program.loads_and_runs(path)


def build_library(info, source, src_path, out_path, extra_flags=()):
    """Compile ``source`` (written to ``src_path``) into the shared library ``out_path``
    (``extra_flags`` after the probed ones).  A source of several translation
    units (see :func:`nbgraph.linkers.c.codegen.source_parts`) has them compiled
    at once, then linked.  Its support-object blocks
    (:mod:`nbgraph.linkers.c.support`) are linked from the cache directory, or
    compiled alongside the units (then published there) when it has none.

    Raises :class:`CompileError` with the compiler's messages on failure.
    """
    from nbgraph.linkers.c import support
    from nbgraph.linkers.c.codegen import source_parts

    workdir = os.path.dirname(os.path.abspath(src_path))
    parts, objects = support.split_objects(source_parts(source), info, extra_flags)
    stem = src_path[:-2] if src_path.endswith(".c") else src_path
    sources = [src_path] if len(parts) == 1 else [
        "%s.part%d.c" % (stem, k) for k in range(len(parts))]
    linked, builds = [], []
    for obj in objects:
        found = support.published(obj, workdir)
        if found is None:
            found = os.path.join(workdir, obj.file_name)
            builds.append((obj, found, os.path.join(workdir, obj.file_name[:-2] + ".c")))
        linked.append(found)
    for path, text in list(zip(sources, parts, strict=True)) + \
            [(src, obj.source) for obj, _, src in builds]:
        _write_source(path, text)
    flags = info.argv + info.flags + list(extra_flags)
    from nbgraph.linkers.c import direct_link, prestart
    from nbgraph.linkers.c.linking import link

    if len(parts) == 1 and not objects and not prestart.started(flags, parts[0]) and \
            (extra_flags or not direct_link.ready(info, out_path)):
        link(info, flags, out_path, [src_path], src_path, extra_flags)  # one driver run
        return out_path
    units = [(path[:-2] + ".o", path) for path in sources] + \
        [(obj_path, src) for _, obj_path, src in builds]
    direct_link.compile_units(info, flags, units)  # (by cc1 and as alone where it can)
    link(info, flags, out_path, [obj for obj, _ in units[:len(sources)]] + linked,
         src_path, extra_flags)
    for obj, obj_path, _ in builds:
        support.publish(obj, obj_path, workdir, {"abi": ABI_VERSION, "compiler": info.version})
    return out_path


def _write_source(path, text):
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as exc:  # a full disk, a file-size limit: say which file
        if exc.filename is None:
            exc.filename = path
        raise


def run_compiler(cmd, src_path):
    """Run one compiler command; :class:`CompileError` (naming ``src_path``) when
    it fails or cannot be run."""
    run_compilers([cmd], [src_path])


def run_compilers(cmds: list[list[str]], src_paths: list[str]) -> None:
    """Run the compiler commands at once; CompileError on the first that fails."""
    import subprocess

    procs = []
    try:
        for cmd in cmds:
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True))
        meanwhile.run()  # (this thread's Python that does not need their output)
        errors = [proc.communicate(timeout=600)[1] for proc in procs]
    except (OSError, subprocess.TimeoutExpired) as exc:
        for proc in procs:
            proc.kill()
            proc.wait()
        raise CompileError("running the C compiler failed: %s\ncommand: %s" % (
            exc, command_text(cmds[len(procs) - 1 if procs else 0]))) from None
    for proc, cmd, err, src in zip(procs, cmds, errors, src_paths, strict=True):
        if proc.returncode != 0:
            raise CompileError("the C compiler failed on a generated module (%s):\n%s\n"
                               "command: %s\nsource: %s" % (
                                   _status_text(proc.returncode), _trim(err),
                                   command_text(cmd), src))


def command_text(cmd: list[str]) -> str:
    """``cmd`` as a shell would read it (each argument quoted where needed)."""
    import shlex

    return " ".join(shlex.quote(c) for c in cmd)


def _status_text(returncode: int) -> str:
    """ "exit status 1", or "killed by signal SIGXFSZ (File size limit exceeded)"."""
    if returncode >= 0:
        return "exit status %d" % returncode
    import signal

    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = "signal %d" % -returncode
    return "killed by %s (%s)" % (name, signal.strsignal(-returncode) or "?")


def _trim(text, limit=6000):
    text = text.strip()
    if len(text) > limit:
        return text[:limit] + "\n... (%d more characters)" % (len(text) - limit)
    return text

