"""Builds, caches and loads the C kernels of `csrc/` (used by `native.py`).

A kernel is compiled on first use with the C compiler (`$CC`, else `cc`) for this CPU
(`-march=native`), once per set of sources, headers, flags and CPU (a kernel may link in
another's sources to call its functions, declared in `csrc/kernels.h`): the library is
cached under `~/.cache/shadowrl/kernels` (`$XDG_CACHE_HOME`) and a later process loads
the file.
It is loaded after torch, so its OpenMP regions run on torch's own libgomp threads.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from shadowrl.atomic import write_file

# -ffast-math lets the reductions and expf vectorise; it is given to the compile step
# only: linked with it, gcc adds crtfastmath.o, whose constructor turns on flush-to-zero
# and denormals-are-zero for the whole process at load time.
COMPILE = ("-O3", "-march=native", "-ffast-math", "-fopenmp", "-fPIC", "-c")
LINK = ("-shared", "-fopenmp")


class NativeUnavailable(RuntimeError):
    """A kernel could not be built or loaded here (no compiler, no OpenMP, ...)."""


def build(sources: Sequence[str], label: str, flags: Sequence[str] = ()) -> ctypes.CDLL:
    """`csrc/<name>.c` for each name in `sources`, each compiled with `flags` after
    `COMPILE` (`-DNAME=value`, or `-mno-avx512f` to build a narrower path) and linked into
    one library (a kernel calls another's functions), cached as `<label>_<key>.so` and
    loaded (NativeUnavailable if any step fails)."""
    csrc = resources.files("shadowrl.inference").joinpath("csrc")
    texts = {f"{name}.c": csrc.joinpath(f"{name}.c").read_text() for name in sources}
    headers = {p.name: p.read_text() for p in csrc.iterdir() if p.name.endswith(".h")}
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise NativeUnavailable("no C compiler (set CC or install gcc)")
    compile_flags = [*COMPILE, *flags]
    parts = [*texts.values(), *headers.values(), compiler, *compile_flags, *LINK, _cpu_id()]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    target = _cache_dir() / f"{label}_{key[:16]}.so"
    if not target.exists():
        _compile(compiler, texts, headers, compile_flags, target)
    try:
        return ctypes.CDLL(str(target))
    except OSError as e:
        raise NativeUnavailable(f"cannot load {target}: {e}") from e


def _cpu_id() -> str:
    """What `-march=native` compiles for: the CPU's model and flags."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        import platform

        return platform.machine() + platform.processor()
    keep = ("model name", "flags")
    lines = {line.split(":")[0].strip(): line for line in info.splitlines() if ":" in line}
    return "\n".join(lines.get(k, "") for k in keep)


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "shadowrl/kernels"


def _compile(
    compiler: str, texts: dict[str, str], headers: dict[str, str], flags: list[str], target: Path
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        objects, lib = [], Path(tmp) / "kernel.so"
        for name, text in headers.items():  # #include "kernels.h" finds them beside a source
            (Path(tmp) / name).write_text(text)
        for name, text in texts.items():
            src = Path(tmp) / name
            obj = src.with_suffix(".o")
            src.write_text(text)
            _run([compiler, *flags, str(src), "-o", str(obj)])
            objects.append(str(obj))
        _run([compiler, *LINK, *objects, "-o", str(lib), "-lm"])
        write_file(target, lib.read_bytes())  # concurrent builders each install a whole file


def _run(cmd: list[str]) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NativeUnavailable(f"{' '.join(cmd)}: {e}") from e
    if done.returncode != 0:
        raise NativeUnavailable(f"{' '.join(cmd)} failed:\n{done.stderr.strip()[-2000:]}")
