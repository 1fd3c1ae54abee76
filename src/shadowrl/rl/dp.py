"""Data-parallel training on N ranks (torch.distributed): `train.world_size`.

The process that builds the `Trainer` is rank 0; it starts ranks 1..N-1 (`Spawn`: local
processes here, Ray actors on the Ray backend, `rl/cluster/backend.py`), each of which
builds the same architecture from the model's config, takes rank 0's weights by
broadcast and then runs the very same `Trainer.step` on its share of every batch
(microbatches r, r+N, …). Gradients are summed across ranks: every microbatch's loss
is already divided by the batch-wide token budget, so the sum is the batch gradient,
as on one rank, and every rank clips with the same norm and takes the same AdamW
step. Replicas stay identical, so checkpoints are written by rank 0 alone. Rank 0
drives the others with commands broadcast over the same process group.

This file is the process group, the commands and the replicas' gradient all-reduce.
Whether the ranks hold replicas or FSDP shards is `train.parallel` (`parallel.py`,
`fsdp.py`); under FSDP, every rank also runs the "save" command (each writes its
shards). In both, the weight sync is split, in parallel and with no collective: a
replica writes the whole tensors it owns (`weight_codec.owners`), an FSDP rank the rows
of every tensor it holds (`held_rows`); rank 0 commits the version (`weights.py` says
why the two differ).

On CPU the group is gloo. On CUDA it is gloo for CPU tensors (commands, objects) and NCCL
for CUDA tensors (gradients, FSDP's gathers), and rank r uses GPU r of its machine. Not yet
run: the GPU script (`benchmarks/gpu/run_gpu.sh`, part `fsdp_memory`) takes one rank on one
GPU when a GPU is lent; several NCCL ranks need a machine with several GPUs.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, Protocol

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import Tensor
from torch.distributed.tensor import DTensor, Shard

from shadowrl.rl.config import TrainConfig
from shadowrl.rl.loss import LossStats
from shadowrl.rl.weights import Rows, WeightStore, owners

BUCKET = 16 << 20  # gradient elements per all-reduce: bounds the flat buffer's memory
TIMEOUT = timedelta(minutes=30)  # a collective waits this long for a rank that died


class Ranks:
    """One rank's view of the group: who it is and the collectives the trainer needs."""

    def __init__(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size

    def sync_params(self, model: Any) -> None:
        """Every rank takes rank 0's weights and buffers (as DDP does at construction)."""
        with torch.no_grad():
            for t in model.state_dict().values():
                dist.broadcast(t, src=0)

    def share(self, items: Sequence[Any]) -> list[Any]:
        """This rank's microbatches: every world_size-th, starting at its rank."""
        return list(items[self.rank :: self.world_size])

    def all_reduce_grads(self, params: Sequence[Tensor]) -> None:
        """Sum gradients over ranks; a parameter no rank touched keeps `grad=None`, as on
        one rank (AdamW skips it)."""
        has = torch.tensor([p.grad is not None for p in params], dtype=torch.int32)
        dist.all_reduce(has)
        live = [p for p, h in zip(params, has.tolist(), strict=True) if h]
        start = 0
        while start < len(live):
            bucket: list[Tensor] = []
            size = 0
            while start < len(live) and (not bucket or size + live[start].numel() <= BUCKET):
                bucket.append(live[start])
                size, start = size + live[start].numel(), start + 1
            flat = torch.cat([_grad(p).float().reshape(-1) for p in bucket])
            dist.all_reduce(flat)
            offset = 0
            for p in bucket:
                p.grad = flat[offset : offset + p.numel()].view_as(p).to(p.dtype).clone()
                offset += p.numel()

    def all_reduce_stats(self, stats: LossStats, loss: Tensor) -> tuple[LossStats, Tensor]:
        """Merge every rank's loss statistics, in rank order (metrics only)."""
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, (stats.cpu(), loss.cpu()))  # no CUDA tensor pickled
        total_stats, total_loss = LossStats.zero(), torch.zeros(())
        for s, lo in gathered:
            total_stats, total_loss = total_stats + s, total_loss + lo
        return total_stats, total_loss

    def receive(self) -> tuple[Any, ...]:
        msg: list[Any] = [None]
        dist.broadcast_object_list(msg, src=0)
        return tuple(msg[0])

    def gather(self, obj: Any) -> list[Any] | None:
        out: list[Any] | None = [None] * self.world_size if self.rank == 0 else None
        dist.gather_object(obj, out, dst=0)
        return out


