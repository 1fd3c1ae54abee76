"""Where draft heads live, for code that must not import them: their tensors' names in an
engine and in a published weight state, and their file in a checkpoint directory. A
leaf module, so the speculation seam and the heads' own module (`mtp.py`) share it.
"""

from __future__ import annotations

from pathlib import Path

DRAFTS = "mtp."  # MTP's heads are the one drafter with tensors (`mtp.py`)
HEADS_FILE = "mtp.safetensors"


def heads_beside(checkpoint: str | Path | None) -> bool:
    """Whether a checkpoint directory holds draft heads (a file test: nothing imported)."""
    return checkpoint is not None and (Path(checkpoint) / HEADS_FILE).is_file()
