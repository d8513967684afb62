"""One RL step's row of metrics.jsonl (schema: docs/metrics.md), assembled from the step's records: every
documented key, every step, NaN where not applicable; the statistics themselves are `searchrl.analysis.diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from searchrl.algorithms import Loss, PolicyBatch, policy_loss_names
from searchrl.analysis.diagnostics import (
    average_diagnostics,
    calibadv_diagnostics,
    rollout_diagnostics,
    token_diagnostic_keys,
    token_diagnostics,
    turn_kind_from_mask,
)
from searchrl.rollout.types import Trajectory

if TYPE_CHECKING:
    from searchrl.training.state import Trainer
from searchrl.training.forward import StepForward, collate, pad_per_token, split_indices

NAN = float("nan")


@dataclass
class UpdateRecord:
    """What the optimiser updates of a step recorded, for the step's metrics."""

    loss_metrics: list[dict[str, float]] = field(default_factory=list)  # Objective.loss metrics, per micro-batch
    token_diags: list[dict[str, Any]] = field(default_factory=list)  # token_diagnostics, per micro-batch
    penalties: list[str] = field(default_factory=list)  # the objective's penalties, by name
    grad_norms: list[float] = field(default_factory=list)  # one per update
    nonfinite_skips: int = 0  # updates skipped for a non-finite loss or gradient
    zero_grad_updates: int = 0  # updates whose gradient was exactly zero (no optimiser step)
    count: int = 0  # updates attempted

    def add_micro_batch(self, batch: PolicyBatch, loss: Loss) -> None:
        self.loss_metrics.append({k: float(v) for k, v in loss.metrics.items()})
        base, *penalties = loss.terms  # the base loss first, then the penalties (Objective.loss's order)
        self.penalties = penalties
        self.token_diags.append(token_diagnostics(
            log_probs=batch.log_probs.detach(), old_log_probs=batch.old_log_probs, advantages=batch.advantages,
            response_mask=batch.response_mask, turn_kind=turn_kind_from_mask(batch.response_mask),
            entropy=batch.entropy.detach() if batch.entropy is not None else None,
            base_acting=loss.terms[base].acting, penalty_acting={n: loss.terms[n].acting for n in penalties},
        ))

    def add_update(self, grad_norm: float, *, finite: bool, stepped: bool) -> None:
        self.grad_norms.append(grad_norm)
        self.nonfinite_skips += not finite
        self.zero_grad_updates += finite and not stepped
        self.count += 1


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else NAN


def empty_search_share(trajectories: Sequence[Trajectory]) -> float:
    """Share of the executed searches whose retrieval returned no passage (NaN when none was executed). A lexical
    retriever returns nothing for a query none of whose words is in the corpus: an agent that searches for the
    instruction's placeholder (`<search>query</search>`) reads empty `<information>` blocks (docs/experiments.md,
    the on-policy control's off-policy seed 3). A search that ended on a retrieval error is not counted."""
    executed = empty = 0
    for tr in trajectories:
        for k, turn in enumerate(tr.turns):
            if turn.action != "search" or turn.query is None:
                continue  # not executed: the final turn's search, or no search
            if tr.finish_reason == "retrieval_error" and k == len(tr.turns) - 1:
                continue
            executed += 1
            empty += not turn.doc_ids
    return empty / executed if executed else NAN


