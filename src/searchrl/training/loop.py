"""The RL loop: GRPO-family training of a search agent, readable top to bottom.

    train(cfg)                      # searchrl train --config demo.yaml
      set up: data, retriever, policy (+LoRA), objective, optimiser, rollout engine, monitor, run folder
      warm start (optional SFT) and the starting-point evaluation        (skipped when resuming)
      for step in 1..steps:         rl_step() below, then validate / save samples / checkpoint / monitor
      final evaluation, final_model/, summary

One RL step (`rl_step`) is, in order:
  1. sample B questions; G rollouts each, one group id per question (the question's uid)
  2. rewards
  3. advantages from the configured estimator                                         [ALGO]
  4. old log-probs (and reference log-probs when the KL coefficient is set), no grad
  5. ppo_epochs × (B·G / mini_batch_size) optimiser updates, each accumulating the gradient of
     mini_batch_size / micro_batch_size micro-batches of the registry's loss                  [ALGO]
     (Search-R1 does 10 updates per rollout batch; importance ratios drift from the 2nd update on, the
     regime where SAPO's and LLDS's penalties act.)
  6. metrics (docs/metrics.md), diagnostics

Lines marked [ALGO] are the method; the rest is plumbing. No line here compares an algorithm's name: the
`Objective` built from the `algorithm:` section says what it needs (reference log-probs, entropy, turn scores,
answer mask) and computes advantages and the loss.

Determinism: the data order, the rollout sampling seed and the mini-batch shuffles of step s are functions of
(seed, s) only, and a checkpoint restores weights, optimiser and trainer state exactly; so a run killed at any
moment and resumed from its last checkpoint writes the same metrics rows (time fields aside) and ends with the
same weights as a run never interrupted, on the same device (on CUDA, bitwise only with deterministic kernels; a
resume on another device rounds and samples differently: README.md, "One GPU").
"""

from __future__ import annotations

import errno
import json
import math
import random
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from searchrl.algorithms import AdvantageBatch, PolicyBatch, silver_turn_scores
from searchrl.errors import SearchRLError
from searchrl.fileio import atomic_write_json, check_writable
from searchrl.models import CHECKPOINTS, checkpoint_dir
from searchrl.rewards import score_trajectories
from searchrl.rollout.types import Trajectory
from searchrl.training.batching import LowerBlockCache, TokenBatch, collate, pad_per_token, token_logprobs
from searchrl.training.checkpoint import (
    CheckpointWriteError,
    best_checkpoint,
    clean_partial,
    is_complete,
    latest_checkpoint,
    load_checkpoint,
    mark_best,
    save_checkpoint,
)
from searchrl.training.config import save_config
from searchrl.training.diagnostics import (
    average_diagnostics,
    calibadv_diagnostics,
    rollout_diagnostics,
    token_diagnostics,
    turn_kind_from_mask,
)
from searchrl.training.logger import EVENTS_FILE, METRICS_FILE, truncate_jsonl
from searchrl.training.monitor import append_events, strongest_action
from searchrl.training.policy import (
    autocast,
    export_policy,
    trainable_layers,
    trainable_parameters,
    weight_cast_cache,
)
from searchrl.training.sft import oracle_trajectories, read_trajectories, run_sft
from searchrl.training.trainer import (
    StopTraining,
    Trainer,
    TrainerState,
    eval_entry,
    install_sigint,
    paired_gain,
    print_summary,
    step_seed,
    write_samples,
)

NAN = float("nan")


# ============================================================================================ one RL step


@dataclass
class StepOutput:
    """What one RL step produced: the metrics row (without `val/…`) and the scored trajectories."""

    metrics: dict[str, float]
    trajectories: list[Trajectory]
    nonfinite_skips: int


def rl_step(t: Trainer, step: int) -> StepOutput:
    """One rollout batch and its optimiser updates (the module docstring's steps 1–6, in order)."""
    cfg = t.cfg
    start = time.perf_counter()

    # 1–2. Rollouts (B questions × G samples) and their rewards, as tensors on the training device.
    rollout = collect_rollouts(t, step)
    rollout_s = time.perf_counter() - start

    # 3. Advantages from the configured estimator.                                                        [ALGO]
    turn_scores = (turn_scores_by_group(rollout.trajectories, rollout.group_ids)
                   if t.objective.needs_turn_scores else None)
    advantages = t.objective.advantages(
        AdvantageBatch(rollout.rewards, rollout.group_ids, rollout.loss_mask, turn_scores)
    )  # (N, T)

    # 4. Old (behaviour) log-probs, and the reference model's for the KL term; no gradient.
    t.status("old log-probs")
    plan = minibatch_plan([tr.group_id for tr in rollout.trajectories], cfg, step)
    forward = PolicyForward(t, rollout.batch)
    with weight_cast_cache(cfg.train.bf16, t.device):  # the weights cast to bf16 once for all these forwards
        old_log_probs = BehaviourLogProbs(forward, rollout.loss_mask, plan)
    ref_log_probs = reference_log_probs(t, forward, plan) if t.objective.needs_ref else None
    answer_mask = t.answer_mask(rollout.trajectories, rollout.batch) if t.objective.needs_answer_mask else None

    # 5. Several optimiser updates per rollout batch. From the first one on, Ctrl-C finishes the step.
    t.status("update")
    update_start = time.perf_counter()
    with t.updating():
        updates = update_policy(t, rollout, plan, forward, advantages, old_log_probs, ref_log_probs, answer_mask)
    update_s = time.perf_counter() - update_start

    # 6. Metrics and diagnostics (docs/metrics.md): every key, every step; NaN when not applicable.
    metrics = step_metrics(t, rollout, advantages, old_log_probs.values, turn_scores, updates)
    metrics["time/rollout_s"] = rollout_s
    metrics["time/update_s"] = update_s
    metrics["time/step_s"] = time.perf_counter() - start
    return StepOutput(metrics, rollout.trajectories, updates.skips)


