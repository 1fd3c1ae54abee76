"""Split dev pilot 5's 450 family train instances (plan.md, addendum of 2026-12-03): the
first 320 for SFT, then of the other 130 one per template (`stratified`) as held-out
seeds, the rest for RL. Writes train.jsonl (SFT's then RL's) and seeds32.jsonl."""

import sys
from pathlib import Path

from shadowrl.tasks import load_suite
from shadowrl.tasks.task import save_tasks, stratified

source, out = sys.argv[1], Path(sys.argv[2])
tasks = load_suite(source)
sft, rest = tasks[:320], tasks[320:]
seeds = stratified(rest, 32)
held = {t.instance_id for t in seeds}
rl = [t for t in rest if t.instance_id not in held]
save_tasks(sft + rl, out / "train.jsonl")
save_tasks(seeds, out / "seeds32.jsonl")
print(f"sft {len(sft)}, rl {len(rl)}, seeds {len(seeds)} over {len({t.repo for t in seeds})} templates")
