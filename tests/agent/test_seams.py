"""Optional capabilities stay out of the loop's code paths when they are off: an episode
run with `agent.summary` off never imports self-summarisation's module (checked in a
fresh interpreter, where nothing else has imported it yet)."""

from __future__ import annotations

import json
import subprocess
import sys

from shadowrl.agent.compaction import NoCompaction
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.summary import summary_info

EPISODE = """
import asyncio, json, sys
from shadowrl.agent.config import AgentConfig
from shadowrl.agent.loop import run_episode
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.models import load_tokenizer
from shadowrl.sandbox import create_sandbox
import shadowrl, pathlib

config = AgentConfig.model_validate(json.loads(sys.argv[1]))
repo = pathlib.Path(shadowrl.__file__).parent / "data" / "demo" / "repo"
tokenizer = load_tokenizer("smollm2")
reply = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
sb = create_sandbox(repo, backend="local")
try:
    traj = asyncio.run(run_episode(
        ScriptedPolicy(tokenizer, [reply]), sb, "fix it", tokenizer=tokenizer, config=config
    ))
finally:
    sb.close()
loaded = sorted(m for m in sys.modules if m.startswith("shadowrl."))
print(json.dumps({"end": traj.end, "modules": loaded}))
"""


def run_fresh(config: AgentConfig) -> dict[str, object]:
    """One submitted episode in a fresh interpreter: its end and the modules it loaded."""
    out = subprocess.run(
        [sys.executable, "-c", EPISODE, config.model_dump_json()],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1])


def test_summaries_off_never_import_the_summary_module() -> None:
    off = run_fresh(AgentConfig())
    assert off["end"] == "submitted"
    assert "shadowrl.agent.summary" not in off["modules"]
    assert "shadowrl.agent.loop" in off["modules"]  # the probe saw the loop's imports
    on = AgentConfig.model_validate({"summary": {"enabled": True, "trigger_tokens": 3000}})
    assert "shadowrl.agent.summary" in run_fresh(on)["modules"]


def test_the_absent_compaction_reports_what_an_unsummarised_episode_did() -> None:
    assert NoCompaction().info(None) == summary_info([])  # type: ignore[arg-type]
