from pathlib import Path

import pytest

from shadowrl.commands.config import Config, load_config, parse_overrides
from shadowrl.commands.errors import UsageError
from shadowrl.commands.main import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_overrides_are_typed_and_nested():
    cfg = load_config(
        [], ["--train.optimizer.lr=3e-6", "--sandbox.limits.pids=50", "--orchestrator.mode=sync"]
    )
    assert cfg.train.optimizer.lr == 3e-6
    assert cfg.sandbox.limits.pids == 50 and cfg.orchestrator.mode == "sync"


def test_the_flat_train_keys_of_old_configs_still_load_under_their_new_names(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    old = tmp_path / "old.yaml"
    old.write_text("train: {lr: 1.0e-5, sft_epochs: 1, weights_url: s3://b/w, steps: 3}\n")
    cfg = load_config([old], ["--train.max_staleness=4"])
    assert (cfg.train.optimizer.lr, cfg.train.sft.epochs) == (1e-5, 1)
    assert (cfg.train.weights.url, cfg.train.batch.max_staleness, cfg.train.steps) == (
        "s3://b/w", 4, 3,
    )  # fmt: skip
    assert "'train.lr' is now 'train.optimizer.lr'" in caplog.text
    with pytest.raises(ValueError, match=r"both 'train\.lr' and its new name"):
        load_config([], ["--train.lr=1", "--train.optimizer.lr=2"])


REMOVED = [  # key -> the field that replaces it (one field per meaning, issue 31)
    ("model.seed", "seed"),
    ("train.seed", "seed"),
    ("mtp.seed", "seed"),
    ("model.dtype", "train.dtype"),
    ("realtime.users.seed", "realtime.users.population"),
]


@pytest.mark.parametrize(("old", "new"), REMOVED)
def test_a_removed_key_fails_at_load_with_one_line_naming_its_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str
):
    path = tmp_path / "old.yaml"
    *sections, key = old.split(".")
    text = "".join(f"{'  ' * i}{s}:\n" for i, s in enumerate(sections))
    path.write_text(text + f"{'  ' * len(sections)}{key}: 0\n")
    with pytest.raises(UsageError, match=rf"{path}: config key '{old}' was removed; set {new}\b"):
        load_config([path])
    assert main(["config", f"--{old}=0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"config key '{old}' was removed; set {new}" in err, err


def test_unknown_key_and_bad_value_are_refused():
    with pytest.raises(ValueError, match="bogus"):
        load_config([], ["--train.bogus=1"])
    with pytest.raises(ValueError):
        load_config([], ["--orchestrator.mode=sometimes"])
    with pytest.raises(ValueError, match=r"section\.key=value"):
        parse_overrides(["train.lr=1"])


def test_yaml_files_merge_left_to_right(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("train: {optimizer: {lr: 0.1}, steps: 3}\n")
    b.write_text("train: {optimizer: {lr: 0.2}}\n")
    cfg = load_config([a, b], ["--train.steps=4"])
    assert (cfg.train.optimizer.lr, cfg.train.steps) == (0.2, 4)


def test_default_yaml_is_every_field_at_its_default(capsys: pytest.CaptureFixture[str]):
    # configs/default.yaml is `shadowrl config`'s output: every field, and it loads to
    # exactly what a command does with no config (after a change: regenerate it)
    assert main(["config"]) == 0
    assert (CONFIGS / "default.yaml").read_text() == capsys.readouterr().out, (
        "configs/default.yaml is stale: shadowrl config > configs/default.yaml"
    )
    assert load_config([CONFIGS / "default.yaml"]) == Config()


def test_config_prints_what_a_run_reads(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    assert main(["config", "--train.steps=2", "--serve.traces=null"]) == 0
    (tmp_path / "c.yaml").write_text(capsys.readouterr().out)
    assert load_config([tmp_path / "c.yaml"]) == load_config(
        [], ["--train.steps=2", "--serve.traces=null"]
    )


def test_every_config_ships_valid():
    for path in CONFIGS.glob("*.yaml"):
        load_config([path])


def test_every_field_is_documented():
    def walk(model: type) -> list[str]:
        missing = []
        for name, field in model.model_fields.items():
            if not field.description:
                missing.append(f"{model.__name__}.{name}")
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                missing += walk(ann)
        return missing

    assert walk(Config) == []


def test_digest_changes_with_content():
    assert Config().digest() == Config().digest()
    assert Config().digest() != load_config([], ["--seed=1"]).digest()
