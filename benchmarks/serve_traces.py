"""Serving throughput with trace recording off, on SQLite and on PostgreSQL, side by side.

Recording must not slow serving (issue 19 §3): every choice is written token-exact to
the store, and a response ends only after the batch holding it committed, but writes
are group-committed off the request path (`serve/store/writer.py`), never one
transaction per token. This drives `--sessions` concurrent multi-turn chat sessions
(each turn extends its conversation with the reply and a new user message) over
loopback HTTP against three apps on **one shared engine**: tracing off (the
baseline), a SQLite store (WAL, synchronous=FULL) and a PostgreSQL store (a throwaway
server started here, fsync on). Only the recording differs between them.

Repeats are interleaved (the arm order rotates every repeat) so drift in the box's
load hits every arm alike; each (repeat, arm) gets its own seeded random prompts of the
same shape, so the engine's prefix cache never serves one arm from another's run. For
each repeat the ratio is tokens/s traced over tokens/s off; the result gives its mean
and a 95 % t interval over repeats. Goal: a ratio of at least 0.95.

    python benchmarks/serve_traces.py                 # tiny model, 30 sessions x 4 turns
    python benchmarks/serve_traces.py --model smollm2 --repeats 3
    python benchmarks/serve_traces.py --quick         # a smoke run

The tiny random model is the default on purpose: its decode is cheapest, so the
recording's share of the time, and any slowdown it causes, is largest. The client runs
in the same process (its own event loop), as the same load for every arm.
Writes benchmarks/results/serve_traces.json (`--out` elsewhere); the last line is
`sqlite_ratio=<m> [<lo>, <hi>] postgres_ratio=<m> [<lo>, <hi>]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from _machine import machine
from _postgres import pg_bin, postgres_server

RESULTS = Path(__file__).parent / "results"
MODEL = "bench"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "file",
    "test",
    "patch",
    "error",
    "value",
    "list",
    "parse",
    "return",
    "class",
    "module",
    "import",
    "loop",
    "branch",
    "commit",
    "merge",
    "build",
    "tool",
    "shell",
    "output",
    "input",
    "token",
    "cache",
    "queue",
]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


async def session(client: Any, rng: random.Random, args: argparse.Namespace) -> int:
    """One multi-turn chat; returns the completion tokens it was served."""
    messages = [
        {"role": "system", "content": text(rng, args.system)},
        {"role": "user", "content": text(rng, args.user)},
    ]
    served = 0
    for _ in range(args.turns):
        body = {
            "model": MODEL,
            "messages": messages,
            "max_tokens": args.new,
            "temperature": 1.0,
            "seed": rng.randrange(1 << 30),
        }
        r = await client.post("/v1/chat/completions", json=body)
        r.raise_for_status()
        out = r.json()
        served += out["usage"]["completion_tokens"]
        reply = out["choices"][0]["message"]["content"] or ""
        messages += [
            {"role": "assistant", "content": reply},
            {"role": "user", "content": text(rng, args.user)},
        ]
    return served


def drive(url: str, seed: int, args: argparse.Namespace) -> tuple[int, float]:
    """All sessions at once against `url`: (completion tokens, wall seconds)."""
    import httpx

    async def main() -> tuple[int, float]:
        limits = httpx.Limits(max_connections=args.sessions)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=600) as client:
            rngs = [random.Random(seed * 1000 + i) for i in range(args.sessions)]
            start = time.perf_counter()
            tokens = await asyncio.gather(*(session(client, g, args) for g in rngs))
            return sum(tokens), time.perf_counter() - start

    return asyncio.run(main())


@contextmanager
def servers(
    args: argparse.Namespace, tmp: Path
) -> Iterator[tuple[Any, dict[str, tuple[str, Any]]]]:
    """(the engine, arm -> (base URL, its store or None)): three apps on one engine."""
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model, tiny_model
    from shadowrl.serve.app import create_app
    from shadowrl.serve.store import TraceStore
    from shadowrl.serve.store.db import open_engine
    from shadowrl.serve.threaded import serve_in_thread

    model, tok = tiny_model(seed=0) if args.model == "tiny" else load_model(ModelConfig())
    config = EngineConfig(max_batch=args.sessions, max_seq_len=args.context)
    with ExitStack() as stack:
        engine = stack.enter_context(Engine(model, tok, config))
        urls = {"sqlite": f"sqlite:///{tmp / 'traces.db'}"}
        if not args.no_postgres:
            urls["postgres"] = stack.enter_context(postgres_server())
        stores = {arm: TraceStore(open_engine(url)) for arm, url in urls.items()}
        for opened in stores.values():
            stack.callback(opened.close)
        out: dict[str, tuple[str, Any]] = {}
        for arm in ("off", *stores):
            store = stores.get(arm)
            app = create_app(
                engine,
                tok,
                MODEL,
                max_context_tokens=args.context,
                max_tokens_cap=args.new,
                traces=None if store is None else store.writer,
            )
            out[arm] = (stack.enter_context(serve_in_thread(app)), store)
        yield engine, out


def interval(ratios: list[float]) -> dict[str, Any]:
    """Mean and 95 % t interval of per-repeat ratios."""
    from scipy import stats

    mean = statistics.fmean(ratios)
    ci = None
    if len(ratios) >= 2:
        half = stats.t.ppf(0.975, len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** 0.5
        ci = [round(mean - half, 4), round(mean + half, 4)]
    return {
        "mean": round(mean, 4),
        "ci95": ci,
        "ratios": [round(r, 4) for r in ratios],
        "slowdown_pct": round((1 - mean) * 100, 2),
        "goal_met": mean >= 0.95,
    }


def store_counts(store: Any) -> dict[str, int]:
    """What the store holds and how it got there: many writes per transaction."""
    from sqlalchemy import func, select

    from shadowrl.serve.store.schema import TraceRequest

    with store.engine.connect() as conn:
        rows = conn.scalar(select(func.count()).select_from(TraceRequest))
    return {
        "requests_stored": int(rows or 0),
        "writes": store.writer.committed,
        "transactions": store.writer.transactions,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="serve-traces-") as tmp,
        servers(args, Path(tmp)) as (engine, s),
    ):
        arms = list(s)
        for arm in arms:  # warm-up: first compiles, connections, tables; not timed
            drive(s[arm][0], 10**6 + arms.index(arm), args)
        runs: list[dict[str, Any]] = []
        for r in range(args.repeats):
            for arm in arms[r % len(arms) :] + arms[: r % len(arms)]:
                hits = engine.prefix.hit_tokens
                tokens, wall = drive(s[arm][0], r * len(arms) + arms.index(arm), args)
                hits = engine.prefix.hit_tokens - hits  # prompt tokens the prefix cache served
                runs.append(
                    {
                        "repeat": r,
                        "arm": arm,
                        "tokens": tokens,
                        "wall_s": round(wall, 3),
                        "prefix_hit_tokens": hits,
                    }
                )
                print(
                    f"repeat {r} {arm:8s} {tokens} tokens {wall:6.2f} s "
                    f"{tokens / wall:8.1f} tok/s, {hits} prompt tokens from the prefix cache"
                )
        writes = {arm: store_counts(st) for arm, (_, st) in s.items() if st is not None}
    tps = {(x["repeat"], x["arm"]): x["tokens"] / x["wall_s"] for x in runs}
    summary = {
        arm: {
            **interval([tps[r, arm] / tps[r, "off"] for r in range(args.repeats)]),
            **writes[arm],
        }
        for arm in arms
        if arm != "off"
    }
    return {"runs": runs, "arms": summary}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: 4 sessions x 2 turns")
    p.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    p.add_argument("--sessions", type=int, default=30, help="concurrent chat sessions")
    p.add_argument("--turns", type=int, default=4, help="requests per session")
    p.add_argument("--new", type=int, default=32, help="max_tokens per reply")
    p.add_argument("--system", type=int, default=150, help="system prompt words")
    p.add_argument("--user", type=int, default=20, help="words per user message")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats of every arm")
    p.add_argument("--context", type=int, default=2048, help="max context tokens")
    p.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL arm")
    p.add_argument("--out", type=Path, help="result file (default: results/serve_traces.json)")
    args = p.parse_args()
    if args.quick:
        args.sessions, args.turns, args.new, args.repeats = 4, 2, 8, 2
    if not args.no_postgres and pg_bin() is None:
        p.error("PostgreSQL binaries not found (apt-get install postgresql) or pass --no-postgres")

    result = {
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        **measure(args),
        "machine": machine("sqlalchemy", "fastapi"),
    }
    out = args.out or RESULTS / "serve_traces.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["arms"], indent=2))
    line = []
    for arm, a in result["arms"].items():
        ci = a["ci95"] or [a["mean"], a["mean"]]
        line.append(f"{arm}_ratio={a['mean']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]")
    print(" ".join(line))


if __name__ == "__main__":
    main()
