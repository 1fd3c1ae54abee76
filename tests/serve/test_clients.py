"""Real clients against a real server: mini-swe-agent (litellm, its commands in our
sandbox) and the `openai` client; their sessions land in the store token-exact."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from serve_fakes import MODEL

import shadowrl
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.sandbox import create_sandbox
from shadowrl.sandbox.overlay import unavailable_reason
from shadowrl.serve.mini_swe_env import SandboxEnvironment
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.export import training_rows
from shadowrl.serve.store.queries import SessionView, get_session, list_sessions

DEMO_REPO = Path(shadowrl.__file__).parent / "data" / "demo" / "repo"
FIX = "sed -i 's/    n = len(values)/    values = sorted(values)\\n    n = len(values)/' stats.py"
COMMANDS = [
    "head -3 stats.py",
    FIX,
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && grep -c sorted stats.py",
]


def bash(prompt: str) -> str:
    """The scripted model: the next command, by how many assistant turns the prompt holds."""
    command = COMMANDS[prompt.count("<|im_start|>assistant") - 1]
    call = json.dumps({"name": "bash", "arguments": {"command": command}})
    return f"Next step.\n<tool_call>\n{call}\n</tool_call>"


def only_session(store: TraceStore) -> SessionView:
    (summary,) = list_sessions(store.engine)
    view = get_session(store.engine, summary.id)
    assert view is not None
    return view


def assert_one_exact_branch(view: SessionView, turns: int) -> None:
    """Every turn token-exact, each prompt extending the last turn's ids: one segment."""
    reqs = view.requests
    assert len(reqs) == turns and all(r.token_exact for r in reqs)
    for before, after in itertools.pairwise(reqs):
        assert after.parent_id == before.id
        so_far = (*before.prompt_ids, *before.generated_ids)
        assert after.prompt_ids[: len(so_far)] == so_far  # token-in/token-out
    (row,) = training_rows(view)
    assert row["token_exact"] and len(row["segments"]) == 1
    assert sum(row["segments"][0]["loss_mask"]) == sum(len(r.generated_ids) for r in reqs)


def test_mini_swe_agent_runs_in_our_sandbox_and_is_recorded(
    serve: Any, tokenizer: Any, sqlite_trace_store: TraceStore
) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.models.litellm_model import LitellmModel

    policy = ScriptedPolicy(tokenizer, bash)
    _, url = serve(policy, traces=sqlite_trace_store.writer)
    model = LitellmModel(
        model_name=f"openai/{MODEL}",
        model_kwargs={"api_base": f"{url}/v1", "api_key": "unused", "temperature": 0.0},
        cost_tracking="ignore_errors",
    )
    sandbox = create_sandbox(DEMO_REPO)  # overlay where the machine allows it
    if unavailable_reason() is None:
        assert sandbox.backend == "overlay"
    try:
        env = SandboxEnvironment(sandbox)
        agent = DefaultAgent(
            model,
            env,
            system_template="You are a helpful assistant that can interact with a computer.",
            instance_template="Please solve this issue: {{task}}",
            step_limit=len(COMMANDS),
            cost_limit=0.0,
        )
        result = agent.run("median() is wrong on unsorted input.")
        assert result["exit_status"] == "Submitted" and result["submission"].strip() == "1"
        assert env.commands == COMMANDS
        assert "values = sorted(values)" in sandbox.read_file("stats.py").decode()
    finally:
        sandbox.close()
    assert "sorted" not in (DEMO_REPO / "stats.py").read_text(), "nothing ran on the host copy"
    view = only_session(sqlite_trace_store)
    assert_one_exact_branch(view, len(COMMANDS))
    for r, command in zip(view.requests, COMMANDS, strict=True):
        assert r.row.tool_calls[0]["function"]["name"] == "bash"  # type: ignore[index]
        assert json.loads(r.row.tool_calls[0]["function"]["arguments"]) == {"command": command}  # type: ignore[index]
        want = tokenizer.encode(bash("<|im_start|>assistant" * (COMMANDS.index(command) + 1)))
        assert list(r.generated_ids[: len(want)]) == want


def test_openai_client_conversation_on_the_engine_is_one_exact_segment(
    serve: Any, engine: Any, sqlite_trace_store: TraceStore
) -> None:
    client, _ = serve(engine, traces=sqlite_trace_store.writer)
    messages: list[Any] = []
    for question in ["Hi there.", "What is 2 + 2?", "And 3 + 3?"]:
        messages.append({"role": "user", "content": question})
        r = client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=8, temperature=0.0
        )
        messages.append({"role": "assistant", "content": r.choices[0].message.content})
    view = only_session(sqlite_trace_store)
    assert_one_exact_branch(view, 3)
    assert view.requests[-1].generated_ids[: len(r.choices[0].model_extra["token_ids"])] == tuple(
        r.choices[0].model_extra["token_ids"]  # type: ignore[index]
    )


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
