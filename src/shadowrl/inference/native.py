"""CPU decode attention as a small C kernel (`csrc/decode_attention.c`), built on first use.

A CPU decode step attends each row over its own length (`forward.Decoder.decode`). With
PyTorch's SDPA that is one call per row and layer, and on a 2-core box those calls read
the KV cache at a third of the memory bandwidth in fp32 (a fifth in bf16): at 32 rows of
~900 tokens they were ~60 % of the step. The kernel does all rows of a layer in one call,
each (row, kv head) reading its keys and values once, on torch's own OpenMP threads.

`engine.cpu_attention` picks the implementation: 'native' builds the kernel with the C
compiler (`$CC`, else `cc`; `-march=native`, so one build per CPU, cached under
`~/.cache/shadowrl/kernels`) and fails if it cannot; 'torch' keeps SDPA; 'auto' tries
the kernel and falls back to SDPA with a warning. Results match SDPA to float tolerance
(the kernel's exp and summation order differ), not bit for bit.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import Tensor

from shadowrl.atomic import write_file

log = logging.getLogger(__name__)

# -ffast-math lets the reductions and expf vectorise; it is given to the compile step
# only: linked with it, gcc adds crtfastmath.o, whose constructor turns on flush-to-zero
# and denormals-are-zero for the whole process at load time.
COMPILE = ("-O3", "-march=native", "-ffast-math", "-fopenmp", "-fPIC", "-c")
LINK = ("-shared", "-fopenmp")
KV_DTYPES = {torch.float32: 0, torch.bfloat16: 1}
MAX_GROUP = 16  # the kernel's MAX_GROUP


# With SDPA, a decode step attends row by row from this span: below it one masked call over
# the shared span was the cheaper (32 rows of 300-1,300 tokens: 7.6 vs 3.7 ms a layer, one
# thread; at 20-100 tokens 0.53 vs 0.72 ms). The kernel is the cheaper at every span.
PER_ROW_SPAN = 256


class NativeUnavailable(RuntimeError):
    """The kernel could not be built or loaded here (no compiler, no OpenMP, ...)."""


class RowAttention(Protocol):
    """Decode attention of queries [rows, kv_heads, group, D] over each row's own (keys,
    values) [1, kv_heads, n_i, D] (`KVCache.read_rows`); a CPU decode step uses it at
    spans from `min_span` and one masked SDPA call below."""

    min_span: int

    def __call__(self, q: Tensor, rows: list[tuple[Tensor, Tensor]]) -> Tensor: ...


class SdpaRows:
    """`RowAttention` with PyTorch's SDPA, one call per row, no mask."""

    min_span = PER_ROW_SPAN

    def __call__(self, q: Tensor, rows: list[tuple[Tensor, Tensor]]) -> Tensor:
        return torch.cat([
            F.scaled_dot_product_attention(q[i : i + 1], keys, values)
            for i, (keys, values) in enumerate(rows)
        ])  # fmt: skip


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


@functools.cache
def load(head_dim: int) -> ctypes.CDLL:
    """The kernel for `head_dim`, compiled once per CPU and source (NativeUnavailable if not)."""
    source = resources.files("shadowrl.inference").joinpath("csrc/decode_attention.c").read_text()
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise NativeUnavailable("no C compiler (set CC or install gcc)")
    flags = [*COMPILE, f"-DHEAD_DIM={head_dim}"]
    parts = [source, compiler, *flags, *LINK, _cpu_id()]
    key = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    target = _cache_dir() / f"decode_attention_d{head_dim}_{key[:16]}.so"
    if not target.exists():
        _compile(compiler, source, flags, target)
    try:
        lib = ctypes.CDLL(str(target))  # after torch: its libgomp serves the kernel's OpenMP
    except OSError as e:
        raise NativeUnavailable(f"cannot load {target}: {e}") from e
    fn = lib.decode_attention
    ptr, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    fn.argtypes = [ptr] * 6 + [i64, ptr, i32, i32, i32, ctypes.c_float, i32, i32]
    fn.restype = i32
    return lib


def _compile(compiler: str, source: str, flags: list[str], target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, obj, lib = (Path(tmp) / f"decode_attention{ext}" for ext in (".c", ".o", ".so"))
        src.write_text(source)
        for cmd in (
            [compiler, *flags, str(src), "-o", str(obj)],
            [compiler, *LINK, str(obj), "-o", str(lib), "-lm"],
        ):
            _run(cmd)
        write_file(target, lib.read_bytes())  # concurrent builders each install a whole file


def _run(cmd: list[str]) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NativeUnavailable(f"{' '.join(cmd)}: {e}") from e
    if done.returncode != 0:
        raise NativeUnavailable(f"{' '.join(cmd)} failed:\n{done.stderr.strip()[-2000:]}")


class NativeRows:
    """`RowAttention` through the C kernel; rows it cannot take (a KV dtype other than
    fp32/bf16, a query group above 16) go to SDPA."""

    min_span = 0

    def __init__(self, head_dim: int) -> None:
        self.kernel = load(head_dim).decode_attention
        self.head_dim = head_dim

    def __call__(self, q: Tensor, rows: list[tuple[Tensor, Tensor]]) -> Tensor:
        b, kv_heads, group, d = q.shape
        keys0 = rows[0][0]
        bf16 = KV_DTYPES.get(keys0.dtype)
        pos = keys0.stride(2)
        if bf16 is None or group > MAX_GROUP or d != self.head_dim or not _plain(rows, pos):
            return SdpaRows()(q, rows)
        queries = q.float().contiguous()
        out = torch.empty_like(queries)
        words = ctypes.c_int64 * b
        failed = self.kernel(
            queries.data_ptr(), out.data_ptr(),
            words(*[k.data_ptr() for k, _ in rows]), words(*[v.data_ptr() for _, v in rows]),
            words(*[k.stride(1) for k, _ in rows]), words(*[v.stride(1) for _, v in rows]),
            pos, (ctypes.c_int32 * b)(*[k.shape[2] for k, _ in rows]),
            b, kv_heads, group, d**-0.5, bf16, torch.get_num_threads(),
        )  # fmt: skip
        if failed:
            raise RuntimeError("decode_attention kernel: out of memory or an empty row")
        return out.to(q.dtype)


def _plain(rows: list[tuple[Tensor, Tensor]], pos: int) -> bool:
    """Every row's keys and values step `pos` elements a position, elements adjacent."""
    return all(
        k.stride(2) == pos == v.stride(2) and k.stride(3) == 1 == v.stride(3)
        and k.dtype == v.dtype == rows[0][0].dtype
        for k, v in rows
    )  # fmt: skip


def row_attention(mode: str, head_dim: int, device: torch.device) -> RowAttention:
    """The row attention `engine.cpu_attention` names (`mode`), for a CPU decoder."""
    if mode == "torch" or device.type != "cpu":
        return SdpaRows()
    try:
        return NativeRows(head_dim)
    except NativeUnavailable as e:
        if mode == "native":
            raise
        log.warning("engine.cpu_attention 'auto': falling back to SDPA row by row (%s)", e)
        return SdpaRows()
