"""Every benchmark in benchmarks/ still runs: its smallest form, as a subprocess.

The benchmarks are scripts nobody runs on every change, so an API change could break one
unseen (async_vs_sync.py crashed for weeks). Each test runs one script the way its
README line does, with the project's python and environment, writing its result to a
temp dir, and checks that it exits 0 and writes the keys it promises, plus facts that
do not depend on speed (the same token counts on both sides, bit-exact syncs, ...).
Timings are never asserted; the recorded results in benchmarks/results/ must be left
untouched.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from required import require
from shadowrl.sandbox.overlay import unavailable_reason

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
RECORDED = BENCHMARKS / "results"


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(f"{p.relative_to(root)}\0".encode() + p.read_bytes())
    return h.hexdigest()


def run_benchmark(script: str, tmp_path: Path, *args: str, timeout: int = 600) -> dict[str, Any]:
    """Run benchmarks/<script> with `args` and `--out` in tmp_path; return its result JSON."""
    out = tmp_path / "result.json"
    before = _digest(RECORDED)
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args, "--out", str(out)],
        cwd=tmp_path,  # anything written relative to the cwd lands here, not in the repo
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stderr[-4000:]}"
    assert _digest(RECORDED) == before, f"{script} changed benchmarks/results/"
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def has_keys(result: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in result]
    assert not missing, f"result lacks {missing}; has {sorted(result)}"


def test_async_vs_sync(tmp_path: Path) -> None:
    steps, group_size = 2, 2
    result = run_benchmark(
        "async_vs_sync.py", tmp_path, "--quick", "--steps", str(steps), "--group-size",
        str(group_size), "--inflight-groups", "2", "--turns", "1", "--median-s", "0.01",
        "--sigma", "0",
    )  # fmt: skip
    has_keys(result, "settings", "machine", "runs", "speedup")
    assert [r["mode"] for r in result["runs"]] == ["sync", "async"]
    for run in result["runs"]:
        has_keys(run, "wall_s", "teardown_s", "staleness_mean", "tool_s_per_trained_episode")
        assert run["trained_episodes"] == steps * group_size  # groups_per_step = 1
        assert run["groups_failed"] == 0
    assert result["settings"]["steps"] == steps  # explicit flags beat --quick's preset


def test_engine_vs_hf(tmp_path: Path) -> None:
    result = run_benchmark(
        "engine_vs_hf.py", tmp_path, "--model", "tiny", "--prompts", "2", "--scale", "0.05",
        "--batch", "2",
    )  # fmt: skip
    has_keys(result, "model", "prompts", "prompt_tokens", "engine", "hf", "ratio", "machine")
    has_keys(result["engine"], "tokens", "tokens_per_s", "startup_s", "breakdown")
    # EOS is disabled on both sides, so each generates exactly its requests' budgets.
    assert result["engine"]["tokens"] == result["hf"]["tokens"] > 0


def test_engine_vs_hf_floors_int8_and_profile(tmp_path: Path) -> None:
    result = run_benchmark(
        "engine_vs_hf.py", tmp_path, "--model", "tiny", "--prompts", "2", "--scale", "0.05",
        "--batch", "2", "--weights", "dense", "int8", "--no-hf", "--profile",
    )  # fmt: skip
    has_keys(result, "engines", "throughput_vs_first", "machine")
    has_keys(result["machine"], "cpu_flags", "load_avg_1m")
    dense, int8 = result["engines"]["dense"], result["engines"]["int8"]
    assert dense["tokens"] == int8["tokens"] > 0 and int8["precision"] == "int8"
    for side in (dense, int8):
        floor = side["breakdown"]["floor"]
        has_keys(floor, "full_batch_multiple", "decode_multiple", "prefill_multiple")
        assert floor["full_batch_floor_ms"] > 0 and floor["prefill_floor_s"] > 0
        # attention's least work only adds to each floor
        assert floor["prefill_multiple_with_attention"] < floor["prefill_multiple"]
        assert floor["decode_multiple_with_kv"] < floor["decode_multiple"]
        assert 0 < floor["prefill_attention_share"] < 1
        has_keys(side["profile"]["decode"]["split_ms_per_step"], "products", "attention")
    assert (tmp_path / "result_profile_int8.txt").read_text().count("aten::") > 5


def test_prefix_cache(tmp_path: Path) -> None:
    result = run_benchmark(
        "prefix_cache.py", tmp_path, "--quick", "--episodes", "2", "--turns", "2",
        "--system", "64", "--task", "16", "--new", "8", "--tool", "16",
    )  # fmt: skip
    has_keys(result, "model", "workload", "seconds", "median_s", "ratios", "machine")
    assert result["model"] == "tiny"
    hits = result["prefix_hit_tokens"]
    assert hits["uncached"] == 0
    assert hits["cached_no_head"] > 0  # turn 2 extends turn 1's prompt
    assert hits["cached"] >= hits["cached_no_head"] + 64  # episode 2 restored episode 1's head
    assert set(result["ratios"]) == {"uncached_over_cached", "cached_no_head_over_cached"}


def test_entropy(tmp_path: Path) -> None:
    result = run_benchmark(
        "entropy.py", tmp_path, "--quick", "--batches", "1", "2", "--span", "16", "--repeats", "2"
    )
    has_keys(result, "model", "rows", "overhead_of_decode_step", "machine")
    assert [(r["batch"], r["top_p"]) for r in result["rows"]] == [
        (1, 1.0), (1, 0.95), (2, 1.0), (2, 0.95)
    ]  # fmt: skip


def test_agent_rollouts(tmp_path: Path) -> None:
    result = run_benchmark(
        "agent_rollouts.py", tmp_path, "--policy", "tiny", "--suite",
        "family:heldout-templates@2", "--concurrency", "2", "--set", "agent.max_turns=2",
        "agent.max_new_tokens=8", "--replay-prefill",
    )  # fmt: skip
    has_keys(result, "episodes", "generated_tokens", "wall_s", "engine", "floor", "machine")
    has_keys(result["engine"], "prefill_s", "decode_s", "busy_s", "prefill_tokens")
    has_keys(result["floor"], "prefill_multiple", "decode_multiple", "floor_s")
    has_keys(result["floor"], "prefill_multiple_with_attention", "decode_multiple_with_kv")
    assert result["harness_cpu_s"] > 0  # the sandboxes' tools and tests ran as children
    assert result["prefill_alone_s"] > 0
    assert result["engine"]["busy_s"] < result["wall_s"]  # the replay is not the eval's time
    assert result["prefill_eval_over_alone"] == pytest.approx(
        result["engine"]["prefill_s"] / result["prefill_alone_s"]
    )
    assert result["episodes"] == 2 and result["turns"] <= 4
    # every generated token but each turn's first (sampled from the prefill) is a decode row
    engine = result["engine"]
    rows = round(engine["decode_rows_mean"] * engine["decode_steps"])
    assert rows == result["generated_tokens"] - result["turns"] > 0
    assert result["engine"]["busy_s"] + result["idle_s"] == pytest.approx(result["wall_s"])


def test_agent_rollouts_against(tmp_path: Path) -> None:
    """Side by side: the arms alternate, each pools its rounds, the ratios are of the pools."""
    result = run_benchmark(
        "agent_rollouts.py", tmp_path, "--policy", "tiny", "--suite",
        "family:heldout-templates@1", "--concurrency", "1", "--set", "agent.max_turns=1",
        "agent.max_new_tokens=4", "--against", "engine.cpu_decode=native", "--rounds", "2",
    )  # fmt: skip
    has_keys(result, "runs", "arms", "baseline_over_candidate", "machine")
    assert [len(result["runs"][arm]) for arm in ("baseline", "candidate")] == [2, 2]
    base, cand = result["arms"]["baseline"], result["arms"]["candidate"]
    assert base["episodes"] == cand["episodes"] == 2
    assert base["decode_s"] == pytest.approx(
        sum(r["engine"]["decode_s"] for r in result["runs"]["baseline"])
    )
    ratio = result["baseline_over_candidate"]["decode_multiple"]
    assert ratio == pytest.approx(base["decode_multiple"] / cand["decode_multiple"])


def test_sandbox_fork(tmp_path: Path) -> None:
    require(unavailable_reason(), "overlay sandbox")
    result = run_benchmark("sandbox_fork.py", tmp_path, "--quick")
    has_keys(result, "repeats", "warm_execs", "results", "machine")
    assert sorted(result["results"], key=int) == ["10", "200"]
    for row in result["results"].values():
        has_keys(row, "fork_ms", "exec_true_ms", "exec_true_cold_ms", "bwrap_true_ms", "cp_ms")
    has_keys(result["pool"], "claim_ms", "claim_p90_ms", "cold_claim_ms", "hit_rate")
    assert result["pool"]["claims"] == 4 * 8  # --quick: 4 bursts of a group of 8


def test_weight_sync(tmp_path: Path) -> None:
    result = run_benchmark("weight_sync.py", tmp_path, "--quick")
    has_keys(result, "model", "full_bytes", "delta_ratio", "pause_ms", "fetch_ms", "machine")
    assert result["model"] == "tiny"
    assert result["syncs"] == len(result["per_sync"]) == 2
    assert result["all_bit_exact"] is True


def test_vs_trl(tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="vs_trl.py compares against TRL (pip install trl)")
    result = run_benchmark(
        "vs_trl.py", tmp_path, "--quick", "--steps", "1", "--warmup", "0", "--prompts", "1",
        "--generations", "2", "--max-completion-length", "4",
    )  # fmt: skip
    has_keys(result, "settings", "machine", "shadowrl_step_s", "trl_step_s", "speedup")
    has_keys(result["shadowrl_parts_s"], "generate_s", "train_s", "sync_s")
    assert len(result["shadowrl_steps"]) == len(result["trl_steps"]) == 1
    assert result["machine"]["trl"]  # the TRL version the comparison ran against


def test_branching(tmp_path: Path) -> None:
    result = run_benchmark("branching.py", tmp_path, "--quick")
    has_keys(result, "model", "settings", "runs", "ratio_resolved_per_1k", "machine")
    flat, tree = result["runs"]
    assert (flat["mode"], tree["mode"]) == ("flat", "tree")
    for run in (flat, tree):
        assert run["generated_tokens"] >= 200 and run["episodes"] == 6 * run["groups"]
    # --quick: 2 roots x 3 leaves of 2 turns x 24 tokens, branched after turn 1, so a
    # tree generates 2 x (24 + 3 x 24) tokens where a flat group of 6 generates 6 x 48
    assert flat["generated_tokens"] / flat["groups"] == 288
    assert tree["generated_tokens"] / tree["groups"] == 192
    assert (flat["branch_points"], tree["branch_points"]) == (0, 2 * tree["groups"])
    assert [tok for tok, _ in tree["per_group"]] == [192] * tree["groups"]
    assert result["rounds"] == max(flat["groups"], tree["groups"])


def test_serve_traces(tmp_path: Path) -> None:
    postgres = bool(glob.glob("/usr/lib/postgresql/*/bin/initdb") or shutil.which("initdb"))
    sessions, turns, repeats = 2, 1, 1
    flags = ["--sessions", str(sessions), "--turns", str(turns), "--repeats", str(repeats)]
    flags += [
        "--system",
        "20",
        "--user",
        "5",
        "--new",
        "4",
        *([] if postgres else ["--no-postgres"]),
    ]
    result = run_benchmark("serve_traces.py", tmp_path, *flags)
    has_keys(result, "settings", "runs", "arms", "machine")
    arms = ["sqlite", "postgres"] if postgres else ["sqlite"]
    assert list(result["arms"]) == arms
    assert sorted(r["arm"] for r in result["runs"]) == sorted(["off", *arms] * repeats)
    assert all(r["tokens"] > 0 and r["prefix_hit_tokens"] >= 0 for r in result["runs"])
    for arm in arms:  # every request of every timed run and the warm-up is in the store
        a = result["arms"][arm]
        has_keys(a, "mean", "ci95", "ratios", "goal_met")
        assert a["requests_stored"] == sessions * turns * (repeats + 1)
        assert a["transactions"] <= a["writes"]


def test_weight_sync_s3(tmp_path: Path) -> None:
    pytest.importorskip("s3fs", reason="the s3:// store needs s3fs (pip install .[s3])")
    pytest.importorskip("moto.server", reason="the local S3 server is moto's (moto[server])")
    result = run_benchmark("weight_sync_s3.py", tmp_path, "--quick", "--syncs", "1")
    has_keys(result, "source", "versions", "full_fp32_bytes", "encodings", "machine")
    assert sorted(result["encodings"]) == [
        "delta_bf16",
        "delta_fp32",
        "delta_fp32_xor",
        "full_fp32",
    ]
    for enc in result["encodings"].values():
        has_keys(enc, "bytes_per_sync", "ratio_vs_full_fp32", "publish_s", "fetch_s")
        assert enc["all_bit_exact"] is True
        assert len(enc["per_sync"]) == len(result["versions"]) == 2  # the initial load + 1 sync
        # what a following reader downloads is exactly what was stored for it
        assert all(r["fetched_bytes"] == r["stored_bytes"] for r in enc["per_sync"])
    assert result["encodings"]["full_fp32"]["per_sync"][1]["kind"] == "full"
    assert result["encodings"]["delta_fp32"]["per_sync"][1]["kind"] == "delta"


def test_compaction(tmp_path: Path) -> None:
    # The teacher-forced part only: --rl-steps 0 skips --quick's short RL run and
    # --episodes 0 the real episodes (both take minutes; test_compaction_rl_and_episodes).
    result = run_benchmark(
        "compaction.py", tmp_path, "--quick", "--model", "tiny", "--summary-tokens", "16",
        "--rl-steps", "0", "--episodes", "0",
    )  # fmt: skip
    has_keys(
        result, "nll", "compaction_error", "fact_compaction_error", "error_ratio_vs_truncation",
        "retention", "rows",
    )  # fmt: skip
    assert result["trigger_points"] >= 1
    row = result["rows"][0]
    # The arms are paired on one trigger point: the full context is the longest, every
    # compacted one fits the tier's 2,048-token context, and the expert keeps every fact.
    full = row["context_tokens_full"]
    assert full > 2048 and all(row[f"context_tokens_{a}"] < 2048 for a in ("truncation", "expert"))
    assert row["retention_expert"] == 1.0 and row["facts"][0].startswith("app/")
    assert row["fact_tokens"] > 0  # the expected value is found among the scored tokens
    assert math.isnan(result["compaction_error"]["learned"][0])  # no --learned checkpoint


@pytest.mark.slow
def test_compaction_rl_and_episodes(tmp_path: Path) -> None:
    """--quick as documented, on the tiny model: one short RL step makes the learned arm,
    then one real episode per arm (1.5-6 min on the 2-core box, by its load)."""
    result = run_benchmark(
        "compaction.py", tmp_path, "--quick", "--model", "tiny", "--summary-tokens", "16",
        "--rl-steps", "1", "--episodes", "1", timeout=3600,
    )  # fmt: skip
    assert result["settings"]["rl_steps"] == 1
    assert not math.isnan(result["nll"]["learned"][0])  # the RL'd policy wrote a summary
    arms = result["episodes"]
    assert set(arms) == {"full", "truncation", "prompted", "learned"}
    assert all(a["episodes"] == 1 and a["crashed"] == 0 for a in arms.values())
    # Only the summary arms summarise (whether a random model's episode reaches the
    # trigger depends on its samples), each summary within the config's 160 tokens;
    # truncation reads less than the whole context.
    assert arms["full"]["summaries"][0] == arms["truncation"]["summaries"][0] == 0
    for arm in ("prompted", "learned"):
        assert arms[arm]["summary_tokens"][0] <= 160 * arms[arm]["summaries"][0]
    assert arms["truncation"]["read_tokens"][0] < arms["full"]["read_tokens"][0]


def test_speculative(tmp_path: Path) -> None:
    result = run_benchmark("speculative.py", tmp_path, "--quick")
    has_keys(result, "settings", "heads", "k", "machine")
    rows = result["settings"]
    assert {(r["batch"], r["temperature"]) for r in rows} == {
        (1, 0.0),
        (8, 0.0),
        (1, 1.0),
        (8, 1.0),
    }
    assert all(r["exact"] for r in rows)  # the exact rule: the plain engine's tokens
    assert all(len(r["accept_per_position"]) == result["k"] for r in rows)
    costs = result["heads"]["draft_cost"]  # measured, never asserted on: wall-clock
    assert costs["draft_vocab"] == 4096 and {"b1", "b8"} <= costs.keys()
    assert len(result["heads"]["distill"]["heldout"]["coverage"]) == result["k"]


def test_speculative_ngram(tmp_path: Path) -> None:
    result = run_benchmark("speculative.py", tmp_path, "--quick", "--drafter", "ngram")
    has_keys(result, "settings", "drafter", "floor_1_row_ms", "machine")
    assert result["drafter"] == "ngram" and result["heads"] == {}
    assert all(r["exact"] for r in result["settings"])


def test_int8_rollouts(tmp_path: Path) -> None:
    result = run_benchmark("int8_rollouts.py", tmp_path, "--quick")
    has_keys(result, "rollouts", "int8_over_fp32_tokens_per_s", "trainer_on_rollouts", "machine")
    dense, int8 = result["trainer_on_rollouts"]["dense"], result["trainer_on_rollouts"]["int8"]
    assert abs(dense["rollout_log_ratio_mean"]) < 1e-4  # fp32 rollouts: the trainer's own policy
    assert 0 < int8["rollout_log_ratio_max_abs"] < 1 and "clip_frac" in int8
    assert result["rollouts"]["int8"]["precision"] == "int8"
    kv = result["trainer_on_rollouts"]["bf16_kv"]  # rounded keys: a small, nonzero mismatch
    assert result["rollouts"]["bf16_kv"]["kv_dtype"] == "bfloat16"
    assert 0 < kv["rollout_log_ratio_max_abs"] < 1 and result["bf16_kv_over_fp32_tokens_per_s"] > 0
    for side in ("bf16", "bf16_layers"):  # bf16 weights: a larger mismatch, still bounded
        assert result["rollouts"][side]["kv_dtype"] == "bfloat16"
        assert 0 < result["trainer_on_rollouts"][side]["rollout_log_ratio_max_abs"] < 2


def test_profile_alone(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "_profile.py"), "--quick", "--rows", "2",
         "--prompt-tokens", "24", "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    has_keys(result["decode"]["split_ms_per_step"], "products", "attention", "python_and_dispatch")
    assert result["floor_ms"] > 0 and out.with_suffix(".txt").read_text().count("aten::") > 5


def test_fsdp_memory(tmp_path: Path) -> None:
    result = run_benchmark("fsdp_memory.py", tmp_path, "--quick", "--steps", "1", "--tokens", "32")
    has_keys(result, "sizes", "dtype", "machine", "uptime_end")
    quick = result["sizes"]["quick"]
    has_keys(quick, "replicate", "fsdp", "lora", "fsdp_ratio", "lora_ratio")
    replica, fsdp, lora = quick["replicate"], quick["fsdp"], quick["lora"]
    assert replica["world_size"] == lora["world_size"] == 1 and len(fsdp["ranks"]) == 2
    for arm in (replica, fsdp, lora):
        assert arm["peak_mb"] > 0 and arm["skipped"] == [0.0]
        assert all(len(r["steps"]) == 1 for r in arm["ranks"])
    # counted, not timed: each FSDP rank holds half the replica's weights and AdamW state
    # (the quick model's dims are even: no padding; AdamW's 4-byte `step` per tensor is
    # whole on every rank: 2.5e-5 of it), LoRA trains a small part of the model
    half = replica["ranks"][0]["state_mb"] / 2
    assert all(r["state_mb"] == pytest.approx(half, rel=1e-4) for r in fsdp["ranks"])
    assert lora["ranks"][0]["trainable_params"] < replica["ranks"][0]["trainable_params"] / 4
    # the same batch: every arm packed it into the same microbatches
    assert fsdp["microbatches"] == replica["microbatches"] == lora["microbatches"] >= 2


def test_fsdp_memory_on_one_rank_under_mixed_precision(tmp_path: Path) -> None:
    # the GPU script's arms (one FSDP rank, autocast), here on CPU
    result = run_benchmark(
        "fsdp_memory.py", tmp_path, "--quick", "--tokens", "32", "--fsdp-ranks", "1",
        "--dtype", "float32", "--autocast", "bfloat16", "--arms", "replicate", "fsdp",
    )  # fmt: skip
    quick = result["sizes"]["quick"]
    replica, fsdp = quick["replicate"], quick["fsdp"]
    assert fsdp["world_size"] == len(fsdp["ranks"]) == 1 and fsdp["autocast"] == "bfloat16"
    assert fsdp["skipped"] == replica["skipped"] == [0.0]
    # one rank holds all of it: the replica's fp32 weights and moments
    assert fsdp["ranks"][0]["state_mb"] == pytest.approx(replica["ranks"][0]["state_mb"], rel=1e-4)


def test_paged_kv(tmp_path: Path) -> None:
    result = run_benchmark(
        "paged_kv.py", tmp_path, "--quick", "--long", "64", "--short", "16", "--budget", "65536",
        "--batch", "2", "--span", "32", "--repeats", "1",
    )  # fmt: skip
    has_keys(result, "memory", "budget_sequences", "step_s", "step_ratio_paged", "cpu_flags",
             "kv_bytes_per_position", "paged_step_gathered_pieces", "machine")  # fmt: skip
    paged, contiguous = result["memory"]["paged"], result["memory"]["contiguous"]
    assert paged["per_active"] < contiguous["per_active"]  # a counted fact, not a timing


def test_moe_replay(tmp_path: Path) -> None:
    result = run_benchmark(
        "moe_replay.py", tmp_path, "--quick", "--prompts", "8", "12", "--new", "4"
    )
    has_keys(result, "tiny-moe", "machine")
    assert result["tiny-moe"]["float32"]["flips"] == 0.0  # fp32 engine and trainer agree


def test_train_autocast(tmp_path: Path) -> None:
    result = run_benchmark(
        "train_autocast.py", tmp_path, "--quick", "--tokens", "64", "--generated", "16",
        "--repeats", "1",
    )  # fmt: skip
    has_keys(result, "fp32", "bf16_autocast", "ratio", "machine")
    fp32, bf16 = result["fp32"], result["bf16_autocast"]
    assert bf16["first_loss"] == pytest.approx(fp32["first_loss"], rel=5e-2)  # same weights, batch
    assert bf16["first_loss"] != fp32["first_loss"]  # the bf16 arm really ran in bf16


def test_cpu_attention(tmp_path: Path) -> None:
    result = run_benchmark("cpu_attention.py", tmp_path, "--quick")
    has_keys(result, "settings", "machine", "cases")
    [case] = result["cases"]
    assert case["rows"] == 2 and set(case["ms_per_step"]) == {"native", "torch"}
    assert case["floor_ms"] > 0 and case["torch_over_native"] > 0


def test_cpu_decode(tmp_path: Path) -> None:
    result = run_benchmark("cpu_decode.py", tmp_path, "--quick")
    has_keys(result, "settings", "machine", "cases")
    [case] = result["cases"]
    modes = {"layers", "products", "torch", "layers_bf16_kv", "layers_paged", "products_paged",
             "layers_bf16", "torch_bf16"}  # fmt: skip
    assert case["rows"] == 2 and set(case["ms_per_step"]) == modes
    assert case["over_layers"]["layers"] == 1.0 and case["floor_ms"] > 0
    assert case["kv_floor_ms"] > 0 and case["stream_gbs"] > 0
    by_mode = case["kv_floor_ms_by_mode"]  # a bf16 cache reads half the bytes
    assert by_mode["layers_bf16_kv"] == pytest.approx(by_mode["layers"] / 2)
    for mode, multiple in case["multiple_of_floor_with_kv"].items():
        assert multiple < case["multiple_of_floor"][mode]  # the KV read adds to the floor


def test_cpu_linear(tmp_path: Path) -> None:
    result = run_benchmark("cpu_linear.py", tmp_path, "--quick")
    has_keys(result, "settings", "machine", "note", "stream_gbs", "cases", "native_over_1row")
    assert [c["rows"] for c in result["cases"]] == [1, 4]
    assert result["layers"] == 2 * 7 + 1 and "load" in result["note"]
    for case in result["cases"]:
        assert set(case["ms"]) == {"torch", "native"} and case["torch_over_native"] > 0


@pytest.mark.skipif(platform.machine() != "x86_64", reason="AVX2 paths are x86's")
def test_cpu_linear_on_avx2_paths(tmp_path: Path) -> None:
    """`--isa avx2` reaches torch: its dispatch reports AVX2 even on an AVX-512 CPU."""
    result = run_benchmark("cpu_linear.py", tmp_path, "--quick", "--isa", "avx2")
    assert result["machine"]["cpu_capability"] == "AVX2"
    assert result["isa_env"]["ATEN_CPU_CAPABILITY"] == "avx2"
    assert result["settings"]["isa"] == "avx2" and len(result["cases"]) == 2


def test_grading_cost(tmp_path: Path) -> None:
    require(unavailable_reason(), "overlay sandbox")
    result = run_benchmark("grading_cost.py", tmp_path, "--quick")
    has_keys(result, "settings", "tasks", "machine")
    has_keys(result["machine"], "cpu_flags", "load_avg_1m", "git_commit")
    assert result["settings"]["repeats"] == 1
    easy, family = result["tasks"]  # --quick: a canaried easy task, a cheap-path family one
    assert (easy["tier"], family["tier"]) == ("easy", "family")
    assert not easy["cheap_path"] and easy["canary_ids"] > 0
    assert family["cheap_path"] and not family["first_built_plan"]
    for row in (easy, family):
        has_keys(row, "plain_s", "unwatched_s", "watched_s", "verdict_s", "first_verdict_s")
        assert set(row["ratios"]) == {"unwatched/plain", "watched/plain", "verdict/plain"}
        assert all(len(runs) == 1 for runs in row["runs_s"].values())
        assert all(row["all_passed"].values()), row["all_passed"]  # gold passes every arm