def _grad(p: Tensor) -> Tensor:
    return p.grad if p.grad is not None else torch.zeros_like(p)


def owned(
    state: Mapping[str, Tensor], rank: int, world_size: int
) -> tuple[dict[str, Tensor], dict[str, Rows]]:
    """What `rank` publishes of `state` (`WeightStore.write_part`'s state and rows), with
    no collective: of a sharded tensor (a DTensor, `train.parallel: fsdp | hsdp`) the
    rows it holds (`held_rows`), of a plain one the whole tensor if `rank` owns it."""
    plain = {k: t for k, t in state.items() if not isinstance(t, DTensor)}
    owner = owners({k: t.numel() * t.element_size() for k, t in plain.items()}, world_size)
    out, rows = {}, {}
    for k, t in state.items():
        if isinstance(t, DTensor):
            out[k], rows[k] = held_rows(t)
        elif owner[k] == rank:
            out[k] = t
    return out, rows


def held_rows(t: DTensor) -> tuple[Tensor, Rows]:
    """The rows of dim 0 of `t` this rank publishes: its local shard (`Shard(0)` splits
    as torch.chunk does: ceil(rows / shards) each, the last shorter or empty), split
    again over the ranks holding the same shard (HSDP's replicas: `Replicate` mesh
    dims), so every row is written once and each rank writes ~1/world of the tensor."""
    mesh, coord = t.device_mesh, t.device_mesh.get_coordinate()
    assert coord is not None, "this rank is not in the tensor's mesh"
    start, stop, replica, replicas = 0, t.shape[0], 0, 1
    for dim, p in enumerate(t.placements):
        if isinstance(p, Shard) and p.dim == 0:
            start, stop = chunk_range(start, stop, mesh.size(dim), coord[dim])
        elif p.is_replicate():
            replica, replicas = replica * mesh.size(dim) + coord[dim], replicas * mesh.size(dim)
        else:
            raise ValueError(f"cannot publish a tensor placed {t.placements} by its rows")
    local = t.to_local()
    if local.shape[0] != stop - start:
        raise ValueError(f"a local shard of {local.shape[0]} rows is not rows {start}:{stop}")
    a, b = chunk_range(start, stop, replicas, replica)
    return local[a - start : b - start], Rows(a, b, tuple(t.shape))


