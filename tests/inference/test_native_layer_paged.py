"""The C decoder layer over the paged KV cache: it reads and writes the pool through the
block table, rows whose blocks are scattered included, as the PyTorch layers do.

No skip: the C layer must build here (as in `test_native_layer.py`).
"""

from __future__ import annotations

import math

import pytest
import torch
from test_native_layer import KV_ATOL, LOGITS_ATOL, MODELS, counted, decode_steps, engine, prompts
from torch import Tensor

from shadowrl.inference.engine import Engine
from shadowrl.inference.paged import PagedKV
from shadowrl.types import SamplingParams

PAGED = dict(kv="paged", kv_block_size=4)  # small blocks: every row spans many
# bf16 keys near a rounding boundary may round to the neighbouring value in one path and
# not the other (test_kv_dtype.py): 2e-3 is that test's bound for the same models.
LOGITS_ATOL_BF16 = 2e-3


def written(cache: PagedKV, layer: int, rows: list[int], ends: list[int]) -> list[Tensor]:
    """Each row's keys and values up to its end, gathered block by block from the pool."""
    out = []
    for row, end in zip(rows, ends, strict=True):
        blocks = cache.rows[row][: math.ceil(end / cache.block_size)]
        for pool in (cache.keys[layer], cache.values[layer]):
            out.append(pool[:, blocks].flatten(1, 2)[:, :end].float())
    return out


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("kv_dtype", ["float32", "bfloat16"])
def test_decode_steps_over_the_paged_cache_match_the_torch_layers(arch, kv_dtype) -> None:
    model = MODELS[arch](0)
    lengths = [1, 5, 40, 299, 17]  # a partly filled last block, and a row crossing blocks
    config = dict(max_batch=len(lengths), kv_dtype=kv_dtype, **PAGED)
    engines = {mode: engine(model, mode, **config) for mode in ("native", "torch")}
    calls = counted(engines["native"])
    logits = {mode: decode_steps(eng, lengths, steps=5) for mode, eng in engines.items()}
    assert calls == [len(lengths)] * 5 * 2  # the C layer took every step over the pool
    atol = LOGITS_ATOL if kv_dtype == "float32" else LOGITS_ATOL_BF16
    torch.testing.assert_close(logits["native"], logits["torch"], atol=atol, rtol=0)
    ends = [n + 5 for n in lengths]
    for layer in range(2):
        got = written(engines["native"].cache, layer, list(range(len(lengths))), ends)
        want = written(engines["torch"].cache, layer, list(range(len(lengths))), ends)
        for a, b in zip(got, want, strict=True):  # bf16: a value may sit one step apart
            torch.testing.assert_close(
                a, b, atol=KV_ATOL, rtol=0 if kv_dtype == "float32" else 2**-7
            )


def shared_prompt_steps(eng: Engine, prompt: list[int], group: int, steps: int) -> Tensor:
    """A GRPO group: `prompt` prefilled once into slot 0 and shared by slots 1.., whose
    first write copies the shared, partly filled last block elsewhere (copy on write);
    then `steps` decode steps with other tokens per row: their logits [steps, group, V]."""
    cache, n = eng.cache, len(prompt)
    with torch.inference_mode():
        cache.prepare([0], [0], [n])
        eng.decoder.prefill([prompt], [0], cache)
        cache.broadcast(0, list(range(1, group)), n)
        out = []
        for step in range(steps):
            cache.prepare(range(group), [n + step] * group, [n + step + 1] * group)
            tokens = torch.arange(group) * 11 + 3 + step
            lengths = torch.full((group,), n + step)
            out.append(eng.decoder.decode(tokens, lengths, cache, n + step + 1))
    return torch.stack(out)


def test_scattered_rows_of_a_shared_prompt_are_read_in_place_through_the_table() -> None:
    """The RL case: members of a group share the prompt's blocks and each copied the last
    one elsewhere, so no member's blocks are consecutive, and nothing is gathered."""
    model, prompt, group = MODELS["llama"](0), prompts(301)[0], 4  # 301: a partial block
    engines = {mode: engine(model, mode, max_batch=group, **PAGED) for mode in ("native", "torch")}
    calls = counted(engines["native"])
    logits = {mode: shared_prompt_steps(eng, prompt, group, 6) for mode, eng in engines.items()}
    assert calls == [group] * 6 * 2
    torch.testing.assert_close(logits["native"], logits["torch"], atol=LOGITS_ATOL, rtol=0)
    cache = engines["native"].cache
    assert isinstance(cache, PagedKV)
    blocks = math.ceil((len(prompt) + 6) / cache.block_size)
    scattered = [r for r in range(group) if cache.consecutive(r) < blocks]
    assert len(scattered) >= group - 1  # every copying member at least
    assert cache.gathered_pieces == 0  # the C layer read the pool where it lies
    assert engines["torch"].cache.gathered_pieces > 0  # PyTorch's layers gathered them
    # The members share every full prompt block: one copy of the prompt's keys.
    rows = [cache.rows[r] for r in range(group)]
    assert all(
        row[: len(prompt) // cache.block_size] == rows[0][: len(prompt) // 4] for row in rows
    )


def test_greedy_generation_over_the_paged_cache_equals_the_torch_layers() -> None:
    """Whole engines, the prefix cache on and each prompt twice (rows that share blocks):
    the same greedy tokens."""
    model = MODELS["qwen2"](0)
    system = prompts(90, seed=3)[0]
    ps = [system + p for p in prompts(7, 30, 13, seed=5) for _ in range(2)]
    params = SamplingParams(max_new_tokens=24, temperature=0.0)
    out = {}
    for mode in ("native", "torch"):
        eng = engine(model, mode, max_batch=6, initial_kv_len=16, **PAGED)
        calls = counted(eng) if mode == "native" else []
        out[mode] = [g.token_ids for g in eng.generate_batch(ps, params)]
        assert mode == "torch" or calls  # the C layer ran the decode steps
    assert out["native"] == out["torch"]


def test_a_position_without_its_block_is_refused_before_any_write() -> None:
    eng = engine(MODELS["llama"](0), "native", max_batch=2, **PAGED)
    eng.cache.prepare([0, 1], [0, 0], [4, 8])  # slot 0 holds one block, slot 1 two
    before = [k.clone() for k in eng.cache.keys]
    with torch.inference_mode(), pytest.raises(IndexError, match="blocks for"):
        eng.decoder.decode(torch.tensor([5, 6]), torch.tensor([4, 3]), eng.cache, 5)
    assert all(torch.equal(a, b) for a, b in zip(before, eng.cache.keys, strict=True))
