"""Compaction error of self-summaries vs truncation, on held-out `long` tasks (issue 21).

At SFT pass rates of a few percent, pass-rate differences between compaction arms are
0/0; this measures compaction where it can be seen. The reference is the scripted
expert's episode under `configs/summarize-cpu.yaml` (2,048-token context): at each of
its trigger points the context is

  (a) full        kept whole (no budget),
  (b) truncation  cut to the budget: system prompt + task + the most recent turns that
                  fit beside the expert's remaining actions in `max_context_tokens`,
  (c) prompted    replaced by a summary the `--model` policy writes when the loop's own
                  request is appended (greedy, `agent.summary.max_tokens`),
  (d) learned     the same with the `--learned` checkpoint (the policy after RL with
                  summarisation on); skipped (NaN) when none is given,
  (ref) expert    the expert's own summary (an upper reference, not an arm of the issue),

and a summary arm's next context is built exactly as the loop builds it (system +
task + summary + the carried last result). **Compaction error** = the teacher-forced
NLL (nats per token) of the expert's remaining actions given the compacted context,
minus the same given the full context: forward passes only, paired across arms, all
scored by the one `--model` (the SFT checkpoint RL starts from; SmolLM2 by default).
The same difference on the few generated tokens that spell the expected value
(`fact_compaction_error`) shows a lost fact that the mean over all tokens dilutes.
**Fact retention**: the share of the fix's facts (file, function, expected value) a
summary keeps. Intervals are 95 % bootstrap intervals over trigger points.

Plus pass@1 and tokens per arm from real episodes on the same held-out tasks
(`compaction_episodes.py`: one acting policy, `--model`; the arms differ only in how its
context is compacted), with eval's intervals (`--episodes` per task and arm; 0 skips).

    python benchmarks/compaction.py --quick                    # 1 held-out task, SmolLM2
    python benchmarks/compaction.py --model runs/x/sft --learned runs/x/checkpoints/step_N

`--quick` without `--learned` first runs a short RL from `--model` with summaries on
(`compaction_rl.py`, `--rl-steps`; 0 skips it and leaves arm d NaN). Writes
benchmarks/results/compaction.json (`--quick`: compaction_quick.json; `--out`
elsewhere); the last line is `nll_full=.. nll_truncation=.. nll_prompted=..
nll_learned=.. retention_prompted=.. retention_learned=.. summary_tokens=..` (mean NLLs;
summary_tokens is prompted/learned).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
from pathlib import Path
from typing import Any

from _machine import machine

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
CONFIG = ROOT / "configs" / "summarize-cpu.yaml"
ARMS = ("full", "truncation", "prompted", "learned", "expert")


def facts(task: Any, prepared: Any) -> list[str]:
    """File, function and the new values of the gold fix: what a summary must keep."""
    from shadowrl.tasks.reference import fix_facts

    out: list[str] = []
    for path, fn, new in fix_facts(task, prepared):
        out += [path, fn, *re.findall(r"\d+", new)]
    return [f for f in dict.fromkeys(out) if f]


def retention(summary: str, needed: list[str]) -> float:
    return sum(f in summary for f in needed) / len(needed) if needed else float("nan")


def trigger_points(traj: Any) -> list[dict[str, Any]]:
    """Per summary of the expert's chain: the full context (every work turn so far, no
    summary), the expert's summary, what was carried, and the next segment."""
    from shadowrl.agent.summary import RESULT_HEADER, SUMMARY_REQUEST

    msgs, work = list(traj.messages), list(traj.messages[:2])
    points: list[dict[str, Any]] = []
    i = 2
    while i < len(msgs):
        m = msgs[i]
        if not (m.role == "user" and m.content == SUMMARY_REQUEST):
            work.append(m)
            i += 1
            continue
        body = msgs[i + 3].content  # after the summary: system, then the new user turn
        points.append(
            {
                "full": list(work),
                "expert_summary": msgs[i + 1].content,
                "carried": body.split(RESULT_HEADER, 1)[1] if RESULT_HEADER in body else "",
                "segment": traj.segments[len(points) + 1],
            }
        )
        i += 4  # request, summary, and the next segment's system and user turns
    return points