def chunk_range(start: int, stop: int, n: int, i: int) -> tuple[int, int]:
    """The i-th of n torch.chunk-style pieces of the range [start, stop)."""
    size = -(-(stop - start) // n)
    first = min(start + i * size, stop)
    return first, min(first + size, stop)


class Spawn(Protocol):
    """Where ranks 1..N-1 run: each calls `follow(rank, *args)` until rank 0 says stop."""

    def host(self) -> str:
        """The address rank 0 listens on for the others to join the group."""
        ...

    def start(self, rank: int, args: tuple[Any, ...]) -> None: ...

    def join(self, timeout: float) -> None:
        """Wait up to `timeout` seconds for every started rank to return."""
        ...


class Processes:
    """Ranks 1..N-1 as processes spawned beside rank 0 (the in-process backend)."""

    def __init__(self) -> None:
        self.procs: list[Any] = []

    def host(self) -> str:
        return "127.0.0.1"

    def start(self, rank: int, args: tuple[Any, ...]) -> None:
        proc = mp.get_context("spawn").Process(target=follow, args=(rank, *args), daemon=True)
        proc.start()
        self.procs.append(proc)

    def join(self, timeout: float) -> None:
        for p in self.procs:
            p.join(timeout)


class Leader(Ranks):
    """Rank 0: starts the other ranks, sends them each command, gathers their parts."""

    def __init__(self, world_size: int, spawn: Spawn) -> None:
        super().__init__(0, world_size)
        self.spawn = spawn

    @classmethod
    def start(
        cls, model: Any, cfg: TrainConfig, objective: str, trainer_cls: type, seed: int = 0,
        peer: Any = None, spawn: Spawn | None = None,
    ) -> Leader:  # fmt: skip
        """Start ranks 1..N-1 (`spawn`, default local processes), each building
        `trainer_cls` (the `Trainer`, passed in rather than imported: it imports this module)
        over a copy of `model`'s architecture, with `peer` as its companion
        (`Companion.peer`: a sharded model's reads)."""
        if dist.is_initialized():
            raise RuntimeError("a rank group needs a process with no process group yet")
        spawn = spawn or Processes()
        host = spawn.host()
        port = _free_port(host)
        device = next(model.parameters()).device.type
        args = (cfg.world_size, host, port, torch.get_num_threads(), type(model), model.config,
                cfg, objective, trainer_cls, seed, peer, device)  # fmt: skip
        for r in range(1, cfg.world_size):
            spawn.start(r, args)
        _init(0, cfg.world_size, host, port, device)
        return cls(cfg.world_size, spawn)

    def command(self, *msg: Any) -> None:
        dist.broadcast_object_list([msg], src=0)

    def close(self) -> None:
        self.command("stop")
        self.spawn.join(60)
        dist.destroy_process_group()


class ShardedPublisher:
    """The orchestrator's weight publisher over a rank group: every rank writes the
    shards of what it publishes (`owned`), in parallel; rank 0 commits the version."""

    def __init__(
        self, leader: Leader, store: WeightStore, alone: frozenset[str] = frozenset()
    ) -> None:
        """`alone`: names of tensors rank 0 alone holds (a companion's), which it writes."""
        self.leader, self.store, self.alone = leader, store, alone

    def publish(
        self, state: Mapping[str, Tensor], version: int, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """`state`: the trainer's, or a part of it (LoRA's adapters, `lora_sync.py`): every
        rank publishes the same names of its own `state_dict`."""
        # the policy is split as every rank splits it; rank 0 adds what it alone holds
        aside = {k: v for k, v in state.items() if k in self.alone}
        policy = {k: v for k, v in state.items() if k not in aside}
        # the names in this order: `owners` splits whole tensors among ranks by it
        self.leader.command("publish", self.store.spec, version, list(policy))
        mine, rows = owned(policy, 0, self.leader.world_size)
        part = self.store.write_part(mine | aside, version, 0, rows)
        parts = self.leader.gather(part)
        assert parts is not None
        return self.store.commit(version, parts, meta)

    def fetch(self, version: int, base: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
        return self.store.fetch(version, base)


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _init(rank: int, world_size: int, host: str, port: int, device: str) -> None:
    """Join the group; on CUDA take GPU `rank` of this machine and NCCL for its tensors."""
    backend = "gloo"
    if device == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        backend = "cpu:gloo,cuda:nccl"  # objects and commands stay on gloo
    dist.init_process_group(
        backend,
        init_method=f"tcp://{host}:{port}",
        rank=rank,
        world_size=world_size,
        timeout=TIMEOUT,
    )


def follow(
    rank: int,
    world_size: int,
    host: str,
    port: int,
    threads: int,
    model_cls: Any,
    model_config: Any,
    cfg: TrainConfig,
    objective: Any,
    trainer_cls: Any,
    seed: int,
    peer: Any,
    device: str,
) -> None:
    """Ranks 1..N-1: the same trainer, driven by rank 0's commands until "stop"."""
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    torch.set_num_threads(threads)  # the same kernels' reduction order as rank 0
    _init(rank, world_size, host, port, device)
    ranks = Ranks(rank, world_size)
    model = model_cls(model_config).to(torch.cuda.current_device() if device == "cuda" else device)
    trainer = trainer_cls(model, cfg, objective=objective, ranks=ranks, companion=peer, seed=seed)
    stores: dict[str, WeightStore] = {}
    while True:
        cmd, *args = ranks.receive()
        if cmd == "step":
            trainer.step(args[0])
        elif cmd == "publish":
            spec, version, names = args
            key = json.dumps(spec, sort_keys=True)
            store = stores.get(key) or stores.setdefault(key, WeightStore(**spec))
            state = trainer.state_dict()
            mine, rows = owned({k: state[k] for k in names}, rank, world_size)
            ranks.gather(store.write_part(mine, version, rank, rows))
        elif cmd == "save":  # sharded strategies only: every rank writes its shards
            trainer.save(args[0])
        elif cmd == "load":
            trainer.load_state(args[0])
        elif cmd == "read":  # a sharded model's whole-model forward: every rank runs it
            trainer.read(args[0], *args[1])
        elif cmd == "keep":
            trainer.keep()
        elif cmd == "restore":
            trainer.restore_kept()
        elif cmd == "stop":
            break
    dist.destroy_process_group()


def _exit_with_parent(parent: int) -> None:
    """A rank blocked in a collective would outlive a killed rank 0 by `TIMEOUT`."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)