@dataclass
class Rollout:
    """A step's scored trajectories and their tensors on the training device."""

    trajectories: list[Trajectory]
    batch: TokenBatch  # prompt + response ids, right-padded (batching.collate)
    loss_mask: torch.Tensor  # (N, T): 1 on sampled tokens of usable trajectories
    rewards: torch.Tensor  # (N,)
    group_ids: list[str]  # the question's uid; trajectories kept out of the loss get a group of their own


def collect_rollouts(t: Trainer, step: int) -> Rollout:
    """B questions × G samples (the group id of a sample is its question's uid), scored. Trajectories whose
    retrieval failed are scored but kept out of the loss and of group statistics."""
    cfg = t.cfg
    t.status("rollout")
    questions = t.sampler.batch(step)
    t.model.eval()
    trajectories = t.engine.run(questions, cfg.train.group_size, seed=step_seed(cfg.seed, step, "rollout"))
    score_trajectories(trajectories, cfg.reward)
    usable_rows = [tr.finish_reason != "retrieval_error" for tr in trajectories]
    usable = torch.tensor(usable_rows, dtype=torch.float32, device=t.device)
    group_ids = [tr.group_id if ok else f"excluded:{i}" for i, (tr, ok) in enumerate(zip(trajectories, usable_rows))]
    batch = collate(trajectories, t.pad_id).to(t.device)
    rewards = torch.tensor([tr.reward for tr in trajectories], dtype=torch.float32, device=t.device)
    return Rollout(trajectories, batch, batch.response_mask * usable[:, None], rewards, group_ids)


