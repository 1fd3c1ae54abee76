"""The trainer's forward + backward in fp32 and under bf16 autocast, on real agent rows
(plan.md, 2026-12-07 23:20 UTC addendum; run at 23:06 UTC, load 0.20, alone, before the LM
head left autocast: `head_fp32` patches `_chunk_logits` to what loss.py now does).

    PYTHONPATH=src python docs/results/learning/pilot-dev26/precision.py

Needs pilot 14's SFT start in runs/pilot14 and pilot 25's demos in runs/pilot25 (not
committed). 16 segments row by row at T 0.6; prints the time of each setting, its ratio to
fp32 and the absolute logprob differences from fp32 on the trained tokens.
"""

import json
import time

import torch

import shadowrl.rl.loss as L
from shadowrl.models import ModelConfig, load_model
from shadowrl.rl.forward import token_logprobs

torch.manual_seed(0)
m = load_model(ModelConfig(path="runs/pilot14/sft/step_00000160"))[0].float()
rows = []
with open("runs/pilot25/sft.demos.jsonl") as demos:
    for line in demos:
        for s in json.loads(line)["segments"]:
            rows.append((s["token_ids"], s["loss_mask"]))
        if len(rows) >= 16:
            break
rows = rows[:16]
print("lens", [len(r[0]) for r in rows], "trained", sum(sum(r[1]) for r in rows))


def run(mode, head_fp32):
    orig = L._chunk_logits
    if head_fp32:

        def ck(h, w, b):
            with torch.autocast("cpu", enabled=False):
                return torch.nn.functional.linear(
                    h.float(), w.float(), None if b is None else b.float()
                )

        L._chunk_logits = ck
    out, t0 = [], time.perf_counter()
    for ids, mask in rows:
        x = torch.tensor([ids])
        mk = torch.tensor([mask])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "bf16"):
            lp = token_logprobs(m, x, mk, temperature=0.6)
        lp[mk].sum().backward()
        out.append(lp[mk].detach())
    L._chunk_logits = orig
    m.zero_grad(set_to_none=True)
    return torch.cat(out), time.perf_counter() - t0


ref, t32 = run("fp32", False)
print("fp32 s", round(t32, 1))
for head in (False, True):
    lp, t = run("bf16", head)
    d = (lp - ref).abs()
    print(
        "bf16 head_fp32",
        head,
        "s",
        round(t, 1),
        "ratio",
        round(t / t32, 2),
        "mean|d|",
        d.mean().item(),
        "p99",
        d.quantile(0.99).item(),
        "max",
        d.max().item(),
        "mean d",
        (lp - ref).mean().item(),
    )
