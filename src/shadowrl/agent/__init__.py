"""The agent harness: one episode is `run_episode` (loop.py) over a `ToolSet` in a sandbox.

Other packages import from here, never from its modules, except the optional
self-summarisation capability (`agent.summary`, its own entry), which nothing imports
while it is off.
"""

from shadowrl.agent.loop import CUT_OFF, NUDGE, feedback_messages, run_episode
from shadowrl.agent.parsing import ParsedReply, parse_tool_calls
from shadowrl.agent.policies import ScriptedPolicy
from shadowrl.agent.prompt import Renderer, format_tool_calls, render_prompt
from shadowrl.agent.state import Chain, Checkpoints, EpisodeCheckpoint, EpisodeState, Tokens
from shadowrl.agent.tools import ToolContext, ToolSet

__all__ = [
    "CUT_OFF",
    "NUDGE",
    "Chain",
    "Checkpoints",
    "EpisodeCheckpoint",
    "EpisodeState",
    "ParsedReply",
    "Renderer",
    "ScriptedPolicy",
    "Tokens",
    "ToolContext",
    "ToolSet",
    "feedback_messages",
    "format_tool_calls",
    "parse_tool_calls",
    "render_prompt",
    "run_episode",
]
