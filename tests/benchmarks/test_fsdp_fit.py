"""benchmarks/fsdp_fit.py: its pure parts (parameter counts, the fit, the lower bound) and its smoke run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fit(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import fsdp_fit

    return fsdp_fit


def _shape(fsdp_fit: Any, model: dict[str, Any]) -> tuple[int, int]:
    return fsdp_fit.counts(**fsdp_fit._shape(model))


def test_counts_match_the_models_the_benchmark_builds(fit: Any) -> None:
    import fsdp_memory

    # TinyLlama's shape: 1,100,048,384 parameters, as transformers counts them
    assert _shape(fit, fsdp_memory.SIZES["1b"])[0] == fsdp_memory._params("1b") == 1100048384
    # Qwen2.5-7B's published size is 7.61B (with its q/k/v biases, which are not counted)
    assert fit.counts(*fit.SHAPES["Qwen2.5-7B"])[0] == pytest.approx(7.61e9, rel=0.005)


def test_the_fit_recovers_the_constants_it_was_built_from(fit: Any) -> None:
    """Peaks made from known constants (exact arithmetic): the fit gives them back."""
    import fsdp_memory

    c, c_f, a_r, s, t, a_l = 300 * fit.MB, 420 * fit.MB, 9.5, 8.0, 6.0, 2.5
    sizes = {}
    for name in ("20m", "200m", "1b"):
        model = fsdp_memory.SIZES[name]
        p, u = _shape(fit, model)
        state = {"state_mb": 0.75 * s * p / fit.MB, "grad_mb": 0.25 * s * p / fit.MB}
        sizes[name] = {
            "model": model,
            "params": p,
            "replicate": {"peak_mb": (c + a_r * p) / fit.MB, "ranks": [state]},
            "fsdp": {"peak_mb": (c_f + s * p / 2 + t * u) / fit.MB, "world_size": 2},
            "lora": {"peak_mb": (c + a_l * p) / fit.MB},
        }
    k = fit.fit({"sizes": sizes})
    want = {"c": c, "c_f": c_f, "a_r": a_r, "s": s, "t": t, "a_l": a_l}
    assert {n: k[n] for n in want} == pytest.approx(want, rel=1e-9)


def test_the_lower_bound_is_the_counted_states(
    fit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    fit.lower_bound("bfloat16")
    rows = {ln.split(" | ")[0].strip("| "): ln for ln in capsys.readouterr().out.splitlines()}
    p = fit.counts(*fit.SHAPES["Qwen2.5-32B"])[0]
    cells = rows["Qwen2.5-32B"].split(" | ")
    assert cells[2].startswith(f"≥ {8 * p / fit.GB:.1f} ")  # a replica: 8 B per parameter
    assert cells[3] == f"≥ {8 * p / 8 / fit.GB:.1f} (not on 24 GB)"  # sharded 8 ways


@pytest.mark.parametrize("args", [[], ["--lower-bound", "bfloat16"]])
def test_the_script_prints_a_row_for_every_shape(args: list[str], fit: Any) -> None:
    """The smoke run: the script itself, on the committed measurement (it writes no file)."""
    script = ROOT / "benchmarks" / "fsdp_fit.py"
    out = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| Qwen")]
    assert [r.split("|")[1].strip() for r in rows] == list(fit.SHAPES)
