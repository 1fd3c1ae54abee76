"""A mini-swe-agent environment whose shell commands run in a shadowrl `Sandbox`.

mini-swe-agent (PyPI `mini-swe-agent`) talks to `shadowrl serve` as to any
OpenAI-compatible endpoint, through litellm; this class is the other half, so its
commands never run on the host: each `bash` action is one `Sandbox.exec` in the
sandbox's workspace (namespaces + overlayfs where the machine allows it). It keeps
mini-swe-agent's protocol: `execute(action) -> {"output", "returncode",
"exception_info"}`, and `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` as the first
output line ends the run (its `Submitted`). mini-swe-agent is imported only when a
run submits, so importing this module needs nothing beyond shadowrl.

    env = SandboxEnvironment(create_sandbox(workspace))
    agent = DefaultAgent(LitellmModel(model_name="openai/<served name>",
                                      model_kwargs={"api_base": url + "/v1", ...}), env, ...)
"""

from __future__ import annotations

import platform
from typing import Any

from shadowrl.sandbox import Sandbox

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class SandboxEnvironment:
    """mini-swe-agent's `Environment` protocol over a shadowrl sandbox (see module doc)."""

    def __init__(self, sandbox: Sandbox, timeout: float = 30.0) -> None:
        self.sandbox, self.timeout = sandbox, timeout
        self.commands: list[str] = []  # what ran, in order

    def execute(
        self, action: dict[str, Any], cwd: str = "", *, timeout: float | None = None
    ) -> dict[str, Any]:
        command = str(action.get("command", ""))
        if cwd:  # the sandbox runs in its workspace root; a cwd is relative to it
            command = f"cd {cwd!r} && {command}"
        self.commands.append(command)
        result = self.sandbox.exec(command, timeout=timeout or self.timeout)
        output = {
            "output": result.stdout + result.stderr,
            "returncode": result.exit_code,
            "exception_info": "command timed out" if result.timed_out else "",
        }
        self._check_finished(output)
        return output

    def _check_finished(self, output: dict[str, Any]) -> None:
        lines = output["output"].lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT and output["returncode"] == 0:
            from minisweagent.exceptions import Submitted

            submission = "".join(lines[1:])
            extra = {"exit_status": "Submitted", "submission": submission}
            raise Submitted({"role": "exit", "content": submission, "extra": extra})

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**platform.uname()._asdict(), "cwd": "/workspace", **kwargs}

    def serialize(self) -> dict[str, Any]:
        kind = f"{type(self).__module__}.{type(self).__name__}"
        config = {"backend": self.sandbox.backend, "timeout": self.timeout}
        return {"info": {"config": {"environment": config, "environment_type": kind}}}
