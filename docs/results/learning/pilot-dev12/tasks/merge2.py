"""Merge the two streams with the earlier pilots' RL-only tasks into sft395.jsonl (as ran;
paths as on the box it ran on; the committed file's seed paths were then made relative
to it, the family's seed as pilot 5c ships it)."""

import itertools
import json
import random
from collections import Counter

from shadowrl.tasks.family.stream import bug_key
from shadowrl.tasks.task import load_tasks

L = "/work/main/docs/results/learning/"
a, b = load_tasks("/tmp/p12w/new_120.jsonl"), load_tasks("/tmp/p12w/new_121.jsonl")
t24 = load_tasks(L + "pilot-dev10/tasks/train24.jsonl")
sft320 = load_tasks(L + "pilot-dev5c/tasks/train.jsonl")[:320]
held = load_tasks(L + "pilot-dev6/tasks/seeds48.jsonl") + load_tasks(
    L + "pilot-dev5c/tasks/seeds32.jsonl"
)
never = {bug_key(t) for t in t24 + sft320 + held}
sites = {t.source for t in t24}
fresh = [t for t in itertools.chain.from_iterable(itertools.zip_longest(a, b)) if t is not None]
old = (
    load_tasks(L + "pilot-dev5c/tasks/train.jsonl")[320:]
    + load_tasks(L + "pilot-dev8/tasks/rl_stream.jsonl")
    + load_tasks(L + "pilot-dev7/tasks/rl_stream.jsonl")
    + load_tasks(L + "pilot-dev9/tasks/rl_stream.jsonl")
)
seen, out, drop = set(), [], Counter()
for src, ts in (("fresh", fresh), ("rl-only", old)):
    for t in ts:
        k = bug_key(t)
        why = "never" if k in never else "site" if t.source in sites else "dup" if k in seen else ""
        if why:
            drop[f"{src}:{why}"] += 1
            continue
        seen.add(k)
        out.append((src, t))
print(drop, Counter(s for s, _ in out), "templates", len(Counter(t.repo for _, t in out)))
print("sft320 sites shared with train24:", sum(t.source in sites for t in sft320))
rows = [t for _, t in out]
random.Random(12).shuffle(rows)
with open(L + "pilot-dev12/tasks/sft395.jsonl", "w") as f:
    for t in rows:
        f.write(json.dumps(t.model_dump(mode="json")) + "\n")
print("written", len(rows))
