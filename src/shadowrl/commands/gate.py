"""`shadowrl gate`: promote or reject a candidate's eval against the incumbent's.

    shadowrl gate --candidate runs/eval/ckpt-40/eval.json --incumbent runs/eval/prod/eval.json

Exits 0 to promote, 1 to reject, 2 when the results are not comparable (or on a
usage mistake, e.g. a missing file).
"""

from __future__ import annotations

import argparse

from shadowrl.commands.config import Config
from shadowrl.commands.errors import UsageError


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--candidate", required=True, help="eval.json of the candidate (or its directory)"
    )
    p.add_argument(
        "--incumbent", required=True, help="eval.json of the deployed policy (or its directory)"
    )
    p.add_argument("--margin", type=float, help="tolerated pass-rate drop (default: eval.margin)")
    p.add_argument("--alpha", type=float, help="significance level (default: eval.alpha)")
    p.add_argument("--test", choices=["bootstrap", "sign"], help="paired test (default: eval.test)")


def run(args: argparse.Namespace, config: Config) -> int:
    from shadowrl.eval.gate import PinMismatch, gate
    from shadowrl.eval.result import EvalResult

    try:
        candidate, incumbent = EvalResult.load(args.candidate), EvalResult.load(args.incumbent)
    except FileNotFoundError as e:
        raise UsageError(f"no eval result at {e.filename or e}") from e
    try:
        d = gate(
            candidate,
            incumbent,
            margin=config.eval.margin if args.margin is None else args.margin,
            alpha=args.alpha or config.eval.alpha,
            test=args.test or config.eval.test,
            resamples=config.eval.resamples,
            seed=config.seed,
        )
    except PinMismatch as e:
        print(f"refused: {e}")
        return 2
    print(f"candidate {candidate.pins.policy}: mean pass rate {d.candidate_rate:.1%}")
    print(f"incumbent {incumbent.pins.policy}: mean pass rate {d.incumbent_rate:.1%}")
    print(
        f"Δ = {d.delta.mean:+.3f} (paired bootstrap {1 - 2 * d.alpha:.0%} CI "
        f"[{d.delta.low:+.3f}, {d.delta.high:+.3f}]); sign test: {d.sign.worse} worse, "
        f"{d.sign.better} better, p(worse) = {d.sign.p_worse:.3g}"
    )
    print(d.reason)
    return 0 if d.promote else 1
