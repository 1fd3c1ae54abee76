"""MTP heads on Ray as in one process: the trainer actor re-distils them and every engine
actor serves them, synced with the policy through the weight store."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

from shadowrl.episode import EpisodeSpec
from shadowrl.inference.config import SpeculativeConfig
from shadowrl.inference.mtp import PREFIX, for_model
from shadowrl.models import tiny_model
from shadowrl.rl.cluster.backend import ray_services
from shadowrl.rl.companion import build_companion
from shadowrl.rl.config import TrainConfig
from shadowrl.rl.mtp_config import RLDistillConfig
from shadowrl.rl.run import local_services
from shadowrl.rl.weights import WeightStore

from .test_ray_backend import (  # its autouse check too: every node on loopback
    ENGINE,
    TRAIN,
    _node_addresses_are_loopback,  # noqa: F401
    ray_config,
    recorded_groups,
)

K = 3


def _served(engine) -> dict[str, torch.Tensor]:
    """The heads an engine speculates with: in this process, or the first engine actor's."""
    if hasattr(engine, "engines"):  # the Ray backend's EngineGroup
        import ray

        return ray.get(engine.engines[0].draft_heads.remote())
    spec = engine.speculator
    return {} if spec is None else dict(spec.heads.state_dict())


@pytest.mark.slow
def test_ray_engines_serve_the_trainers_mtp_heads_as_local_ones_do(ray_cluster, tmp_path: Path):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model, tok = tiny_model(seed=3)
    heads = for_model(model, K, vocab=512)
    train = TrainConfig.model_validate({**TRAIN, "mtp": RLDistillConfig(every=1, steps=2)})
    engine = ENGINE.model_copy(update={"speculative": SpeculativeConfig(k=K, auto=False)})
    fresh = {k: v.clone() for k, v in heads.state_dict().items()}
    kw = dict(train=train, engine_config=engine, spec=EpisodeSpec(), seed=0)
    backends = {  # each its own copies: the trainer trains what it is given in place
        "local": lambda d: local_services(
            copy.deepcopy(model),
            tok,
            None,
            d,
            companion=build_companion(train, heads=copy.deepcopy(heads)),
            **kw,
        ),
        "ray": lambda d: ray_services(
            copy.deepcopy(model),
            tok,
            [],
            d,
            ray_config(ray_cluster),
            ckpt=None,
            companion=build_companion(train, heads=copy.deepcopy(heads)),
            **kw,
        ),
    }
    served = {}
    try:
        for name, services in backends.items():
            with services(tmp_path / name) as s:
                assert _served(s.engine).keys() == heads.state_dict().keys()  # from the start
                s.trainer.train_groups(recorded_groups(2, 2))  # re-distils the heads too
                version = s.trainer.version
                s.store.publish(s.trainer.state_dict(), version)
                s.engine.update_weights(s.store.fetch(version), version)
                served[name] = _served(s.engine)
            store = WeightStore(str(tmp_path / name / "weights")).fetch(version)
            published = {
                k.removeprefix(PREFIX): v for k, v in store.items() if k.startswith(PREFIX)
            }
            assert published.keys() == served[name].keys()
            assert all(torch.equal(served[name][k], published[k]) for k in published), name
    finally:
        torch.set_num_threads(threads)
    assert any(not torch.equal(served["ray"][k], fresh[k]) for k in fresh)  # trained
    diff = max((served["ray"][k] - served["local"][k]).abs().max().item() for k in fresh)
    assert diff <= 1e-6, f"ray and in-process heads differ by {diff}"