def remaining(segment: Any, prompt_ids: list[int]) -> tuple[list[int], list[bool]]:
    """The segment after its own prompt: the expert's remaining actions and their results."""
    n = len(prompt_ids)
    assert list(segment.token_ids[:n]) == prompt_ids, "segment does not start with its prompt"
    return list(segment.token_ids[n:]), list(segment.loss_mask[n:])


def nll(model: Any, context: list[int], suffix: list[int], masks: list[list[bool]]) -> list[float]:
    """Mean negative log-likelihood (nats/token) of each mask's suffix tokens given context
    (one forward pass for all masks; NaN for an empty mask)."""
    import torch

    from shadowrl.rl.forward import token_logprobs

    ids = torch.tensor([context + suffix])
    union = torch.tensor([[False] * len(context) + [any(c) for c in zip(*masks, strict=True)]])
    with torch.inference_mode():
        lp = token_logprobs(model, ids, union)[0, len(context) :]
    out = []
    for mask in masks:
        m = torch.tensor(mask)
        out.append(float(-(lp[m]).mean()) if m.any() else float("nan"))
    return out


def value_mask(
    tokenizer: Any, suffix: list[int], mask: list[bool], needed: list[str]
) -> list[bool]:
    """Generated suffix tokens that spell one of the fix's numeric facts (the value the spec
    gives): the few tokens a lost fact shows up in."""
    out = [False] * len(suffix)
    for fact in (f for f in needed if f.isdigit()):
        for form in (fact, " " + fact):
            pat = tokenizer.encode(form, add_special_tokens=False)
            for i in range(len(suffix) - len(pat) + 1):
                if suffix[i : i + len(pat)] == pat and all(mask[i : i + len(pat)]):
                    out[i : i + len(pat)] = [True] * len(pat)
    return out


def truncated(renderer: Any, full: list[Any], room: int) -> list[int]:
    """System + task + the most recent whole turns whose prompt fits in `room` tokens."""
    head, turns = full[:2], full[2:]
    while turns:
        ids = renderer.prompt_ids([*head, *turns])
        if len(ids) <= room:
            return ids
        turns = turns[1:]
        while turns and turns[0].role != "assistant":
            turns = turns[1:]
    return renderer.prompt_ids(head)


async def summarise(engine: Any, renderer: Any, full: list[Any], cap: int) -> tuple[str, int]:
    """The summary a policy writes when the loop's request is appended to the full context."""
    from shadowrl.agent.summary import SUMMARY_REQUEST
    from shadowrl.types import Message, SamplingParams

    ids = renderer.prompt_ids([*full, Message("user", SUMMARY_REQUEST)])
    sampling = SamplingParams(
        max_new_tokens=cap,
        temperature=0.0,
        stop_token_ids=renderer.stop_token_ids,
    )
    gen = await engine.generate(ids, sampling)
    text = engine.tokenizer.decode(gen.token_ids, skip_special_tokens=True)
    return text.strip(), len(gen.token_ids)


def interval(xs: list[float], seed: int = 0, n: int = 2000) -> list[float]:
    """Mean and a 95 % bootstrap percentile interval."""
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return [float("nan")] * 3
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(xs, k=len(xs))) / len(xs) for _ in range(n))
    return [sum(xs) / len(xs), means[int(0.025 * n)], means[int(0.975 * n) - 1]]


