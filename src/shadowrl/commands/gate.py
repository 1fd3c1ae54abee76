"""`shadowrl gate`: promote or reject a candidate's eval against the incumbent's.

    shadowrl gate --candidate runs/eval/ckpt-40/eval.json --incumbent runs/eval/prod/eval.json

The rule is the real-time loop's (`eval/gate.decide`): the paired test, the rate alarms
and the power check, with the loop's settings (`eval.margin`, `eval.alpha`, `eval.test`,
`realtime.require_power`, `realtime.power`, `realtime.max_*_increase`,
`realtime.alarm_alpha`). Two eval files carry no training run, so the divergence alarm
and those the configured components add (`rl/contributions.py`: the MTP heads'
acceptance) are not applied, and the output says so.

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
    from shadowrl.eval import EvalResult
    from shadowrl.eval.gate import PinMismatch, decide
    from shadowrl.rl import build_step_checks

    try:
        candidate, incumbent = EvalResult.load(args.candidate), EvalResult.load(args.incumbent)
    except FileNotFoundError as e:
        raise UsageError(f"no eval result at {e.filename or e}") from e
    components = build_step_checks(config.train, config.realtime)
    try:
        v = decide(
            candidate,
            incumbent,
            margin=config.eval.margin if args.margin is None else args.margin,
            alpha=args.alpha or config.eval.alpha,
            checks=config.realtime.gate_checks(tuple(c.alarm for c in components)),
            training=None,
            test=args.test or config.eval.test,
            resamples=config.eval.resamples,
            seed=config.seed,
        )
    except PinMismatch as e:
        print(f"refused: {e}")
        return 2
    d = v.paired
    assert d is not None
    print(f"candidate {candidate.pins.policy}: mean pass rate {d.candidate_rate:.1%}")
    print(f"incumbent {incumbent.pins.policy}: mean pass rate {d.incumbent_rate:.1%}")
    print(
        f"Δ = {d.delta.mean:+.3f} (paired bootstrap {1 - 2 * d.alpha:.0%} CI "
        f"[{d.delta.low:+.3f}, {d.delta.high:+.3f}]); sign test: {d.sign.worse} worse, "
        f"{d.sign.better} better, p(worse) = {d.sign.p_worse:.3g}"
    )
    mde = v.min_detectable_drop
    print(
        "power: smallest detectable drop "
        + ("none (not even a collapse to 0)" if mde is None else f"{mde:.3f}")
        + f" against margin {d.margin} (realtime.require_power: "
        f"{config.realtime.require_power})"
    )
    for t in v.rates.values():
        print(f"alarm test {t.name}: {t.candidate} vs {t.incumbent}, p = {t.p:.3g}")
    print(f"not applied (they need the training run): {', '.join(v.unchecked)}")
    print(v.reason)
    return 0 if v.promote else 1