def step_metrics(
    trajectories: Sequence[Trajectory],
    *,
    loss_mask: torch.Tensor,
    rewards: torch.Tensor,
    advantages: torch.Tensor,
    old_log_probs: torch.Tensor,
    group_ids: Sequence[str],
    turn_scores: list[list[float]] | None,
    updates: UpdateRecord,
    lr: float,
) -> dict[str, float]:
    """The step's row of metrics.jsonl (docs/metrics.md), each key computed once: the loss's own values under
    `actor/`, the rollout's under `env/` and `reward/`, statistics of the ratio, clipping, entropy, likelihood and
    behaviour under `diag/` (searchrl.analysis.diagnostics)."""
    n = len(trajectories)
    extras = [tr.extras for tr in trajectories]
    per_micro = lambda key: [mm.get(key, NAN) for mm in updates.loss_metrics]  # noqa: E731
    m: dict[str, float] = {}
    m["reward/mean"] = float(rewards.mean()) if n else NAN
    m["reward/std"] = float(rewards.std()) if n > 1 else NAN
    m["actor/loss"] = _mean(per_micro("loss"))
    # As the official SAPO code logs it: the base loss plus the weighted penalty terms.
    m["actor/pg_loss"] = _mean([a + b for a, b in zip(per_micro("pg_loss"), per_micro("penalty"))])
    m["actor/penalty"] = (
        _mean([sum(mm.get(f"penalty/{p}", NAN) for p in updates.penalties) for mm in updates.loss_metrics])
        if updates.penalties else NAN
    )
    m["actor/kl_ref"] = _mean(per_micro("kl_ref"))
    m["actor/ppo_kl"] = _mean(per_micro("ppo_kl"))
    m["actor/grad_norm"] = _mean(updates.grad_norms)
    m["actor/lr"] = lr
    m["actor/updates"] = float(updates.count)
    m["actor/nonfinite_skips"] = float(updates.nonfinite_skips)
    m["actor/zero_grad_updates"] = float(updates.zero_grad_updates)
    m["env/em"] = sum(float(x.get("em", 0.0)) for x in extras) / n
    m["env/f1"] = sum(float(x.get("f1", 0.0)) for x in extras) / n
    m["env/answered"] = sum(tr.answer is not None for tr in trajectories) / n
    m["env/retrieval_errors"] = float(sum(tr.finish_reason == "retrieval_error" for tr in trajectories))
    m["env/empty_search_share"] = empty_search_share(trajectories)
    m["env/answer_in_retrieval"] = sum(bool(x.get("answer_in_retrieval", False)) for x in extras) / n
    m["response/sampled_length_mean"] = sum(sum(tr.response_mask) for tr in trajectories) / n

    # Diagnostics: token-level ones averaged over the micro-batches of all updates, rollout-level ones once.
    diag = average_diagnostics(updates.token_diags) if updates.token_diags else {}
    for key in token_diagnostic_keys():
        m[key] = float(diag.get(key, NAN))
    sampling = pad_per_token([tr.sampling_logprobs for tr in trajectories], old_log_probs.shape[1])
    sampling = sampling.to(old_log_probs.device)  # one copy to the training device, not one per trajectory
    turn_kind = turn_kind_from_mask(loss_mask)
    m.update(rollout_diagnostics(
        old_log_probs=old_log_probs, response_mask=loss_mask, advantages=advantages, rewards=rewards,
        format_valid=[bool(x.get("format_valid", False)) for x in extras],
        num_searches=[tr.num_searches for tr in trajectories],
        response_lengths=[len(tr.response_ids) for tr in trajectories],
        turn_kind=turn_kind, group_ids=list(group_ids), sampling_log_probs=sampling,
    ))
    # A step whose every group is all-equal carries no advantage signal (GRPO's gradient is then zero).
    m["train/dead_step"] = float(m["diag/zero_adv_group_share"] == 1.0)
    seq_adv = (advantages * loss_mask).sum(-1) / loss_mask.sum(-1).clamp(min=1)  # (N,)
    m.update(calibadv_diagnostics(
        turn_scores=turn_scores, advantages_seq=seq_adv, group_ids=list(group_ids),
        rewards_f1=[float(x.get("f1", 0.0)) for x in extras],
        format_valid=[bool(x.get("format_valid", False)) for x in extras],
    ))
    for name in policy_loss_names("penalty"):
        m[f"diag/{name}_active"] = _mean([mm.get(f"penalty/{name}_active", NAN) for mm in updates.loss_metrics])
    m["diag/nonfinite_count"] = float(
        sum(not math.isfinite(mm.get("loss", 0.0)) for mm in updates.loss_metrics)
        + sum(not math.isfinite(g) for g in updates.grad_norms)
    )
    return m


def probe_log_likelihood(t: Trainer) -> float:
    """Mean token log-likelihood of the fixed probe trajectories (`log.probe_trajectories`) under the policy now:
    the likelihood of the same correct responses, step after step (LLD, LLDS arXiv 2512.04220 Fig. 2)."""
    total, count = 0.0, 0
    was_training = t.model.training
    t.model.eval()
    with torch.no_grad():
        for rows in split_indices(len(t.probe), t.cfg.train.micro_batch_size):
            batch = collate([t.probe[i] for i in rows], t.pad_id).to(t.device)
            forward = StepForward(t.model, batch, temperature=1.0, bf16=t.cfg.train.bf16,
                                  chunk_size=t.cfg.train.logprob_chunk_size, fast=False)
            log_probs, _ = forward(list(range(len(rows))))
            total += float((log_probs * batch.response_mask).sum())
            count += int(batch.response_mask.sum())
    t.model.train(was_training)
    return total / max(count, 1)
