"""The inference engine: continuous batching, paged KV, weight swaps, MTP drafts.

One place builds an engine: `build.py` (`build_engine`); the engine itself is
`engine.py`. Other packages import from here, never from its modules. Names are imported
on first use (`shadowrl.lazy`), so loading the config tree, which reads
`inference.config`, imports no torch.
"""

from typing import TYPE_CHECKING

from shadowrl.lazy import exports

if TYPE_CHECKING:
    from shadowrl.inference.build import build_engine as build_engine
    from shadowrl.inference.build import draft_heads as draft_heads
    from shadowrl.inference.drafts import DRAFTS as DRAFTS
    from shadowrl.inference.drafts import HEADS_FILE as HEADS_FILE
    from shadowrl.inference.drafts import heads_beside as heads_beside
    from shadowrl.inference.mtp import PREFIX as PREFIX
    from shadowrl.inference.mtp import MTPHeads as MTPHeads
    from shadowrl.inference.mtp import for_model as for_model
    from shadowrl.inference.mtp import frequency_vocab as frequency_vocab
    from shadowrl.inference.mtp import heads_path as heads_path
    from shadowrl.inference.mtp import load_heads as load_heads
    from shadowrl.inference.mtp import save_heads as save_heads
    from shadowrl.inference.precision import warn_emulated_bf16 as warn_emulated_bf16
    from shadowrl.inference.requests import TokenDelta as TokenDelta
    from shadowrl.inference.routing import RouteRecorder as RouteRecorder
    from shadowrl.inference.routing import flip_share as flip_share
    from shadowrl.inference.routing import replaying as replaying
    from shadowrl.inference.routing import routers as routers
    from shadowrl.inference.sampling import filter_top_k_top_p as filter_top_k_top_p
    from shadowrl.inference.speculation import EngineAcceptance as EngineAcceptance
    from shadowrl.inference.weights import apply_state as apply_state

_WHERE = {
    "build_engine": "build",
    "draft_heads": "build",
    "DRAFTS": "drafts",
    "HEADS_FILE": "drafts",
    "heads_beside": "drafts",
    "MTPHeads": "mtp",
    "PREFIX": "mtp",
    "for_model": "mtp",
    "frequency_vocab": "mtp",
    "heads_path": "mtp",
    "load_heads": "mtp",
    "save_heads": "mtp",
    "warn_emulated_bf16": "precision",
    "TokenDelta": "requests",
    "RouteRecorder": "routing",
    "flip_share": "routing",
    "replaying": "routing",
    "routers": "routing",
    "filter_top_k_top_p": "sampling",
    "EngineAcceptance": "speculation",
    "apply_state": "weights",
}
if not TYPE_CHECKING:
    __getattr__ = exports(__name__, _WHERE)
