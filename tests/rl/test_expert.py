import difflib

from shadowrl.rl.expert import expert_replies, parse_patch


def _diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
        )
    )


def test_parse_patch_gives_replacements_that_reproduce_the_fix():
    before = "def f(x):\n    if x > 1:\n        return x\n    return 0\n\n\ndef g():\n    return 1\n"
    after = before.replace("x > 1", "x >= 1").replace("return 1", "return 2")
    hunks = parse_patch(_diff("pkg/mod.py", before, after))
    assert {h.path for h in hunks} == {"pkg/mod.py"}
    text = before
    for h in hunks:
        assert text.count(h.old) == 1
        text = text.replace(h.old, h.new)
    assert text == after


def test_expert_replies_read_edit_test_submit():
    before = "a = 1\nb = 2\n"
    replies = expert_replies(_diff("m.py", before, "a = 1\nb = 3\n"), test_cmd="python -m pytest -q")
    names = [r.split('"name": "')[1].split('"')[0] for r in replies]
    assert names == ["read_file", "edit_file", "run", "submit"]