class PolicyForward:
    """Token log-probs (and entropies) of micro-batches of the step's rows under the current policy, at the
    sampling temperature (π = softmax(logits / T), as sampled), in `train.bf16` autocast on the training device.

    Each row's first forward records what the frozen lower blocks (`train.train_layers`) output for it; later
    forwards of the step start above them (`LowerBlockCache`), unless dropout makes forwards differ.
    """

    def __init__(self, t: Trainer, batch: TokenBatch) -> None:
        cfg = t.cfg
        self.model, self.batch, self.device = t.model, batch, t.device
        self.bf16, self.chunk = cfg.train.bf16, cfg.train.logprob_chunk_size
        self.temperature = 1.0 if cfg.rollout.greedy else cfg.rollout.temperature
        self.deterministic = not has_dropout(t.model)
        self.lower = LowerBlockCache(t.model, enabled=self.deterministic)
        # log-probs are float32 (float64 for a float64 model: the exact-math tests)
        self.dtype = torch.promote_types(next(t.model.parameters()).dtype, torch.float32)

    def __call__(self, rows: Sequence[int], *, with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        sub = _sub_batch(self.batch, rows)
        with autocast(self.bf16, self.device):
            return self.lower.token_logprobs(rows, sub, chunk_size=self.chunk, with_entropy=with_entropy,
                                             temperature=self.temperature)

    def of_model(self, model: torch.nn.Module, rows: Sequence[int]) -> torch.Tensor:
        """Log-probs of `rows` under another model (the frozen reference), same precision and temperature."""
        with autocast(self.bf16, self.device):
            log_probs, _ = token_logprobs(model, _sub_batch(self.batch, rows), chunk_size=self.chunk,
                                          temperature=self.temperature)
        return log_probs


class BehaviourLogProbs:
    """log π_old (N, T) of the step's trajectories: the policy before this step's first update.

    Computed in the micro-batches of the first epoch, so the first update sees ratio = 1 exactly (same shapes,
    same kernels). Optimisation: the rows the first update trains on are not forwarded here; that update's own
    forward runs before any weight moves, so :meth:`take` keeps its log-probs as π_old. Not when dropout makes a
    training forward differ from this one (then every row is forwarded here).
    """

    def __init__(self, forward: PolicyForward, loss_mask: torch.Tensor, plan: list[list[list[list[int]]]]) -> None:
        self.values = torch.zeros_like(loss_mask, dtype=forward.dtype)
        self.pending: set[int] = set()
        first_update = plan[0][0]
        with torch.no_grad():
            for mini in plan[0]:
                for micro in mini:
                    trains = bool(loss_mask[torch.tensor(micro, device=loss_mask.device)].sum() > 0)
                    if forward.deterministic and mini is first_update and trains:
                        self.pending.update(micro)  # filled by the first update's forward
                        continue
                    log_probs, _ = forward(micro)
                    _scatter(self.values, micro, log_probs)

    def take(self, rows: Sequence[int], log_probs: torch.Tensor) -> torch.Tensor:
        """log π_old of `rows` (b, T_rows); rows still pending take `log_probs`, the first update's forward."""
        if self.pending.intersection(rows):
            _scatter(self.values, rows, log_probs.detach())
            self.pending.difference_update(rows)
        return self.values[torch.tensor(list(rows), device=self.values.device), : log_probs.shape[1]]


def reference_log_probs(t: Trainer, forward: PolicyForward, plan: list[list[list[list[int]]]]) -> torch.Tensor:
    """log π_ref (N, T) of the step's trajectories under the frozen reference model, for the KL term."""
    values = torch.zeros_like(forward.batch.response_mask, dtype=forward.dtype)
    with torch.no_grad(), t.reference() as ref_model:
        for micro in (m for mini in plan[0] for m in mini):
            _scatter(values, micro, forward.of_model(ref_model or t.model, micro))
    return values


@dataclass
class Updates:
    """What the optimiser updates of a step recorded, for the step's metrics."""

    loss_metrics: list[dict[str, float]]  # Objective.loss metrics, one dict per micro-batch
    token_diags: list[dict[str, Any]]  # diagnostics.token_diagnostics, one dict per micro-batch
    grad_norms: list[float]  # one per update
    skips: int  # updates skipped for a non-finite loss or gradient
    count: int  # updates attempted


def update_policy(
    t: Trainer, rollout: Rollout, plan: list[list[list[list[int]]]], forward: PolicyForward,
    advantages: torch.Tensor, old_log_probs: BehaviourLogProbs, ref_log_probs: torch.Tensor | None,
    answer_mask: torch.Tensor | None,
) -> Updates:
    """`ppo_epochs` × (N / mini_batch_size) optimiser updates, each accumulating the gradient of its
    micro-batches' loss; an update whose loss or gradient is not finite is skipped (the weights stay)."""
    cfg = t.cfg
    t.model.train()
    record = Updates([], [], [], 0, 0)
    for epoch in plan:
        for mini in epoch:
            t.optimizer.zero_grad(set_to_none=True)
            losses_finite = True
            with weight_cast_cache(cfg.train.bf16, t.device):  # cast to bf16 once per update, not per micro-batch
                for micro in mini:
                    rows = torch.tensor(micro, device=t.device)
                    if rollout.loss_mask[rows].sum() == 0:  # nothing to learn (observation tokens or excluded rows)
                        continue
                    log_probs, entropy = forward(micro, with_entropy=True)
                    width = log_probs.shape[1]
                    mask = rollout.loss_mask[rows, :width]
                    old = old_log_probs.take(micro, log_probs)
                    policy_batch = PolicyBatch(  # [ALGO]
                        log_probs=log_probs,
                        old_log_probs=old,
                        advantages=advantages[rows, :width],
                        response_mask=mask,
                        ref_log_probs=ref_log_probs[rows, :width] if ref_log_probs is not None else None,
                        entropy=entropy,
                        answer_mask=answer_mask[rows, :width] if answer_mask is not None else None,
                    )
                    loss, terms = t.objective.loss(policy_batch)  # base loss + penalties + KL − entropy  [ALGO]
                    losses_finite &= bool(torch.isfinite(loss))
                    (loss / cfg.derived.grad_accum_steps).backward()
                    record.loss_metrics.append({k: float(v) for k, v in terms.items()})
                    record.token_diags.append(token_diagnostics(
                        log_probs=log_probs.detach(), old_log_probs=old, advantages=advantages[rows, :width],
                        response_mask=mask, turn_kind=turn_kind_from_mask(mask), entropy=entropy.detach(),
                        clip_low=t.clip_low, clip_high=t.clip_high,
                    ))
            grad_norm = torch.nn.utils.clip_grad_norm_(
                trainable_parameters(t.model), cfg.train.max_grad_norm or float("inf")
            )
            record.grad_norms.append(float(grad_norm))
            if losses_finite and math.isfinite(float(grad_norm)):
                t.optimizer.step()
                t.state.nonfinite_streak = 0
            else:
                t.optimizer.zero_grad(set_to_none=True)
                record.skips += 1
                t.state.nonfinite_streak += 1
            record.count += 1
    return record


# ============================================================================================ step helpers


def rows_by_group(group_ids: Sequence[str]) -> list[list[int]]:
    """The row indices of each group, groups in order of first appearance."""
    groups: dict[str, list[int]] = {}
    for row, gid in enumerate(group_ids):
        groups.setdefault(gid, []).append(row)
    return list(groups.values())


def turn_scores_by_group(trajectories: Sequence[Trajectory], group_ids: Sequence[str]) -> list[list[float]]:
    """CalibAdv's per-search-turn correctness scores, computed group by group (`silver_turn_scores`)."""
    scores: list[list[float]] = [[] for _ in trajectories]
    for rows in rows_by_group(group_ids):
        members = [trajectories[i] for i in rows]
        searches = [[turn for turn in tr.turns if turn.query is not None] for tr in members]
        group_scores = silver_turn_scores(
            [[turn.doc_ids for turn in s] for s in searches],
            [[turn.think for turn in s] for s in searches],
            [float(tr.extras.get("f1", 0.0)) for tr in members],
            [bool(tr.extras.get("format_valid", False)) for tr in members],
        )
        for i, row_scores in zip(rows, group_scores):
            scores[i] = list(row_scores)
    return scores


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else NAN


def step_metrics(
    t: Trainer, rollout: Rollout, advantages: torch.Tensor, old_log_probs: torch.Tensor,
    turn_scores: list[list[float]] | None, updates: Updates,
) -> dict[str, float]:
    """The step's row of metrics.jsonl (docs/metrics.md), every documented key present, each computed once:
    the loss's own values under `actor/`, statistics of the ratio, clipping, entropy, likelihood and behaviour
    under `diag/` (searchrl.training.diagnostics)."""
    trajectories, loss_mask, rewards = rollout.trajectories, rollout.loss_mask, rollout.rewards
    n = len(trajectories)
    extras = [tr.extras for tr in trajectories]
    per_micro = lambda key: [mm.get(key, NAN) for mm in updates.loss_metrics]  # noqa: E731
    m: dict[str, float] = {}
    m["reward/mean"] = float(rewards.mean()) if n else NAN
    m["reward/std"] = float(rewards.std()) if n > 1 else NAN
    m["actor/loss"] = _mean(per_micro("loss"))
    # As the official SAPO code logs it: the base loss plus the weighted penalty terms.
    m["actor/pg_loss"] = _mean([a + b for a, b in zip(per_micro("pg_loss"), per_micro("penalty"))])
    penalty_names = [name for name, _ in t.penalties]
    m["actor/penalty"] = (
        _mean([sum(mm.get(f"penalty/{p}", NAN) for p in penalty_names) for mm in updates.loss_metrics])
        if penalty_names else NAN
    )
    m["actor/kl_ref"] = _mean(per_micro("kl_ref"))
    m["actor/ppo_kl"] = _mean(per_micro("ppo_kl"))
    m["actor/grad_norm"] = _mean(updates.grad_norms)
    m["actor/lr"] = t.current_lr
    m["actor/updates"] = float(updates.count)
    m["actor/nonfinite_skips"] = float(updates.skips)
    m["env/em"] = sum(float(x.get("em", 0.0)) for x in extras) / n
    m["env/f1"] = sum(float(x.get("f1", 0.0)) for x in extras) / n
    m["env/answered"] = sum(tr.answer is not None for tr in trajectories) / n
    m["env/retrieval_errors"] = float(sum(tr.finish_reason == "retrieval_error" for tr in trajectories))
    m["response/sampled_length_mean"] = sum(sum(tr.response_mask) for tr in trajectories) / n

    # Diagnostics: token-level ones averaged over the micro-batches of all updates, rollout-level ones once.
    diag = average_diagnostics(updates.token_diags) if updates.token_diags else {}
    for key in t.diag_keys:
        m[key] = float(diag.get(key, NAN))
    sampling = pad_per_token([tr.sampling_logprobs for tr in trajectories], old_log_probs.shape[1])
    sampling = sampling.to(old_log_probs.device)  # one copy to the training device, not one per trajectory
    m.update(
        rollout_diagnostics(
            old_log_probs=old_log_probs, response_mask=loss_mask, advantages=advantages, rewards=rewards,
            format_valid=[bool(x.get("format_valid", False)) for x in extras],
            num_searches=[tr.num_searches for tr in trajectories],
            response_lengths=[len(tr.response_ids) for tr in trajectories],
            turn_kind=turn_kind_from_mask(loss_mask), group_ids=list(rollout.group_ids), sampling_log_probs=sampling,
        )
    )
    seq_adv = (advantages * loss_mask).sum(-1) / loss_mask.sum(-1).clamp(min=1)  # (N,)
    m.update(
        calibadv_diagnostics(
            turn_scores=turn_scores, advantages_seq=seq_adv, group_ids=list(rollout.group_ids),
            rewards_f1=[float(x.get("f1", 0.0)) for x in extras],
            format_valid=[bool(x.get("format_valid", False)) for x in extras],
        )
    )
    for name in t.all_penalty_names:
        m[f"diag/{name}_active"] = _mean([mm.get(f"penalty/{name}_active", NAN) for mm in updates.loss_metrics])
    m["diag/nonfinite_count"] = float(
        sum(not math.isfinite(mm.get("loss", 0.0)) for mm in updates.loss_metrics)
        + sum(not math.isfinite(g) for g in updates.grad_norms)
    )
    return m


def minibatch_plan(group_ids: Sequence[str], cfg: Any, step: int) -> list[list[list[list[int]]]]:
    """Row indices per epoch → mini-batch → micro-batch for the step's trajectories (`group_ids`, one per row).

    Each epoch shuffles (when `train.shuffle_mini_batches`) with a seed of (seed, step, epoch), then cuts
    `mini_batch_size` rows per optimiser update and `micro_batch_size` rows per forward. With
    `train.keep_groups_together` the shuffle moves whole groups, each keeping its rows in order.
    """
    t = cfg.train
    units = rows_by_group(group_ids) if t.keep_groups_together else [[row] for row in range(len(group_ids))]
    n = len(group_ids)
    plan = []
    for epoch in range(t.ppo_epochs):
        shuffled = list(units)
        if t.shuffle_mini_batches:
            random.Random(step_seed(cfg.seed, step, f"minibatch:{epoch}")).shuffle(shuffled)
        order = [row for unit in shuffled for row in unit]
        minis = [order[i : i + t.mini_batch_size] for i in range(0, n, t.mini_batch_size)]
        plan.append([[mini[j : j + t.micro_batch_size] for j in range(0, len(mini), t.micro_batch_size)] for mini in minis])
    return plan


def _sub_batch(batch: TokenBatch, rows: Sequence[int]) -> TokenBatch:
    """Rows of a padded batch, trimmed to their own longest sequence and response."""
    idx = torch.tensor(list(rows), device=batch.input_ids.device)
    L = int(batch.attention_mask[idx].sum(-1).max())
    T = max(int(batch.response_valid[idx].sum(-1).max()), 1)
    return TokenBatch(
        input_ids=batch.input_ids[idx, :L],
        attention_mask=batch.attention_mask[idx, :L],
        response_ids=batch.response_ids[idx, :T],
        response_mask=batch.response_mask[idx, :T],
        response_valid=batch.response_valid[idx, :T],
        predict_pos=batch.predict_pos[idx, :T],
    )


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether a training-mode forward differs from an eval-mode one (active dropout anywhere)."""
    config = getattr(model, "config", None)
    rates = [getattr(config, name, 0.0) or 0.0 for name in ("attention_dropout", "hidden_dropout", "dropout")]
    rates += [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    return any(float(rate) > 0 for rate in rates if isinstance(rate, (int, float)))


def _scatter(target: torch.Tensor, rows: Sequence[int], values: torch.Tensor) -> None:
    target[torch.tensor(list(rows), device=target.device), : values.shape[1]] = values.to(target.dtype)


# ============================================================================================ driving a run


START_MODEL = "start_model"  # the policy at the start of RL (after any warm start), exported like final_model/
RUN_MARKER = ".searchrl-run"  # written into every run folder it creates: the only folders run.overwrite replaces
CONFIG_FILE = "config.yaml"
SUMMARY_FILE = "summary.json"
# Errors of writing to the run folder (a full disk, a read-only folder), reported as messages, not tracebacks.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def run_folder(cfg: Any) -> Path:
    """`run.dir`, or runs/<name>-<algorithm>-seed<seed>."""
    if cfg.run.dir:
        return Path(cfg.run.dir).expanduser()
    return Path("runs") / f"{cfg.run.name}-{cfg.algorithm.get('name', 'algo')}-seed{cfg.seed}"


def is_run_folder(path: Path) -> bool:
    """Whether `path` holds a searchrl run: its marker file, or (a run from before the marker) config.yaml next to
    checkpoints/ or metrics.jsonl."""
    path = Path(path)
    if (path / RUN_MARKER).is_file():
        return True
    return (path / CONFIG_FILE).is_file() and ((path / CHECKPOINTS).is_dir() or (path / METRICS_FILE).is_file())


def train(cfg: Any, *, resume: bool = False, console: bool = True) -> dict[str, Any]:
    """Run (or resume) a training run; returns the run summary (also written to summary.json).

    The run folder is not written before the data, retriever, model and (when resuming) checkpoint are loaded and
    accepted, so a refused start leaves it as it was (a resume first removes what a killed save left). A fresh
    run refuses a run folder that already has checkpoints unless `run.overwrite` is set, and never replaces a
    folder that is not a searchrl run; a fresh run that fails before its first checkpoint leaves nothing behind.
    Resuming restores the latest checkpoint and cuts metrics.jsonl and events.jsonl back to its step; resuming a
    finished run only says where its summary is.
    """
    run_dir = run_folder(cfg)
    _check_writable(run_dir)
    replace = False
    if resume:
        clean_partial(run_dir)
        latest = latest_checkpoint(run_dir)
        if latest is None:
            raise SearchRLError(
                f"{run_dir}: no checkpoint to resume from (the run stopped before its first one); "
                f"start it afresh with `searchrl train --config {run_dir / CONFIG_FILE}`"
            )
        finished = _finished_summary(run_dir, latest, cfg)
        if finished is not None:
            return finished
    else:
        replace = _check_new_run_folder(cfg, run_dir)

    t = Trainer(cfg, run_dir, console=console)  # data, retriever, model: everything that can fail on bad input
    folder = _restore(t) if resume else None
    t.logger.set_start_step(t.state.step)
    created = next((p for p in reversed([run_dir, *run_dir.parents]) if not p.exists()), None)

    previous = install_sigint(t)
    try:
        if not resume:
            _create_run_folder(cfg, run_dir, replace=replace)
        with t.logger:
            if folder is not None:
                t.print(f"Resuming {run_dir} from step {t.state.step} ({folder.name}) on {t.device}")
            else:
                _start(t)
            _fit(t)
            return _finish(t)
    except KeyboardInterrupt:
        _on_interrupt(t)
        raise
    except (CheckpointWriteError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in _WRITE_ERRNOS:
            raise
        what = str(exc)
        if isinstance(exc, OSError):
            what = f"cannot write {exc.filename or run_dir} ({exc.strerror})"
        then = "nothing was kept; start the run again"
        if latest_checkpoint(run_dir) is not None:
            then = (f"the checkpoints in {run_dir} are intact: free disk space or fix the permissions, then resume "
                    f"with `searchrl train --resume {run_dir}`")
        raise SearchRLError(f"{what}; {then}") from exc
    finally:
        signal.signal(signal.SIGINT, previous)
        if not resume and latest_checkpoint(run_dir) is None:  # the run never started: leave nothing behind
            if created is not None:
                shutil.rmtree(created, ignore_errors=True)
            else:
                _empty_folder(run_dir)


def _check_writable(run_dir: Path) -> None:
    """Refuse a run.dir that cannot be created or written (a file stands there or on its path, a read-only folder),
    creating nothing: the probe writes in the deepest folder that already exists."""
    check_writable(next(p for p in [run_dir, *run_dir.parents] if p.exists() or p == p.parent), "run.dir", folder=True)


def _check_new_run_folder(cfg: Any, run_dir: Path) -> bool:
    """Refuse a run.dir a fresh run may not use; returns whether it holds files the run is to replace."""
    if not run_dir.exists() or not any(run_dir.iterdir()):
        return False
    if not is_run_folder(run_dir):
        raise SearchRLError(
            f"run.dir: {run_dir} holds files but is not a searchrl run folder (no {RUN_MARKER}, no config.yaml with "
            "checkpoints/); nothing there is replaced, run.overwrite included: pick another run.dir"
        )
    never_started = latest_checkpoint(run_dir) is None  # nothing of value to keep
    if not never_started and not cfg.run.overwrite:
        raise SearchRLError(
            f"run folder {run_dir} already exists; resume it with `searchrl train --resume {run_dir}`, "
            "pick another run.dir, or set run.overwrite=true to delete it"
        )
    inside = _sources_inside(cfg, run_dir)
    if inside:
        raise SearchRLError(
            f"run.dir: {run_dir} holds {inside[0]}, which this run reads, and would be replaced; "
            "move that out of the run folder or pick another run.dir"
        )
    return True


def _sources_inside(cfg: Any, run_dir: Path) -> list[str]:
    """The `key=value` settings whose file or folder is `run_dir` or lies inside it."""
    settings = {"data.train": [cfg.data.train], "data.val": list(cfg.data.val),
                "retrieval.index": [cfg.retrieval.index], "model.name": [cfg.model.name],
                "train.warm_start": [cfg.train.warm_start], "sft.data": [cfg.sft.data]}
    root = run_dir.resolve()
    out = []
    for key, values in settings.items():
        for value in filter(None, values):
            body = value.split("=", 1)[-1].rsplit("@", 1)[0]  # a data spec's NAME=PATH@SPLIT
            paths = {Path(v).expanduser().resolve() for v in (value, body) if Path(v).expanduser().exists()}
            if any(p == root or root in p.parents for p in paths):
                out.append(f"{key}={value}")
    return out


def _create_run_folder(cfg: Any, run_dir: Path, *, replace: bool) -> None:
    """Create (or empty, when replacing) the run folder, mark it as a run and save the config."""
    if replace:
        _empty_folder(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(run_dir / RUN_MARKER, {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    save_config(cfg, run_dir / CONFIG_FILE)


def _empty_folder(path: Path) -> None:
    if path.is_dir():
        for entry in path.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _finished_summary(run_dir: Path, latest: Path, cfg: Any) -> dict[str, Any] | None:
    """The summary of a run that already ran all of `train.steps` (and wrote summary.json), else None."""
    summary = run_dir / SUMMARY_FILE
    step = json.loads((latest / "state.json").read_text())["step"]
    if not summary.is_file() or step < cfg.train.steps:
        return None
    print(f"{run_dir} is finished ({step} of train.steps={cfg.train.steps} steps); its summary is {summary}. "
          f"Nothing to do; to train on, resume with a larger train.steps", file=sys.stderr)
    return json.loads(summary.read_text())


def _restore(t: Trainer) -> Path:
    """Load the latest checkpoint into the trainer, refusing one the config does not fit; only then save the
    (possibly overridden) config, cut the logs back to the checkpoint's step and mark its best checkpoint."""
    folder = latest_checkpoint(t.run_dir)
    raw = load_checkpoint(folder, model=t.model, optimizer=t.optimizer)
    t.state = TrainerState.from_dict(raw)
    expected = t.sampler.cursor(t.state.step + 1)
    if raw.get("data_cursor") != expected:
        raise SearchRLError(
            f"{folder}: its data cursor ({raw.get('data_cursor')}) does not match train.batch_size="
            f"{t.cfg.train.batch_size} (which gives {expected}); resume with the run's train.batch_size"
        )
    if t.state.monitor is not None:
        t.monitor.load_state_dict(t.state.monitor)
    save_config(t.cfg, t.run_dir / CONFIG_FILE)
    truncate_jsonl(t.run_dir / METRICS_FILE, t.state.step)
    truncate_jsonl(t.run_dir / EVENTS_FILE, t.state.step)
    best = checkpoint_dir(t.run_dir, t.state.best_step) if t.state.best_step is not None else None
    if t.cfg.checkpoint.keep_best and best is not None and best_checkpoint(t.run_dir) != best and is_complete(best):
        mark_best(t.run_dir, t.state.best_step, t.state.best_score)  # killed between a checkpoint and its best.json
    return folder


def _start(t: Trainer) -> None:
    """Before RL: the untrained evaluation, the warm start, the starting-point evaluations, checkpoint 0.

    The untrained and starting-point evaluations that the summary reports run on the test split; the starting
    point is also validated on the validation split, the baseline of every decision (checkpoints/best)."""
    cfg = t.cfg
    warm = cfg.train.warm_start is not None
    t.logger.announce(f"Run folder: {t.run_dir} (device: {t.device}, train.device={cfg.train.device})")
    if cfg.val.untrained and warm:
        untrained = t.validate("untrained", test=True, limit=cfg.val.untrained_max_questions)
        t.state.evals["untrained"] = _announce(t, untrained, "untrained model")
    if cfg.train.warm_start == "sft":
        t.state.warm_start = _warm_start_sft(t)
    if cfg.val.at_start:
        start = _announce(t, t.validate("start", test=True), "starting point of RL")
        t.state.evals["start"] = start
        if cfg.val.untrained and not warm:
            t.state.evals["untrained"] = start  # no warm start: the untrained model is the starting point
        val_start = start if t.test_sources is None else _announce(t, t.validate("start"), "starting point of RL")
        t.state.evals["val_start"] = val_start
        t.state.best_score, t.state.best_step = t.score(val_start), 0
    t.abortable = True
    _save(t, best=cfg.val.at_start)
    if cfg.checkpoint.export_final:
        # The start of RL as a model folder beside final_model/: both evaluate on any data (`searchrl eval
        # --model`). A kill before this line leaves checkpoints/step_000000, which loads the same weights.
        t.logger.status("exporting start_model/")
        export_policy(t.model, t.tokenizer, t.run_dir / START_MODEL, protocol=cfg.protocol, rollout=cfg.rollout)


def _warm_start_sft(t: Trainer) -> dict[str, Any]:
    cfg = t.cfg
    t.logger.status("warm start: preparing SFT data")
    if cfg.sft.data == "oracle":
        oracle = oracle_trajectories(
            t.train_source, t.tokenizer, t.retriever, cfg.protocol, cfg.rollout, limit=cfg.sft.max_examples,
            think=cfg.sft.oracle_think,
        )
        data, dropped = oracle.trajectories, oracle.dropped
    else:
        data, dropped = read_trajectories(Path(cfg.sft.data)), {}
    t.print(f"Warm start: SFT on {len(data)} trajectories from {cfg.sft.data} (dropped: {dropped or 'none'})")
    with trainable_layers(t.model, cfg.sft.train_layers):
        result = _run_sft(t, data)
    t.print(
        f"Warm start done in {result.seconds:.0f}s: {result.updates} updates, held-out loss "
        f"{result.holdout_loss_before:.3f} -> {result.holdout_loss_after:.3f}"
    )
    return {**result.to_dict(), "dropped": dropped, "data": cfg.sft.data}


def _run_sft(t: Trainer, data: list) -> Any:
    cfg = t.cfg
    return run_sft(
        t.model, data, cfg.sft, pad_id=t.pad_id, seed=cfg.seed, bf16=cfg.train.bf16,
        chunk_size=cfg.train.logprob_chunk_size, max_grad_norm=cfg.train.max_grad_norm,
        on_update=lambda i, n, loss: t.logger.status(f"warm start: SFT update {i}/{n}, loss {loss:.3f}"),
        metrics_path=t.run_dir / "sft_metrics.jsonl",
    )


def _announce(t: Trainer, result: dict[str, Any], what: str) -> dict[str, Any]:
    for name, entry in result["datasets"].items():
        t.logger.announce(
            f"[bold]{what}[/bold]: {name} EM {entry['em']:.3f} [{entry['em_ci_low']:.3f}, {entry['em_ci_high']:.3f}] "
            f"on {entry['n']} {result['split']} questions ({result['seconds']:.0f}s)"
        )
    return result


def _fit(t: Trainer) -> None:
    """RL steps from the one after the last completed step to `train.steps`."""
    cfg = t.cfg
    t.ensure_reference()
    step_walls: list[float] = []  # wall time of each step of this process, checkpoints and logging included
    for step in range(t.state.step + 1, cfg.train.steps + 1):
        if _out_of_time(t, step_walls):
            t.print(f"[yellow]Time budget of {cfg.train.time_budget_min:g} min: RL stops after step {step - 1} of "
                    f"{cfg.train.steps}, leaving time for the final evaluation[/yellow]")
            t.state.stopped_early = True
            _save(t, best=False)
            return
        began = time.perf_counter()
        t.abortable = True
        t.set_lr(step)
        out = rl_step(t, step)
        t.abortable = False
        t.state.step = step
        val = None
        if step == cfg.train.steps or (cfg.val.every and step % cfg.val.every == 0):
            val = t.validate(f"step {step}")
        row = dict(out.metrics)
        row.update(t.val_metrics(val))
        events = t.monitor.update(step, row)
        t.logger.log(step, row)
        append_events(t.run_dir / EVENTS_FILE, events)
        for event in events:
            t.print(f"[yellow]{event.message}[/yellow]")
        if cfg.log.samples_every and step % cfg.log.samples_every == 0:
            write_samples(t, step, out.trajectories)
        improved = False
        if val is not None:
            t.state.evals["last"] = val
            score = t.score(val)
            if t.state.best_score is None or score > t.state.best_score:
                t.state.best_score, t.state.best_step, improved = score, step, True

        # Faults: repeated non-finite updates roll back to the last checkpoint; the monitor may roll back or stop.
        if t.state.nonfinite_streak >= cfg.train.nonfinite_rollback_after:
            if t.state.nonfinite_rollbacks >= cfg.train.nonfinite_max_rollbacks:
                _save(t, best=improved)
                raise StopTraining(
                    f"{t.state.nonfinite_streak} consecutive non-finite updates at step {step} after "
                    f"{t.state.nonfinite_rollbacks} rollbacks; stopping. Checkpoints are intact in {t.run_dir}; "
                    "lower train.lr or check the data, then resume with `searchrl train --resume`"
                )
            _rollback(t, "latest", cfg.train.nonfinite_lr_factor, f"{t.state.nonfinite_streak} non-finite updates")
            t.state.nonfinite_rollbacks += 1
        action = strongest_action(events)
        if action == "rollback":
            _rollback(t, "best", cfg.monitor.rollback_lr_factor, "collapse monitor")
            t.monitor.on_rollback(step)
        elif action == "stop":
            _save(t, best=improved)
            raise StopTraining(f"the collapse monitor stopped the run at step {step}; see {t.run_dir / 'events.jsonl'}")

        due = cfg.checkpoint.every and step % cfg.checkpoint.every == 0
        if due or improved or step == cfg.train.steps or t.stop_requested:
            _save(t, best=improved)
        if t.stop_requested:
            raise KeyboardInterrupt
        step_walls.append(time.perf_counter() - began)


def _out_of_time(t: Trainer, step_walls: list[float]) -> bool:
    """Whether one more step (as long as the slowest of the last two) and the final evaluations (the last step's
    validation and the test, each as long as its latest run) would end after `train.time_budget_min`, counted
    from the trainer's start."""
    budget = t.cfg.train.time_budget_min
    if budget is None or not step_walls:
        return False

    def seconds(*keys: str) -> float:
        value = next((e.get("seconds", 0.0) for k in keys if (e := t.state.evals.get(k))), 0.0)
        return value if math.isfinite(value) else 0.0

    final_evals = seconds("last", "val_start") + (seconds("start", "untrained") if t.test_sources is not None else 0.0)
    needed = max(step_walls[-2:]) + final_evals
    return time.perf_counter() - t.started + needed > budget * 60


def _rollback(t: Trainer, which: str, lr_factor: float, why: str) -> None:
    folder = (best_checkpoint(t.run_dir) if which == "best" else None) or latest_checkpoint(t.run_dir)
    if folder is None:
        raise StopTraining(f"{why} at step {t.state.step}, and there is no checkpoint to roll back to")
    load_checkpoint(folder, model=t.model, optimizer=t.optimizer, restore_rng_state=False)
    t.state.lr_scale *= lr_factor
    t.state.nonfinite_streak = 0
    t.print(f"[red]{why}: rolled back to {folder.name}; learning rate now x{t.state.lr_scale:g}[/red]")


def _save(t: Trainer, *, best: bool) -> None:
    t.state.monitor = t.monitor.state_dict()
    save_checkpoint(
        t.run_dir, t.state.step, model=t.model, optimizer=t.optimizer, scheduler=None,
        trainer_state=t.state.to_dict(t.sampler.cursor(t.state.step + 1)), keep_last=t.cfg.checkpoint.keep_last,
        protect=(0,),  # the start of RL: the KL reference and the baseline of every comparison
    )
    if best and t.cfg.checkpoint.keep_best and t.state.best_score is not None:
        mark_best(t.run_dir, t.state.step, t.state.best_score)


def _on_interrupt(t: Trainer) -> None:
    """Ctrl-C: save the last completed step's state if the live weights are exactly that state."""
    latest = latest_checkpoint(t.run_dir)
    if t.abortable and (latest is None or not latest.name.endswith(f"{t.state.step:06d}")):
        if t.state.step > 0 or latest is not None:
            _save(t, best=False)
    latest = latest_checkpoint(t.run_dir)
    t.logger.close()
    if latest is None:
        t.logger.announce("Interrupted before the first checkpoint: nothing kept; start the run again")
        return
    t.logger.announce(f"Interrupted after step {t.state.step}: checkpoint {latest.name} in {t.run_dir}. "
                      f"Resume with: searchrl train --resume {t.run_dir}")


def _finish(t: Trainer) -> dict[str, Any]:
    """Final evaluations (the last step's validation, then the test split), final_model/, final_eval.json and
    summary.json. The test split is evaluated here and at the start only; no decision reads it."""
    cfg = t.cfg
    last = t.state.evals.get("last")
    if last is None or last.get("step") != t.state.step:  # e.g. the time budget ended RL between validations
        last = t.validate("final")
        t.state.evals["last"] = last
        score = t.score(last)
        if t.state.best_score is None or score > t.state.best_score:
            t.state.best_score, t.state.best_step = score, t.state.step
            if cfg.checkpoint.keep_best and is_complete(checkpoint_dir(t.run_dir, t.state.step)):
                mark_best(t.run_dir, t.state.step, score)
    final = t.validate("final", test=True) if t.test_sources is not None else last
    final = dict(final, label="final")
    t.state.evals["final"] = final
    if cfg.checkpoint.export_final:
        t.logger.status("exporting final_model/")
        export_policy(t.model, t.tokenizer, t.run_dir / "final_model", protocol=cfg.protocol, rollout=cfg.rollout)
    atomic_write_json(
        t.run_dir / "final_eval.json",
        {"step": t.state.step, "datasets": {n: eval_entry(e) for n, e in final["datasets"].items()}},
    )
    atomic_write_json(  # per-question EM of each evaluation, for paired comparisons across runs
        t.run_dir / "evals.json",
        {k: {"step": v.get("step"), "split": v.get("split"), "per_question_em": v.get("per_question_em", {})}
         for k, v in t.state.evals.items() if k in ("untrained", "start", "final")},
    )
    val = {"start": t.state.evals.get("val_start"), "final": t.state.evals.get("last")}
    summary = {
        "run_dir": str(t.run_dir),
        "steps": t.state.step,
        "stopped_early": t.state.stopped_early,
        "algorithm": cfg.algorithm.get("name"),
        "warm_start": t.state.warm_start,
        "split": final.get("split"),  # of evals and gain; val holds the validation split's start and end
        "evals": {k: {n: eval_entry(e) for n, e in v["datasets"].items()} for k, v in t.state.evals.items()
                  if k in ("untrained", "start", "final")},
        "gain": paired_gain(t.state.evals.get("start"), final, seed=cfg.seed),
        "val": {"split": cfg.data.val_split, **{k: {n: eval_entry(e) for n, e in v["datasets"].items()}
                                                 for k, v in val.items() if v is not None}},
        "best_step": t.state.best_step,
        "best_checkpoint": str(best_checkpoint(t.run_dir) or ""),
    }
    atomic_write_json(t.run_dir / SUMMARY_FILE, json.loads(json.dumps(summary, default=float)))
    print_summary(t, summary)
    return summary


