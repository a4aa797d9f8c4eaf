"""A JupyterLab server and a headless Chromium for the real-browser tests.

One Lab server (``lab`` fixture) and one browser (``browser`` fixture) serve the whole
session.  The server runs on 127.0.0.1 on a free port, in a temporary copy of
``notebooks/`` with its own Jupyter config, data and settings directories, so the
notebook-trust database and the Lab workspace start empty, as on a fresh clone.  The
notebooks are trusted with the same command ``make lab`` runs (``jupyter trust``).

Chromium is Debian's package (``/usr/bin/chromium``, installed by ``make``'s
system-deps); Playwright only drives it (its own browser download is not used).  The
tests skip, saying why, only when Playwright or a Chromium executable is missing.

Screenshots go to ``test-artifacts/browser/`` at the repository root (gitignored).
"""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts" / "browser"

#: Where Debian's chromium package puts its executable (and a few other places).
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]

#: The viewport used for every page: with the file browser open, Lab 4's notebook
#: output area is about 868 px wide in it (the width the issue measured).
VIEWPORT = {"width": 1300, "height": 900}

STARTUP_SECONDS = 120


def chromium_path() -> str | None:
    """The Chromium executable to drive, or None."""
    env = os.environ.get("NBGRAPH_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for path in CHROMIUM_PATHS:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Lab:
    """A running JupyterLab: ``url(path)`` gives the address of a notebook in it."""

    def __init__(self, base: str, token: str, root: pathlib.Path):
        self.base = base
        self.token = token
        self.root = root

    def url(self, name: str) -> str:
        """The notebook ``name`` opened alone (``reset``: no tabs left from earlier pages)."""
        return "%s/lab/tree/%s?reset&token=%s" % (self.base, name, self.token)


def trust_command(paths):
    """The command ``make lab`` runs to trust the stored tutorials."""
    return [sys.executable, "-m", "jupyter", "trust", *[str(p) for p in paths]]


@pytest.fixture(scope="session")
def browser():
    """A headless Debian Chromium driven by Playwright (skips when either is missing)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed (pip install playwright)")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium executable (apt-get install chromium)")
    profile = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / ("nbgraph-chromium-%s"
                                                               % secrets.token_hex(4))
    with sync_playwright() as pw:
        # a persistent context gives Chromium a fresh user-data-dir of our own
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=exe, headless=True, args=CHROMIUM_ARGS,
            viewport=VIEWPORT)
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """JupyterLab serving a trusted copy of notebooks/ on 127.0.0.1."""
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        pytest.skip("JupyterLab is not installed (pip install jupyterlab)")
    home = tmp_path_factory.mktemp("lab")
    root = home / "notebooks"
    shutil.copytree(NOTEBOOK_DIR, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "settings", "workspaces"):
        (home / name).mkdir()
    env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(
                   home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
               JUPYTER_PLATFORM_DIRS="1")
    # Every cell in the page (no virtual scrolling), no kernel started on open.
    tracker = home / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps(
        {"windowingMode": "none"}))
    docmanager = home / "settings" / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True)
    (docmanager / "plugin.jupyterlab-settings").write_text(json.dumps(
        {"autosave": False}))
    subprocess.run(trust_command(sorted(root.glob("*.ipynb"))), env=env, check=True,
                   capture_output=True, timeout=120)
    port = _free_port()
    token = secrets.token_hex(16)
    log = open(home / "lab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
         "--port=%d" % port, "--ServerApp.port_retries=0", "--IdentityProvider.token=" + token,
         "--ServerApp.root_dir=" + str(root), "--allow-root",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(root))
    base = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                raise RuntimeError("JupyterLab exited (status %s); log:\n%s" % (
                    proc.returncode, (home / "lab.log").read_text(errors="replace")[-3000:]))
            try:
                with urllib.request.urlopen("%s/api/status?token=%s" % (base, token),
                                            timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("JupyterLab did not answer within %d s" % STARTUP_SECONDS)
            time.sleep(0.5)
        yield Lab(base, token, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="session")
def artifacts():
    """The directory screenshots are saved in."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