def expert_chain(task: Any, prepared: Any, tokenizer: Any, spec: Any) -> Any:
    from shadowrl.episode import episode_in_new_sandbox
    from shadowrl.tasks.reference import reference_policy

    policy = reference_policy("scripted", task, prepared, tokenizer)
    traj, verdict = asyncio.run(
        episode_in_new_sandbox(policy, prepared, tokenizer=tokenizer, spec=spec)
    )
    if not verdict.resolved:
        raise RuntimeError(f"the expert failed {task.instance_id}: not a reference")
    return traj


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from shadowrl.agent.prompt import Renderer
    from shadowrl.agent.summary import next_segment_messages
    from shadowrl.agent.tools import ToolSet
    from shadowrl.commands.config import episode_spec, load_config
    from shadowrl.eval.pins import config_pins
    from shadowrl.inference.config import EngineConfig
    from shadowrl.inference.engine import Engine
    from shadowrl.models import ModelConfig, load_model
    from shadowrl.tasks.load import load_suite
    from shadowrl.tasks.prepare import prepare, task_prompt

    config = load_config([CONFIG])
    spec, agent = episode_spec(config), config.agent
    cache = Path(config.tasks.cache_dir).expanduser()
    scorer, tok = load_model(ModelConfig(path=args.model))
    learned = load_model(ModelConfig(path=args.learned))[0] if args.learned else None
    if learned is None and args.quick and args.rl_steps:
        from compaction_rl import short_rl

        learned = short_rl(CONFIG, args.model, args.rl_steps)
    renderer = Renderer(tok, ToolSet.from_names(agent.tools).schemas())
    engine_cfg = EngineConfig(max_batch=1, max_seq_len=8192)
    cap = args.summary_tokens or agent.summary.max_tokens
    rows: list[dict[str, Any]] = []
    tasks = load_suite("long", "heldout")[: args.tasks]
    for task in tasks:
        prepared = prepare(task, cache)
        needed = facts(task, prepared)
        traj = expert_chain(task, prepared, tok, spec)
        for point in trigger_points(traj):
            seg = point["segment"]
            system, task_text = agent.system_prompt, task_prompt(task)
            expert_start = renderer.prompt_ids(
                next_segment_messages(system, task_text, point["expert_summary"], point["carried"])
            )
            suffix, mask = remaining(seg, expert_start)
            facts_mask = value_mask(tok, suffix, mask, needed)
            summaries = {"expert": (point["expert_summary"], 0)}
            for arm, model in (("prompted", scorer), ("learned", learned)):
                if model is not None:
                    with Engine(model, tok, engine_cfg) as engine:
                        summaries[arm] = asyncio.run(
                            summarise(engine, renderer, point["full"], cap)
                        )
            contexts = {
                "full": renderer.prompt_ids(point["full"]),
                "truncation": truncated(renderer, point["full"], agent.max_context_tokens - len(suffix)),
                **{
                    arm: renderer.prompt_ids(next_segment_messages(system, task_text, s, point["carried"]))
                    for arm, (s, _) in summaries.items()
                },
            }  # fmt: skip
            row: dict[str, Any] = {
                "task": task.instance_id,
                "facts": needed,
                "fact_tokens": sum(facts_mask),
            }
            for arm in ARMS:
                ids = contexts.get(arm)
                scores = nll(scorer, ids, suffix, [mask, facts_mask]) if ids else [math.nan] * 2
                row[f"nll_{arm}"], row[f"fact_nll_{arm}"] = scores
                row[f"context_tokens_{arm}"] = len(ids) if ids else 0
            for arm, (text, n) in summaries.items():
                row[f"summary_{arm}"], row[f"summary_tokens_{arm}"] = text, n
                row[f"retention_{arm}"] = retention(text, needed)
            print(json.dumps({k: v for k, v in row.items() if not k.startswith("summary_")}))
            rows.append(row)
    result = aggregate(rows, args)
    if args.episodes:
        from compaction_episodes import run_arms

        result["episodes"] = asyncio.run(
            run_arms(
                tasks, scorer, learned, tok, spec, samples=args.episodes, cache_dir=cache,
                pins=config_pins(config), interval=interval, seed=config.seed,
            )
        )  # fmt: skip
    return result


