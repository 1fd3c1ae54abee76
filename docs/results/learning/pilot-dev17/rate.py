"""Dev pilot 17's readout (plan.md, 08:15 UTC addendum): groups with an advantage trained an
hour, by pilot 16's measure (`../pilot-dev16/rate.py`), for pilot 16 and this run.

    python docs/results/learning/pilot-dev17/rate.py [metrics.jsonl of pilot 17]

The rule: pilot 17 / pilot 16 >= 1.5.
"""

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def pilot16_rate():
    """`rate` from pilot 16's readout, loaded by path (the results folders are not a package)."""
    spec = importlib.util.spec_from_file_location("rate16", HERE.parent / "pilot-dev16/rate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.rate


if __name__ == "__main__":
    rate = pilot16_rate()
    mine = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "rl_metrics.jsonl"
    a, b = rate(mine), rate(HERE.parent / "pilot-dev16/rl_metrics.jsonl")
    print(f"pilot 16 (6 in flight, staleness 2): {b}")
    print(f"pilot 17 (16 in flight, staleness 4): {a}")
    print(f"pilot 17 / pilot 16 groups an hour: {a['groups_per_hour'] / b['groups_per_hour']:.2f}")
