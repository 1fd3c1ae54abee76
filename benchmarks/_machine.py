"""What every benchmark result records about where it ran (imported by the scripts here)."""

from __future__ import annotations

import importlib
import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def machine(*packages: str) -> dict[str, Any]:
    """Platform, CPU, load, Python, git commit and the versions of `packages` (torch always)."""
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    versions = {p: importlib.import_module(p).__version__ for p in ("torch", *packages)}
    return {
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "python": platform.python_version(),
        **versions,
        "git_commit": commit,
    }