def aggregate(rows: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    col = lambda k: [float(r.get(k, float("nan"))) for r in rows]  # noqa: E731
    error = {
        arm: interval([a - f for a, f in zip(col(f"nll_{arm}"), col("nll_full"), strict=True)])
        for arm in ARMS[1:]
    }
    trunc = error["truncation"][0]
    return {
        "settings": {
            "model": args.model,
            "learned": args.learned,
            "tasks": args.tasks,
            "summary_tokens": args.summary_tokens,
            "episodes": args.episodes,
            "rl_steps": args.rl_steps if args.quick and not args.learned else 0,
        },
        "trigger_points": len(rows),
        "nll": {arm: interval(col(f"nll_{arm}")) for arm in ARMS},
        # The same error on the tokens of the expected value only (what a summary must carry).
        "fact_compaction_error": {
            arm: interval(
                [a - f for a, f in zip(col(f"fact_nll_{arm}"), col("fact_nll_full"), strict=True)]
            )
            for arm in ARMS[1:]
        },
        "compaction_error": error,
        # The baseline is truncation, measured side by side: < 0.5 is the goal.
        "error_ratio_vs_truncation": {
            arm: error[arm][0] / trunc if trunc else float("nan") for arm in ARMS[2:]
        },
        "retention": {arm: interval(col(f"retention_{arm}")) for arm in ARMS[2:]},
        "summary_tokens": {arm: interval(col(f"summary_tokens_{arm}")) for arm in ARMS[2:4]},
        "rows": rows,
        "machine": machine("transformers"),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="one held-out task")
    p.add_argument("--model", default="smollm2", help="scorer and prompted summariser (SFT dir)")
    p.add_argument("--learned", default="", help="checkpoint after RL with summarisation on")
    p.add_argument(
        "--summary-tokens", type=int, default=0, help="cap on a written summary (0 = config's)"
    )
    p.add_argument("--tasks", type=int, default=0, help="held-out tasks (0 = all; --quick: 1)")
    p.add_argument(
        "--episodes", type=int, default=-1, help="real episodes per task and arm (0 = none; "
        "default 4, --quick 2)",
    )  # fmt: skip
    p.add_argument(
        "--rl-steps", type=int, default=2, help="--quick without --learned: short RL steps "
        "that make the learned arm (0 = skip it)",
    )  # fmt: skip
    p.add_argument("--out", type=Path, help="result file (default: results/compaction.json)")
    args = p.parse_args()
    args.tasks = args.tasks or (1 if args.quick else None)
    if args.episodes < 0:
        args.episodes = 2 if args.quick else 4
    result = measure(args)
    out = args.out or RESULTS / ("compaction_quick.json" if args.quick else "compaction.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for arm, e in result.get("episodes", {}).items():
        print(
            f"episodes {arm}: pass@1 {e['pass1'][0]:.2f} [{e['pass1'][1]:.2f}, {e['pass1'][2]:.2f}] "
            f"({e['resolved']}/{e['episodes']}), tokens read {e['read_tokens'][0]:.0f}, "
            f"generated {e['generated_tokens'][0]:.0f}, summary {e['summary_tokens'][0]:.0f} per episode"
        )
    n, ret, toks = result["nll"], result["retention"], result["summary_tokens"]
    ratio = result["error_ratio_vs_truncation"]
    print(
        f"compaction error / truncation's: prompted={ratio['prompted']:.2f} learned={ratio['learned']:.2f}"
    )
    print(
        f"nll_full={n['full'][0]:.3f} nll_truncation={n['truncation'][0]:.3f} "
        f"nll_prompted={n['prompted'][0]:.3f} nll_learned={n['learned'][0]:.3f} "
        f"retention_prompted={ret['prompted'][0]:.2f} retention_learned={ret['learned'][0]:.2f} "
        f"summary_tokens={toks['prompted'][0]:.0f}/{toks['learned'][0]:.0f}"
    )


if __name__ == "__main__":
    main()
