"""Draw N fresh train-part family instances whose bugs no earlier pilot set held.

python gen.py SEED N OUT.jsonl   (ran as: seeds 120 and 121, N 210 each; paths as on
the box it ran on)
"""

import json
import sys
import time
from pathlib import Path

from shadowrl.tasks import build_env, env_python
from shadowrl.tasks.family.stream import FamilyStream
from shadowrl.tasks.task import load_tasks

seed, n, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
L = Path("/work/main/docs/results/learning")
excl = [
    L / "pilot-dev5c/tasks/train.jsonl",
    L / "pilot-dev5c/tasks/seeds32.jsonl",
    L / "pilot-dev6/tasks/seeds48.jsonl",
    L / "pilot-dev10/tasks/train24.jsonl",
    L / "pilot-dev7/tasks/rl_stream.jsonl",
    L / "pilot-dev8/tasks/rl_stream.jsonl",
    L / "pilot-dev9/tasks/rl_stream.jsonl",
]
cache = Path("~/.cache/shadowrl").expanduser()
python = env_python(build_env(("pytest",), cache))
log = out.with_suffix(".excluded.jsonl")
ids = set()
with log.open("w") as f:
    for p in excl:
        for t in load_tasks(p):
            if t.instance_id not in ids:
                ids.add(t.instance_id)
                f.write(json.dumps(t.model_dump(mode="json")) + "\n")
s = FamilyStream(python, cache, log, seed=seed)
print("excluded bugs", len(s.seen), flush=True)
t0 = time.time()
with out.open("a") as f:
    for i in range(n):
        inst = s._draw()
        f.write(json.dumps(inst.task.model_dump(mode="json")) + "\n")
        f.flush()
        if i % 20 == 0:
            print(i, round(time.time() - t0, 1), inst.task.repo, flush=True)
s.close()
