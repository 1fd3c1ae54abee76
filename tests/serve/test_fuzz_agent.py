"""Fuzz the agent-session routes from the OpenAPI schema, as `test_fuzz.py` does the rest.

The server has the agent API on (a workspaces root holding the demo repo) and a
scripted policy that submits at once, so a request that does start a session (say the
workspace "demo" or ".") costs one short episode in a local sandbox. Every response
must be no 5xx, of a documented status and content type, and match its schema.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.episode import EpisodeSpec
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve import AgentSettings
from shadowrl.serve.app import create_app
from shadowrl.serve.threaded import serve_in_thread

SUBMIT = '<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>'
OPERATIONS = [
    ("POST", "/v1/agent/sessions"),
    ("GET", "/v1/agent/sessions/{session_id}"),
    ("GET", "/v1/agent/sessions/{session_id}/events"),
    ("POST", "/v1/agent/sessions/{session_id}/messages"),
    ("POST", "/v1/agent/sessions/{session_id}/cancel"),
    ("POST", "/v1/agent/sessions/{session_id}/apply"),
]


@pytest.fixture(scope="module")
def agent_schema(tokenizer: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("fuzz-root")
    shutil.copytree(Path(shadowrl.__file__).parent / "data" / "demo" / "repo", root / "demo")
    spec = EpisodeSpec(agent=AgentConfig(max_turns=2), sandbox=SandboxConfig(backend="local"))
    app = create_app(
        ScriptedPolicy(tokenizer, lambda _: SUBMIT), tokenizer, "tiny-fuzz",
        max_context_tokens=4096, agent=AgentSettings(root, spec, max_sessions=2),
    )  # fmt: skip
    with serve_in_thread(app) as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def test_the_schema_lists_the_agent_routes(agent_schema: Any) -> None:
    listed = {(r.ok().method.upper(), r.ok().path) for r in agent_schema.get_all_operations()}
    assert set(OPERATIONS) <= listed


@pytest.mark.parametrize(
    ("method", "path", "mode"),
    [
        (m, p, mode)
        for m, p in OPERATIONS
        for mode in GenerationMode
        if mode == GenerationMode.POSITIVE or not p.endswith(("/cancel", "/apply"))
    ],  # a path-only route has nothing to negate: any string is a (404) session id
)
def test_agent_responses_are_documented_and_no_5xx(
    agent_schema: Any, method: str, path: str, mode: GenerationMode
) -> None:
    operation = agent_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=5,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(case: Any) -> None:
        case.call_and_validate(excluded_checks=[positive_data_acceptance], timeout=30)

    check()
