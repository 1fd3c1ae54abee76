"""Evaluation: `evaluate` runs a policy on pinned tasks (runner.py), `eval.gate` decides
whether a candidate may replace the incumbent, `write_report` renders a run.

Other packages import from here, from the gate (`eval.gate`, the one decision rule) and
from the one statistics module (`eval.stats`), never from the other modules.
"""

from shadowrl.eval.ablation import compare
from shadowrl.eval.alarms import Alarm, RateTest
from shadowrl.eval.behaviour import EDIT_TOOLS, asks_instead_of_acting
from shadowrl.eval.pins import ConfigPins, config_pins, suite_hash
from shadowrl.eval.report import write_report
from shadowrl.eval.result import EvalResult, SampleResult
from shadowrl.eval.runner import Evaluate, evaluate

__all__ = [
    "EDIT_TOOLS",
    "Alarm",
    "ConfigPins",
    "EvalResult",
    "Evaluate",
    "RateTest",
    "SampleResult",
    "asks_instead_of_acting",
    "compare",
    "config_pins",
    "evaluate",
    "suite_hash",
    "write_report",
]
