"""Recorded tool outputs, replayed: a continuation that must match its original.

Real tool output carries timings ("Ran 1 test in 0.003s"), so re-running a recorded
episode's tail would drift from the record at the first test run. `RecordedOutputs`
still executes every call (the workspace changes as it did, `submit` still ends the
episode) but answers with the output recorded under the same call id and tool name;
a call the record does not have (the continuation diverged) gets its real output.
"""

from __future__ import annotations

from collections.abc import Sequence

from shadowrl.agent.tools import ToolContext, ToolSet
from shadowrl.types import Step, ToolCall, ToolResult


class RecordedOutputs(ToolSet):
    """`tools`, answering each call with the result `steps` recorded for it."""

    def __init__(self, tools: ToolSet, steps: Sequence[Step]):
        super().__init__(tools.tools.values())
        self.recorded = {r.call_id: r for s in steps for r in s.results}

    def execute(self, ctx: ToolContext, call: ToolCall) -> ToolResult:
        result = super().execute(ctx, call)
        recorded = self.recorded.get(call.id)
        return recorded if recorded is not None and recorded.name == call.name else result
