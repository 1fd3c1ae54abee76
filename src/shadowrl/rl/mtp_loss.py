"""The MTP self-distillation loss and its agreement metrics: pure functions of logits.

Head j at position t is trained toward the main LM head's distribution at position
t+j+1 (the token t+j+2), so the heads learn to say what the main model would say k
tokens on, including its uncertainty, not merely the data's next-next token. The
teacher side is detached here, whatever the caller passes: the loss can only ever
move the heads (the backbone's hidden states are detached by the caller, `mtp_distill`).
"""

from __future__ import annotations

import torch
from torch import Tensor


def mtp_distill_loss(
    head_logits: Tensor, teacher_logits: Tensor, temperature: float = 1.0
) -> tuple[Tensor, Tensor]:
    """KL(teacher || head) at each of K draft positions.

    head_logits, teacher_logits [N, K, V]: the heads' and the main head's logits for the
    same K future tokens of N windows. Returns (mean over windows and heads, per-head
    mean KL [K], detached). `temperature` softens both sides alike (1 = the serving
    distribution that rollouts sample from).
    """
    teacher = (teacher_logits.detach().float() / temperature).log_softmax(dim=-1)
    student = (head_logits.float() / temperature).log_softmax(dim=-1)
    kl = (teacher.exp() * (teacher - student)).sum(dim=-1)  # [N, K]
    per_head = kl.mean(dim=0)
    return per_head.mean(), per_head.detach()


@torch.no_grad()
def agreement(head_logits: Tensor, teacher_logits: Tensor) -> dict[str, list[float]]:
    """How well each draft position would be accepted, per head [K] (teacher-forced):

    top1      P(head argmax == main argmax): greedy acceptance of that position alone
    chain     P(heads 1..j all agree): greedy acceptance of position j after the others
    overlap   E[sum_v min(p, q)] = 1 - TV(p, q): the acceptance rate of rejection
              sampling at temperature 1, and about that of the coupled exact rule
    """
    p = teacher_logits.float().softmax(dim=-1)
    q = head_logits.float().softmax(dim=-1)
    agree = head_logits.argmax(dim=-1) == teacher_logits.argmax(dim=-1)  # [N, K]
    chain = agree.long().cumprod(dim=1).float()
    overlap = torch.minimum(p, q).sum(dim=-1)
    return {
        "top1": agree.float().mean(dim=0).tolist(),
        "chain": chain.mean(dim=0).tolist(),
        "overlap": overlap.mean(dim=0).tolist(),
    }
