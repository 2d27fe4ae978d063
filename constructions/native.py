"""Compile a C or C++ source for this host, once, and cache the library (for ``ctypes``).

Shared by the training kernel (``empirical/training/compiled``) and the certificates' inner loops
(``proofs/certify/arithmetic/native.py``). The library is named ``<stem>-<hash>.so`` in the caller's folder
under the host cache (``$SINKS_CACHE_DIR``, default ``~/.cache/attention-sinks-verified``); the
hash covers the source, the flags, the compiler and its version, the CPU model and the number of
CPUs, so a changed source or another machine builds anew (``-march=native`` code is never loaded
on a host it was not built for). The build writes a temporary file and renames it, so processes
that build at once never load a half-written library. The cache holds code: only a library whose
name this module derives from the source is ever returned.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

CACHE_ENV = "SINKS_CACHE_DIR"
COMPILERS = {"c": ("CC", "gcc", "cc"), "c++": ("CXX", "g++", "c++")}


def cache_dir() -> Path:
    """The host cache: ``$SINKS_CACHE_DIR``, default ``~/.cache/attention-sinks-verified``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "attention-sinks-verified")


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what ``platform`` knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


VECTOR_FLAGS = (("avx512f", "AVX-512", 512), ("avx2", "AVX2", 256), ("avx", "AVX", 256), ("sse2", "SSE2", 128),
                ("asimd", "NEON", 128))  # widest first


def cpu_flags() -> set[str]:
    """The CPU's feature flags (/proc/cpuinfo's ``flags``, ``Features`` on ARM; empty if unknown)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((set(line.split(":", 1)[1].split()) for line in f
                         if line.lower().startswith(("flags", "features"))), set())
    except OSError:
        return set()


def widest_vector(flags: set[str] | None = None) -> tuple[str, int] | None:
    """The widest SIMD instruction set among ``flags`` (default: this CPU's) and its register bits."""
    flags = cpu_flags() if flags is None else flags
    return next(((name, bits) for flag, name, bits in VECTOR_FLAGS if flag in flags), None)


def vector_width(flags: set[str] | None = None) -> str:
    """'AVX-512 (512 bit)', 'AVX2 (256 bit)', ... or 'unknown': beside every CPU-time figure, so the
    figures compare across hosts (the same code is 1.3-1.6x slower with AVX2 than with AVX-512)."""
    widest = widest_vector(flags)
    return f"{widest[0]} ({widest[1]} bit)" if widest else "unknown"


def compiler(language: str = "c++") -> str | None:
    env, *names = COMPILERS[language]
    return os.environ.get(env) or next((p for p in map(shutil.which, names) if p), None)


def library_path(source: Path, flags: Sequence[str], folder: Path, stem: str, cc: str) -> Path:
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=60).stdout
    text = "\n".join([Path(source).read_text(), cc, version, *flags, cpu_model(), str(os.cpu_count())])
    return Path(folder) / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.so"


def build(source: Path, flags: Sequence[str], folder: Path, stem: str, language: str = "c++") -> tuple[Path | None, str | None]:
    """The library built from ``source`` with ``flags`` (compiled now unless cached), or None and
    the reason in one sentence."""
    cc = compiler(language)
    if cc is None:
        env, *names = COMPILERS[language]
        return None, f"no {language.upper()} compiler (set ${env}, or install {names[0]})"
    try:
        path = library_path(source, flags, folder, stem, cc)
        if not path.exists():
            _compile(cc, [*flags, "-o"], source, path)
    except (OSError, subprocess.SubprocessError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return None, f"the build failed: {first}"
    return path, None


def _compile(cc: str, flags: list[str], source: Path, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=path.parent)
    os.close(fd)
    try:
        done = subprocess.run([cc, *flags, tmp, str(source), "-lm"], capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise subprocess.SubprocessError(done.stderr.strip() or f"{cc} exited {done.returncode}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
