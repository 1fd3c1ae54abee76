"""Recorded agent sessions for the branching tests: the demo workspace served over HTTP by a
scripted policy (the local sandbox, a SQLite trace store), the scripts it follows and the
scripted policy that continues a branch point. The fixtures that serve it are in
`conftest.py`."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import httpx

import shadowrl
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.tools import ToolSet
from shadowrl.sandbox import SandboxConfig
from shadowrl.serve.store import TraceStore
from shadowrl.serve.store.queries import SessionView, get_session

DEMO = Path(shadowrl.__file__).parent / "data" / "demo" / "repo"
CACHE = Path(  # the task envs other suites build too: built once per machine
    os.environ.get("SHADOWRL_TEST_CACHE", Path(tempfile.gettempdir()) / "shadowrl-test-cache")
)
AGENT = AgentConfig(max_turns=6)
SCHEMAS = ToolSet.from_names(AGENT.tools).schemas()
SANDBOX = SandboxConfig(backend="local")
OLD, NEW = (
    "    n = len(values)\n    mid",
    "    values = sorted(values)\n    n = len(values)\n    mid",
)
# prints the (temporary) working directory and a duration: equal only after `normalise`
PROBE = (
    "python -c 'import os, time; t = time.time(); from stats import median; "
    'print(os.getcwd(), median([3, 1, 2]), f"{time.time() - t:.6f}s")\''
)


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


SCRIPTS = {
    "FIX": [  # read, probe, edit (turn 2), probe, submit
        call("read_file", path="stats.py"),
        call("run", command=PROBE),
        call("edit_file", path="stats.py", old=OLD, new=NEW),
        call("run", command=PROBE),
        call("submit"),
    ],
    "NOISY": [  # a step whose output is new on every run, then the edit (turn 1)
        call("run", command="python -c 'import os; print(os.urandom(8).hex())'"),
        call("edit_file", path="stats.py", old=OLD, new=NEW),
        call("submit"),
    ],
}


def scripted(prompt: str) -> str:
    script = SCRIPTS["NOISY" if "NOISY" in prompt else "FIX"]
    return script[prompt.count("<|im_start|>assistant") - 1]


@dataclasses.dataclass
class Served:
    url: str
    store: TraceStore
    root: Path
    keys: dict[str, str]  # name -> secret
    ids: dict[str, str]  # name -> key id

    def session(self, task: str, key: str = "alice", **body: Any) -> str:
        auth = {"Authorization": f"Bearer {self.keys[key]}"}
        with httpx.Client(base_url=self.url, timeout=60, headers=auth) as http:
            made = http.post("/v1/agent/sessions", json={"workspace": "demo", "task": task, **body})
            assert made.status_code == 201, made.text
            sid = made.json()["id"]
            with http.stream("GET", f"/v1/agent/sessions/{sid}/events") as r:
                list(r.iter_lines())
            assert http.get(f"/v1/agent/sessions/{sid}").json()["end"] == "submitted"
        return sid

    def feedback(self, key: str = "alice", **body: Any) -> int:
        auth = {"Authorization": f"Bearer {self.keys[key]}"}
        return httpx.post(f"{self.url}/v1/feedback", json=body, headers=auth).status_code

    def view(self, sid: str) -> SessionView:
        view = get_session(self.store.engine, sid)
        assert view is not None
        return view


class Continuations:
    """The current policy, scripted: at the branch turn the k-th continuation to ask
    gets `firsts[k]`; after an edit it submits."""

    def __init__(self, tokenizer: Any, firsts: list[str]) -> None:
        self.firsts = iter(firsts)
        self.policy = ScriptedPolicy(tokenizer, self.reply)

    def reply(self, prompt: str) -> str:
        turn = prompt.count("<|im_start|>assistant") - 1
        return next(self.firsts) if turn == 2 else call("submit")
