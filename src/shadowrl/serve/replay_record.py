"""A served session of the trace store, as what `shadowrl replay` continues or checks.

The store keeps, per model turn, a token-exact request row (prompt ids, generated ids,
logprobs, policy versions, sampling; chained by `parent_id`) and, for agent sessions,
a step row (the turn's tool calls and results); the session row keeps the task, the
workspace label and the budgets. `agent_record` turns an agent session into an
`agent.record.Record`: its segments are the chain's tokens
(`store.export.branch_segments`), each step's text is its generated ids decoded, and
its messages are rebuilt the way the loop builds them (reply, results in call order,
a parse error or a nudge). The rebuild is checked: rendering the rebuilt messages
must give every next request's prompt token for token. A session with a follow-up
message or a summary fails that check (the store does not keep those messages): its
recorded tokens can still be teacher-forced, but the loop cannot continue it.

Chat and completions sessions have no loop to continue: `request_runs` gives each
request's generation for the teacher-forced check, with its own sampling settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import feedback_messages
from shadowrl.agent.parsing import parse_tool_calls
from shadowrl.agent.prompt import Renderer
from shadowrl.agent.record import Record
from shadowrl.agent.tools import ToolSet
from shadowrl.serve.store.export import branch_segments, branches
from shadowrl.serve.store.queries import RequestView, SessionView
from shadowrl.types import Message, Segment, Step, ToolCall, ToolResult, Trajectory


class NotReplayable(ValueError):
    """A session the store cannot give back as tokens (nothing recorded, torn history)."""


@dataclass(frozen=True)
class AgentRecord:
    """An agent session rebuilt: the record, and whether its messages re-render exactly."""

    record: Record
    chain: tuple[RequestView, ...]
    exact: bool  # rendering the rebuilt messages gives every recorded prompt
    exact_prefix: int  # how many leading requests' prompts the rebuilt messages give


def request_chain(view: SessionView) -> list[RequestView]:
    """The session's longest root-to-leaf chain of requests (an agent session has one)."""
    chains = branches(view.requests)
    if not chains:
        raise NotReplayable(
            f"session {view.session.id} holds no recorded tokens (no request was recorded in it; "
            "a private API key's traffic is never recorded)"
        )
    return max(chains, key=len)


def _calls(row: Any) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in row.tool_calls)


def agent_record(view: SessionView, tokenizer: Any, agent: AgentConfig) -> AgentRecord:
    """Session `view` (kind "agent") as a record `replay` can continue (see the docstring)."""
    s, chain = view.session, request_chain(view)
    steps_of = {st.request_id: st for st in view.steps}
    schemas = ToolSet.from_names(agent.tools).schemas()
    renderer = Renderer(tokenizer, schemas)
    messages = [Message("system", agent.system_prompt), Message("user", s.task or "")]
    exact = list(chain[0].prompt_ids) == renderer.prompt_ids(messages)
    exact_prefix = int(exact)
    steps: list[Step] = []
    for k, r in enumerate(chain):
        text = tokenizer.decode(r.generated_ids, skip_special_tokens=True)
        reply = parse_tool_calls(text, schemas, id_prefix=f"call_{k}")
        row = steps_of.get(r.id)
        calls = _calls(row) if row is not None else reply.calls
        results = tuple(ToolResult(**d) for d in row.results) if row is not None else ()
        steps.append(Step(text, calls, results, tuple(reply.errors), len(r.generated_ids)))
        conv = [*messages, Message("assistant", reply.content, calls)]
        feedback = feedback_messages(reply, results, cut_off=r.finish_reason == "length")
        if k + 1 < len(chain) and exact:
            more = renderer.continuation_ids(conv, feedback, r.generated_ids)
            exact = list(chain[k + 1].prompt_ids) == [*r.prompt_ids, *r.generated_ids, *more]
            exact_prefix += exact
        messages = [*conv, *feedback]
    traj = Trajectory(
        task_id=s.task_id or s.id, messages=tuple(messages), steps=tuple(steps),
        segments=tuple(branch_segments(chain)), end=s.info.get("end", "max_turns"),
        tool_errors=sum(len(st.parse_errors) for st in steps),
    )  # fmt: skip
    meta = {
        "source": "trace", "session": s.id, "workspace": s.workspace,
        "model": chain[0].row.model, "checkpoint": chain[0].checkpoint,
        "agent": agent.model_dump(mode="json"),
    }  # fmt: skip
    return AgentRecord(Record(traj, (), meta), tuple(chain), exact, exact_prefix)


def served_agent_config(view: SessionView, base: AgentConfig) -> AgentConfig:
    """The agent config a session was served with: `base`, with the session's budgets
    and its first request's sampling."""
    first = request_chain(view)[0].row
    recorded = {"temperature": first.temperature, "top_p": first.top_p}
    budgets = view.session.info.get("budgets", {})
    return AgentConfig.model_validate({**base.model_dump(), **budgets, **recorded})


def request_segment(r: RequestView) -> Segment:
    """One request as a segment: its prompt (context), then what it generated."""
    n, g = len(r.prompt_ids), len(r.generated_ids)
    return Segment(
        (*r.prompt_ids, *r.generated_ids), (False,) * n + (True,) * g,
        (0.0,) * n + tuple(r.logprobs), (-1,) * n + tuple(r.versions),
    )  # fmt: skip
