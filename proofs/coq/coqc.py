"""Running ``coqc``: find it, run it in its own session with a hard deadline, and compile a
development's files in order into a private build folder (a file already compiled in this process,
with the same text and the same dependencies, reuses its ``.vo``)."""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .source import project_files

LIBRARY = "Sinks"  # the logical name of the development (``-R . Sinks`` in _CoqProject)
INSTALL_HINT = "apt-get update && apt-get install -y coq coinor-csdp"


def coqc_path() -> str | None:
    return shutil.which("coqc")


def coqc_version(coqc: str) -> str:
    out = subprocess.run([coqc, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"version\s+(\S+)", out)
    return f"coqc {m.group(1)}" if m else "coqc (unknown version)"


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: coqc's and coqchk's own time."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Timeout(Exception):
    pass


def run_session(argv: list[str], cwd: Path, deadline: float) -> subprocess.CompletedProcess:
    """Run ``argv`` in its own session; kill the whole session at ``deadline``, or when the wait
    for it is cut short (Ctrl-C, or SIGTERM raising in this process: no signal sent to the caller's
    session reaches this one, so it is killed here before its build folder is removed)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        raise Timeout from None
    except BaseException:
        _kill_session(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, "")


def _kill_session(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the session has ended already
        pass
    proc.communicate()


_VO_CACHE: dict[str, Path] = {}  # hash of (the files up to and including one) -> its compiled .vo
_BUILD_ROOT: Path | None = None


def build_dir() -> Path:
    global _BUILD_ROOT
    if _BUILD_ROOT is None:
        _BUILD_ROOT = Path(tempfile.mkdtemp(prefix="sinks-coq-"))
        atexit.register(shutil.rmtree, _BUILD_ROOT, True)
    return Path(tempfile.mkdtemp(dir=_BUILD_ROOT))


def compile_files(coqc: str, build: Path, files: list[str], deadline: float) -> str:
    """Compile ``files`` in order inside ``build``; "" or the first error. A file whose text and
    whose dependencies' texts (its ``Require``s of the development, transitively) were compiled
    before in this process reuses that .vo."""
    keys: dict[str, str] = {}
    for name in files:
        text = (build / name).read_bytes()
        deps = sorted(set(re.findall(rb"\b" + LIBRARY.encode() + rb"\.(\w+)", text)))
        digest = hashlib.sha256(name.encode() + b"\0" + text)
        for dep in deps:
            digest.update(keys.get(dep.decode() + ".v", "missing").encode())
        key = keys[name] = digest.hexdigest()
        vo = build / (name[:-2] + ".vo")
        if key in _VO_CACHE and _VO_CACHE[key].exists():
            shutil.copy2(_VO_CACHE[key], vo)
            continue
        r = run_session([coqc, "-q", "-R", ".", LIBRARY, name], build, deadline)
        if r.returncode != 0:
            return f"{name} did not compile: {' '.join(r.stdout.split())[:600]}"
        _VO_CACHE[key] = vo
    return ""


def compiled(source: Path, deadline: float) -> Path:
    """A build folder holding ``source``'s development compiled (RuntimeError on a compile error)."""
    coqc = coqc_path()
    if coqc is None:
        raise RuntimeError(f"coqc not found (install: {INSTALL_HINT})")
    files, build = project_files(source), build_dir()
    for name in files + ["_CoqProject"]:
        shutil.copy2(Path(source) / name, build / name)
    error = compile_files(coqc, build, files, deadline)
    if error:
        raise RuntimeError(error)
    return build
