"""SFT's early stopping on held-out demonstrations, on a tiny random Llama: it stops when
the held-out NLL rises, keeps the best check's weights, and trains through when it falls."""

import torch

from rl.test_trainer import cfg, params, tiny, traj
from shadowrl.rl.sft import Validation, demo_scores, nll_and_entropy, run_sft
from shadowrl.rl.trainer import Trainer

TRAIN = [traj(0.0, [1, 2, 3], [20, 21, 22, 23]) for _ in range(8)]  # one step each
OTHER = [traj(0.0, [1, 2, 3], [30, 31, 32, 33])]  # the same prompt, another answer


def test_it_stops_once_the_held_out_nll_rises_and_keeps_the_best_weights():
    trainer = Trainer(tiny(), cfg(sft_lr=1e-2), objective="sft")
    start = params(trainer.model)
    run = run_sft(
        trainer, TRAIN, epochs=1, batch_tokens=4, validation=Validation(OTHER, every=1, patience=2)
    )
    nlls = [c.score.nll for c in run.checks]
    assert [c.step for c in run.checks] == [0, 1, 2]  # stopped after 2 checks without a best
    assert nlls[1] > nlls[0] and nlls[2] > nlls[0]
    assert run.stopped == "patience" and run.best_step == 0 and len(run.history) == 2
    for k, v in trainer.model.state_dict().items():  # the step-0 weights are back
        assert torch.equal(v, start[k]), k
    assert demo_scores(trainer.model, OTHER).nll == nlls[0]


def test_it_trains_through_while_the_held_out_nll_falls():
    trainer = Trainer(tiny(), cfg(sft_lr=1e-2), objective="sft")
    run = run_sft(
        trainer, TRAIN, epochs=1, batch_tokens=4, validation=Validation(TRAIN[:1], every=2)
    )
    assert [c.step for c in run.checks] == [0, 2, 4, 6, 8]
    assert run.stopped == "data" and run.best_step == 8 and len(run.history) == 8
    assert run.checks[-1].score.nll < 0.5 * run.checks[0].score.nll
    assert run.best is run.checks[-1]


def test_a_wall_time_budget_ends_it_after_the_step_in_progress():
    trainer = Trainer(tiny(), cfg(sft_lr=1e-2), objective="sft")
    run = run_sft(trainer, TRAIN, epochs=1, batch_tokens=4, budget_s=0.0)
    assert run.stopped == "budget" and len(run.history) == 1 and run.best_step == 1


def test_entropy_and_nll_by_hand():
    # two tokens: a uniform pair (entropy ln 2, target p = 1/2) and a certain one (0, p = 1)
    logits = torch.tensor([[0.0, 0.0], [0.0, -1e4]])
    nll, ent = nll_and_entropy(logits, torch.tensor([1, 0]))
    assert abs(float(nll) - 0.6931472) < 1e-6 and abs(float(ent) - 0.6931472) < 1e-6
    score = demo_scores(tiny(), OTHER)
    assert score.tokens == 4 and 0 < score.entropy <= torch.log(torch.tensor(128.0)).item()
