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
same weights as a run never interrupted.
"""

from __future__ import annotations

import math
import random
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from searchrl.algorithms import AdvantageBatch, PolicyBatch, silver_turn_scores
from searchrl.errors import SearchRLError
from searchrl.rewards import score_trajectories
from searchrl.rollout.types import Trajectory
from searchrl.training.batching import TokenBatch, collate, token_logprobs
from searchrl.training.diagnostics import (
    average_diagnostics,
    calibadv_diagnostics,
    rollout_diagnostics,
    token_diagnostics,
    turn_kind_from_mask,
)
from searchrl.training.policy import autocast, trainable_parameters

NAN = float("nan")


# ============================================================================================ one RL step


@dataclass
class StepOutput:
    """What one RL step produced: the metrics row (without `val/…`) and the scored trajectories."""

    metrics: dict[str, float]
    trajectories: list[Trajectory]
    nonfinite_skips: int


def rl_step(t: Any, step: int) -> StepOutput:
    """One rollout batch and its optimiser updates; `t` is the `Trainer` (model, objective, optimiser, ...)."""
    cfg = t.cfg
    start = time.perf_counter()

    # 1. Rollouts: B questions × G samples; the group id of a sample is its question's uid.
    t.status("rollout")
    questions = t.sampler.batch(step)
    t.model.eval()
    trajectories = t.engine.run(questions, cfg.train.group_size, seed=step_seed(cfg.seed, step, "rollout"))
    rollout_s = time.perf_counter() - start

    # 2. Rewards. Trajectories whose retrieval failed are scored but kept out of the loss and of group statistics.
    score_trajectories(trajectories, cfg.reward)
    usable = torch.tensor([tr.finish_reason != "retrieval_error" for tr in trajectories], dtype=torch.float32)
    group_ids = [tr.group_id if ok else f"excluded:{i}" for i, (tr, ok) in enumerate(zip(trajectories, usable))]
    batch = collate(trajectories, t.pad_id)
    loss_mask = batch.response_mask * usable[:, None]  # (N, T): 1 on sampled tokens of usable trajectories
    rewards = torch.tensor([tr.reward for tr in trajectories], dtype=torch.float32)  # (N,)

    # 3. Advantages from the configured estimator.                                                        [ALGO]
    turn_scores = _turn_scores(trajectories, group_ids) if t.objective.needs_turn_scores else None
    advantages = t.objective.advantages(AdvantageBatch(rewards, group_ids, loss_mask, turn_scores))  # (N, T)

    # 4. Old (behaviour) log-probs, and reference log-probs for the KL term, in the micro-batches the first
    #    epoch will use: the first update then sees ratio = 1 exactly (same shapes, same kernels).
    t.status("old log-probs")
    plan = minibatch_plan(len(trajectories), cfg, step)
    old_log_probs = torch.zeros_like(loss_mask)  # (N, T)
    ref_log_probs = torch.zeros_like(loss_mask) if t.objective.needs_ref else None
    with torch.no_grad():
        for micro in (m for mini in plan[0] for m in mini):
            sub = _sub_batch(batch, micro)
            with autocast(cfg.train.bf16):
                lp, _ = token_logprobs(t.model, sub, chunk_size=cfg.train.logprob_chunk_size)
                _scatter(old_log_probs, micro, lp)
                if ref_log_probs is not None:
                    with t.reference() as ref_model:
                        ref_lp, _ = token_logprobs(ref_model or t.model, sub, chunk_size=cfg.train.logprob_chunk_size)
                    _scatter(ref_log_probs, micro, ref_lp)
    answer_mask = t.answer_mask(trajectories, batch) if t.objective.needs_answer_mask else None

    # 5. Several optimiser updates per rollout batch (mini-batches of trajectories, micro-batch accumulation).
    t.status("update")
    update_start = time.perf_counter()
    t.model.train()
    t.abortable = False  # from the first update on, Ctrl-C finishes the step before saving
    micro_metrics: list[dict[str, float]] = []
    token_diags: list[dict[str, Any]] = []
    grad_norms: list[float] = []
    skips = 0
    update_index = 0
    for epoch in plan:
        for mini in epoch:
            t.optimizer.zero_grad(set_to_none=True)
            losses_finite = True
            for micro in mini:
                rows = torch.tensor(micro)
                sub = _sub_batch(batch, micro)
                T = sub.response_ids.shape[1]
                mask = loss_mask[rows, :T]
                if mask.sum() == 0:
                    continue  # nothing to learn from (all observation tokens or excluded trajectories)
                with autocast(cfg.train.bf16):
                    log_probs, entropy = token_logprobs(
                        t.model, sub, chunk_size=cfg.train.logprob_chunk_size, with_entropy=True
                    )
                policy_batch = PolicyBatch(  # [ALGO]
                    log_probs=log_probs,
                    old_log_probs=old_log_probs[rows, :T],
                    advantages=advantages[rows, :T],
                    response_mask=mask,
                    ref_log_probs=ref_log_probs[rows, :T] if ref_log_probs is not None else None,
                    entropy=entropy,
                    answer_mask=answer_mask[rows, :T] if answer_mask is not None else None,
                )
                loss, terms = t.objective.loss(policy_batch)  # base loss + penalties + KL − entropy  [ALGO]
                if cfg.train.debug_inject_nan_step == step:
                    loss = loss * NAN  # testing hook: non-finite losses must be skipped, logged, rolled back
                losses_finite &= bool(torch.isfinite(loss))
                (loss / cfg.derived.grad_accum_steps).backward()
                micro_metrics.append({k: float(v) for k, v in terms.items()})
                token_diags.append(
                    token_diagnostics(
                        log_probs=log_probs.detach(),
                        old_log_probs=old_log_probs[rows, :T],
                        advantages=advantages[rows, :T],
                        response_mask=mask,
                        turn_kind=turn_kind_from_mask(mask),
                        entropy=entropy.detach(),
                        clip_low=t.clip_low,
                        clip_high=t.clip_high,
                    )
                )
            grad_norm = torch.nn.utils.clip_grad_norm_(
                trainable_parameters(t.model), cfg.train.max_grad_norm or float("inf")
            )
            grad_norms.append(float(grad_norm))
            if losses_finite and math.isfinite(float(grad_norm)):
                t.optimizer.step()
                t.state.nonfinite_streak = 0
            else:  # a non-finite loss or gradient: skip this update, keep the weights
                t.optimizer.zero_grad(set_to_none=True)
                skips += 1
                t.state.nonfinite_streak += 1
            update_index += 1
    update_s = time.perf_counter() - update_start

    # 6. Metrics and diagnostics (docs/metrics.md): every key, every step; NaN when not applicable.
    metrics = _step_metrics(t, trajectories, batch, loss_mask, rewards, advantages, old_log_probs, group_ids,
                            turn_scores, micro_metrics, token_diags, grad_norms, skips, update_index)
    metrics["time/rollout_s"] = rollout_s
    metrics["time/update_s"] = update_s
    metrics["time/step_s"] = time.perf_counter() - start
    return StepOutput(metrics, trajectories, skips)


# ============================================================================================ step helpers


def step_seed(seed: int, step: int, purpose: str) -> int:
    """A 31-bit seed that depends only on (run seed, step, purpose): resumed steps replay exactly."""
    return random.Random(f"{seed}:{step}:{purpose}").getrandbits(31)


def minibatch_plan(n: int, cfg: Any, step: int) -> list[list[list[list[int]]]]:
    """Row indices per epoch → mini-batch → micro-batch for the `n` trajectories of a step.

    Each epoch shuffles (when `train.shuffle_mini_batches`) with a seed of (seed, step, epoch), then cuts
    `mini_batch_size` rows per optimiser update and `micro_batch_size` rows per forward.
    """
    t = cfg.train
    plan = []
    for epoch in range(t.ppo_epochs):
        order = list(range(n))
        if t.shuffle_mini_batches:
            random.Random(step_seed(cfg.seed, step, f"minibatch:{epoch}")).shuffle(order)
        minis = [order[i : i + t.mini_batch_size] for i in range(0, n, t.mini_batch_size)]
        plan.append([[mini[j : j + t.micro_batch_size] for j in range(0, len(mini), t.micro_batch_size)] for mini in minis])
    return plan


def _sub_batch(batch: TokenBatch, rows: Sequence[int]) -> TokenBatch:
    """Rows of a padded batch, trimmed to their own longest sequence and response."""
    idx = torch.tensor(list(rows))
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


def _scatter(target: torch.Tensor, rows: Sequence[int], values: torch.Tensor) -> None:
    target[torch.tensor(list(rows)), : values.shape[1]] = values.float()


def _turn_scores(trajectories: Sequence[Trajectory], group_ids: Sequence[str]) -> list[list[float]]:
    """CalibAdv's per-search-turn correctness scores, computed group by group (`silver_turn_scores`)."""
    scores: list[list[float]] = [[] for _ in trajectories]
    groups: dict[str, list[int]] = {}
    for i, gid in enumerate(group_ids):
        groups.setdefault(gid, []).append(i)
    for rows in groups.values():
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


def _step_metrics(
    t: Any,
    trajectories: Sequence[Trajectory],
    batch: TokenBatch,
    loss_mask: torch.Tensor,
    rewards: torch.Tensor,
    advantages: torch.Tensor,
    old_log_probs: torch.Tensor,
    group_ids: Sequence[str],
    turn_scores: list[list[float]] | None,
    micro_metrics: list[dict[str, float]],
    token_diags: list[dict[str, Any]],
    grad_norms: list[float],
    skips: int,
    updates: int,
) -> dict[str, float]:
    """The step's row of metrics.jsonl (docs/metrics.md), every documented key present."""
    n = len(trajectories)
    extras = [tr.extras for tr in trajectories]
    m: dict[str, float] = {}
    m["reward/mean"] = float(rewards.mean()) if n else NAN
    m["reward/std"] = float(rewards.std()) if n > 1 else NAN
    per_micro = lambda key: [mm.get(key, NAN) for mm in micro_metrics]  # noqa: E731
    penalty_names = [name for name, _ in t.penalties]
    m["actor/loss"] = _mean(per_micro("loss"))
    # As the official SAPO code logs it: the base loss plus the weighted penalty terms.
    m["actor/pg_loss"] = _mean([a + b for a, b in zip(per_micro("pg_loss"), per_micro("penalty"))])
    m["actor/penalty"] = (
        _mean([sum(mm.get(f"penalty/{p}", NAN) for p in penalty_names) for mm in micro_metrics]) if penalty_names else NAN
    )
    m["actor/kl_ref"] = _mean(per_micro("kl_ref"))
    m["actor/is_ratio_mean"] = _mean(per_micro("is_ratio_mean"))
    mins = [v for v in per_micro("is_ratio_min") if not math.isnan(v)]
    m["actor/is_ratio_min"] = min(mins) if mins else NAN
    m["actor/clip_frac"] = _mean(per_micro("clip_frac"))
    m["actor/ppo_kl"] = _mean(per_micro("ppo_kl"))
    m["actor/entropy"] = _mean(per_micro("entropy"))
    m["actor/grad_norm"] = _mean(grad_norms)
    m["actor/lr"] = t.current_lr
    m["actor/updates"] = float(updates)
    m["actor/nonfinite_skips"] = float(skips)
    m["env/searches_mean"] = sum(tr.num_searches for tr in trajectories) / n
    m["env/format_valid"] = sum(bool(x.get("format_valid", False)) for x in extras) / n
    m["env/em"] = sum(float(x.get("em", 0.0)) for x in extras) / n
    m["env/f1"] = sum(float(x.get("f1", 0.0)) for x in extras) / n
    m["env/answered"] = sum(tr.answer is not None for tr in trajectories) / n
    m["env/retrieval_errors"] = float(sum(tr.finish_reason == "retrieval_error" for tr in trajectories))
    m["response/length_mean"] = sum(len(tr.response_ids) for tr in trajectories) / n
    m["response/sampled_length_mean"] = sum(sum(tr.response_mask) for tr in trajectories) / n

    # Diagnostics: token-level ones averaged over the micro-batches of all updates, rollout-level ones once.
    diag = average_diagnostics(token_diags) if token_diags else {}
    for key in t.diag_keys:
        m[key] = float(diag.get(key, NAN))
    turn_kind = turn_kind_from_mask(loss_mask)
    sampling = torch.zeros_like(old_log_probs)
    for i, tr in enumerate(trajectories):
        if tr.sampling_logprobs:
            sampling[i, : len(tr.sampling_logprobs)] = torch.tensor(tr.sampling_logprobs)
    m.update(
        rollout_diagnostics(
            old_log_probs=old_log_probs, response_mask=loss_mask, advantages=advantages, rewards=rewards,
            format_valid=[bool(x.get("format_valid", False)) for x in extras],
            num_searches=[tr.num_searches for tr in trajectories],
            response_lengths=[len(tr.response_ids) for tr in trajectories],
            turn_kind=turn_kind, group_ids=list(group_ids), sampling_log_probs=sampling,
        )
    )
    seq_adv = (advantages * loss_mask).sum(-1) / loss_mask.sum(-1).clamp(min=1)  # (N,)
    m.update(
        calibadv_diagnostics(
            turn_scores=turn_scores, advantages_seq=seq_adv, group_ids=list(group_ids),
            rewards_f1=[float(x.get("f1", 0.0)) for x in extras],
            format_valid=[bool(x.get("format_valid", False)) for x in extras],
        )
    )
    m["diag/grad_norm"] = m["actor/grad_norm"]
    for name in t.all_penalty_names:
        active = _mean([mm.get(f"penalty/{name}_active", NAN) for mm in micro_metrics])
        m[f"diag/{name}_active"] = active
    m["diag/nonfinite_count"] = float(
        sum(not math.isfinite(mm.get("loss", 0.0)) for mm in micro_metrics) + sum(not math.isfinite(g) for g in grad_norms)
    )
    return m


@dataclass
class QuestionSampler:
    """Batches of questions in epoch-wise permutations that depend only on (seed, epoch).

    The batch of step s is positions [(s−1)·B, s·B) of the concatenated permutations (the data cursor), so a
    resumed run draws exactly the questions an uninterrupted run would.
    """

    questions: list[Any]
    batch_size: int
    seed: int
    _cache: dict[int, list[int]] = field(default_factory=dict)

    def _epoch(self, epoch: int) -> list[int]:
        if epoch not in self._cache:
            order = list(range(len(self.questions)))
            random.Random(step_seed(self.seed, epoch, "data")).shuffle(order)
            self._cache = {epoch: order}
        return self._cache[epoch]

    def cursor(self, step: int) -> int:
        """Index of the first question of step `step` (1-based steps) in the concatenated permutations."""
        return (step - 1) * self.batch_size

    def batch(self, step: int) -> list[Any]:
        n = len(self.questions)
        out = []
        for pos in range(self.cursor(step), self.cursor(step) + self.batch_size):
            out.append(self.questions[self._epoch(pos // n)[pos % n]])
        return out


def install_sigint(trainer: Any) -> Any:
    """Ctrl-C: abort the step at once while no update has happened (the last checkpoint's state is still the
    live state), else finish the step; either way save a checkpoint and exit cleanly. A second Ctrl-C during
    the finishing step stops at once (the last periodic checkpoint stays)."""

    def handler(signum: int, frame: Any) -> None:
        if trainer.abortable or trainer.stop_requested:
            raise KeyboardInterrupt
        trainer.stop_requested = True
        trainer.print("[yellow]Ctrl-C: finishing this step's updates, then saving a checkpoint "
                      "(Ctrl-C again to stop without saving this step)[/yellow]")

    return signal.signal(signal.SIGINT, handler)


class StopTraining(SearchRLError):
    """The run cannot continue (repeated non-finite updates, or the collapse monitor said stop)."""


# ============================================================================================ the run


@dataclass
class TrainerState:
    """Everything besides weights and optimiser that a checkpoint restores."""

    step: int = 0  # last completed RL step
    lr_scale: float = 1.0  # product of the rollback learning-rate factors so far
    nonfinite_streak: int = 0
    nonfinite_rollbacks: int = 0
    best_score: float | None = None
    best_step: int | None = None
    evals: dict = field(default_factory=dict)  # "untrained" / "start" / "final" -> summary per dataset
    warm_start: dict | None = None  # SFTResult.to_dict() when a warm start ran
    monitor: dict | None = None

    def to_dict(self, data_cursor: int) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["data_cursor"] = data_cursor
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainerState:
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})


class Trainer:
    """Holds the live objects of a run; `train()` below drives it. Built once per run (or resume)."""

    def __init__(self, cfg: Any, run_dir: Path, *, console: bool = True) -> None:
        from searchrl.algorithms import policy_loss_names
        from searchrl.data import load_source
        from searchrl.models import load_policy
        from searchrl.rollout import RolloutEngine
        from searchrl.rollout.hf import HFBackend
        from searchrl.training.config import build_objective_from
        from searchrl.training.diagnostics import TOKEN_DIAGNOSTIC_KEYS
        from searchrl.training.logger import RunLogger
        from searchrl.training.monitor import CollapseMonitor
        from searchrl.training.policy import make_optimizer, prepare_for_training

        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.state = TrainerState()
        self.abortable = True
        self.stop_requested = False
        self.logger = RunLogger(
            self.run_dir, total_steps=cfg.train.steps, tensorboard=cfg.log.tensorboard, wandb=cfg.log.wandb,
            wandb_project=cfg.log.wandb_project, console=cfg.log.console and console, run_name=cfg.run.name,
        )
        self.print = self.logger.print

        # Data: training questions (sampled in seeded epochs) and the held-out validation split.
        train_source = load_source(cfg.data.train, split=cfg.data.train_split)
        questions = train_source.questions[: cfg.data.max_train_questions]
        if not questions:
            raise SearchRLError(f"data.train: '{cfg.data.train}' ({cfg.data.train_split}) has no questions")
        self.train_source = train_source
        self.sampler = QuestionSampler(questions, cfg.train.batch_size, cfg.seed)
        self.val_sources = [load_source(s, split=cfg.data.val_split) for s in (cfg.data.val or (cfg.data.train,))]
        self.retriever = _build_retriever(cfg, train_source)
        self.val_retrievers = {
            s.name: self.retriever for s in self.val_sources
            if cfg.retrieval.index or s.corpus_path == train_source.corpus_path
        }

        # Policy: the configured model, or a warm-start folder (from `searchrl sft`), trained in fp32.
        start_from = cfg.train.warm_start if cfg.train.warm_start not in (None, "sft") else cfg.model.name
        model, tokenizer = load_policy(start_from)
        self.tokenizer = tokenizer
        self.pad_id = int(tokenizer.pad_token_id)
        self.model = prepare_for_training(
            model, lora=cfg.model.lora, gradient_checkpointing=cfg.model.gradient_checkpointing, seed=cfg.seed
        )
        self.objective = build_objective_from(cfg)
        self.penalties = [(entry.name, params) for entry, params in self.objective.penalties]
        self.all_penalty_names = policy_loss_names("penalty")
        base_params = self.objective.policy_loss_params
        self.clip_low = float(getattr(base_params, "clip_low", 0.2))
        self.clip_high = float(getattr(base_params, "clip_high", self.clip_low))
        self.diag_keys = TOKEN_DIAGNOSTIC_KEYS
        self.optimizer = make_optimizer(
            self.model, lr=cfg.train.lr, weight_decay=cfg.train.weight_decay, betas=tuple(cfg.train.adam_betas),
            eps=cfg.train.adam_eps,
        )
        self.reference = None  # the frozen RL starting point, made by `ensure_reference` when the KL term is on
        self.backend = HFBackend(self.model, tokenizer, max_batch_size=max(cfg.derived.trajectories_per_step, 1))
        self.engine = RolloutEngine(self.backend, tokenizer, self.retriever, cfg.protocol, cfg.rollout)
        self.monitor = CollapseMonitor(cfg.monitor)
        self.val_names = [name for source in self.val_sources for name in _dataset_names(source)]

    def ensure_reference(self) -> None:
        """The KL reference: the policy at the start of RL (after any warm start), i.e. checkpoint step 0.

        Under LoRA it is the model with its adapters disabled (the base model, no copy)."""
        from searchrl.training.checkpoint import checkpoint_dir, load_trainable_state
        from searchrl.training.policy import is_lora, reference_policy

        if self.reference is not None or not self.objective.needs_ref:
            return
        self.reference = reference_policy(self.model)
        if not is_lora(self.model):
            from safetensors.torch import load_file

            start = checkpoint_dir(self.run_dir, 0) / "weights.safetensors"
            with self.reference() as frozen:
                for p in frozen.parameters():
                    p.requires_grad_(True)  # so the trainable-name check matches, then frozen again
                load_trainable_state(frozen, load_file(str(start)), start)
                for p in frozen.parameters():
                    p.requires_grad_(False)

    # -- small services used by rl_step ------------------------------------------------------------

    def status(self, text: str) -> None:
        self.logger.status(f"step {self.state.step + 1}: {text}")

    @property
    def current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def set_lr(self, step: int) -> None:
        """lr of step `step` (1-based): warm-up/schedule multiplier × rollback scale × train.lr."""
        from searchrl.training.policy import lr_multiplier

        t = self.cfg.train
        lr = t.lr * self.state.lr_scale * lr_multiplier(
            step - 1, warmup_steps=self.cfg.derived.warmup_steps, total_steps=t.steps, schedule=t.lr_schedule
        )
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def answer_mask(self, trajectories: Sequence[Trajectory], batch: TokenBatch) -> torch.Tensor:
        """(N, T) 1 on the tokens of each trajectory's last `<answer>…</answer>` span (LLDS-MA)."""
        out = torch.zeros_like(batch.response_mask)
        for i, tr in enumerate(trajectories):
            for j in _answer_token_positions(tr, self.tokenizer):
                out[i, j] = 1.0
        return out

    # -- evaluation ----------------------------------------------------------------------------------

    def validate(self, label: str) -> dict[str, Any]:
        """Greedy evaluation of the live policy on the validation split(s); returns a JSON-safe summary."""
        from searchrl.evaluation.harness import evaluate

        self.logger.status(f"validation ({label})")
        was_training = self.model.training
        report = evaluate(
            self.model, self.tokenizer, self.val_sources, retriever=self.val_retrievers or None,
            limit=self.cfg.val.max_questions, protocol_cfg=self.cfg.protocol, rollout_cfg=self.cfg.rollout,
            batch_size=self.cfg.val.batch_size, seed=self.cfg.seed, progress=False,
        )
        if was_training:
            self.model.train()
        datasets = {
            name: {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            for name, entry in report.datasets.items()
        }
        per_question = {name: {} for name in datasets}
        for record in report.records:
            per_question[record["dataset"]][record["uid"]] = float(record["em"])
        return {"label": label, "step": self.state.step, "datasets": datasets, "per_question_em": per_question,
                "seconds": float(report.timing.get("wall_s", NAN))}

    def val_metrics(self, result: dict[str, Any] | None) -> dict[str, float]:
        """`val/<dataset>/<metric>` keys (NaN on steps without validation)."""
        keys = ("em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low", "f1_ci_high", "searches", "format_valid")
        out = {}
        for name in self.val_names:
            entry = (result or {}).get("datasets", {}).get(name, {})
            for key in keys:
                out[f"val/{name}/{key}"] = float(entry.get(key, NAN))
        return out

    @staticmethod
    def score(result: dict[str, Any]) -> float:
        """The model-selection score of a validation: mean EM over its datasets."""
        ems = [entry["em"] for entry in result["datasets"].values() if not math.isnan(entry.get("em", NAN))]
        return sum(ems) / len(ems) if ems else NAN


def _build_retriever(cfg: Any, source: Any) -> Any:
    from searchrl.retrieval import CachedRetriever
    from searchrl.retrieval.index import cached_bm25_index, load_index, load_retriever

    if cfg.retrieval.index:
        return load_retriever(cfg.retrieval.index, cache=cfg.retrieval.cache)
    if source.corpus_path is None:
        raise SearchRLError(
            f"data.train: '{cfg.data.train}' brings no corpus; set retrieval.index to an index folder or server URL"
        )
    index = load_index(cached_bm25_index(source.corpus_path, show_progress=False))
    return CachedRetriever(index) if cfg.retrieval.cache else index


def _dataset_names(source: Any) -> list[str]:
    """The dataset names the evaluation harness reports for a source (one per data_source value)."""
    values = list(dict.fromkeys(q.data_source for q in source.questions))
    return [source.name] if len(values) <= 1 else values


def _answer_token_positions(traj: Trajectory, tokenizer: Any) -> list[int]:
    """Response positions of the tokens that spell the last `<answer>…</answer>` of the last model turn."""
    runs: list[list[int]] = []
    for j, m in enumerate(traj.response_mask):
        if m:
            if runs and runs[-1][-1] == j - 1:
                runs[-1].append(j)
            else:
                runs.append([j])
    if not runs:
        return []
    positions = runs[-1]
    ids = [traj.response_ids[j] for j in positions]
    text = tokenizer.decode(ids)
    begin = text.rfind("<answer>")
    if begin < 0:
        return []
    end = text.find("</answer>", begin)
    end = len(text) if end < 0 else end + len("</answer>")
    out = []
    for k in range(len(ids)):  # token k covers characters [len(decode(ids[:k])), len(decode(ids[:k+1])))
        lo, hi = len(tokenizer.decode(ids[:k])), len(tokenizer.decode(ids[: k + 1]))
        if hi > begin and lo < end:
            out.append(positions[k])
    return out


# ============================================================================================ driving a run


def run_folder(cfg: Any) -> Path:
    """`run.dir`, or runs/<name>-<algorithm>-seed<seed>."""
    if cfg.run.dir:
        return Path(cfg.run.dir).expanduser()
    return Path("runs") / f"{cfg.run.name}-{cfg.algorithm.get('name', 'algo')}-seed{cfg.seed}"


def train(cfg: Any, *, resume: bool = False, console: bool = True) -> dict[str, Any]:
    """Run (or resume) a training run; returns the run summary (also written to summary.json).

    A fresh run refuses a run folder that already has checkpoints unless `run.overwrite` is set. Resuming
    restores the latest checkpoint and cuts metrics.jsonl and events.jsonl back to its step.
    """
    import shutil

    from searchrl.training.checkpoint import clean_partial, latest_checkpoint, load_checkpoint
    from searchrl.training.config import save_config
    from searchrl.training.logger import EVENTS_FILE, METRICS_FILE, truncate_jsonl

    run_dir = run_folder(cfg)
    if resume:
        clean_partial(run_dir)
        if latest_checkpoint(run_dir) is None:
            raise SearchRLError(f"{run_dir}: no checkpoint to resume from (a run saves one after its warm start)")
    else:
        if run_dir.exists() and any(run_dir.iterdir()):
            if not cfg.run.overwrite:
                raise SearchRLError(
                    f"run folder {run_dir} already exists; resume it with `searchrl train --resume {run_dir}`, "
                    "pick another run.dir, or set run.overwrite=true to delete it"
                )
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run_dir / "config.yaml")

    t = Trainer(cfg, run_dir, console=console)
    if resume:
        folder = latest_checkpoint(run_dir)
        raw = load_checkpoint(folder, model=t.model, optimizer=t.optimizer)
        t.state = TrainerState.from_dict(raw)
        if raw.get("data_cursor") != t.sampler.cursor(t.state.step + 1):
            raise SearchRLError(f"{folder}: its data cursor does not match train.batch_size; resume with the run's config")
        if t.state.monitor is not None:
            t.monitor.load_state_dict(t.state.monitor)
        truncate_jsonl(run_dir / METRICS_FILE, t.state.step)
        truncate_jsonl(run_dir / EVENTS_FILE, t.state.step)
    t.logger.set_start_step(t.state.step)

    previous = install_sigint(t)
    try:
        with t.logger:
            if resume:
                t.print(f"Resuming {run_dir} from step {t.state.step} ({folder.name})")
            else:
                _start(t)
            _fit(t)
            return _finish(t)
    except KeyboardInterrupt:
        _on_interrupt(t)
        raise
    finally:
        signal.signal(signal.SIGINT, previous)


def _start(t: Trainer) -> None:
    """Before RL: the untrained evaluation, the warm start, the starting-point evaluation, checkpoint 0."""
    cfg = t.cfg
    warm = cfg.train.warm_start is not None
    t.logger.announce(f"Run folder: {t.run_dir}")
    if cfg.val.untrained and warm:
        t.state.evals["untrained"] = _announce(t, t.validate("untrained"), "untrained model")
    if cfg.train.warm_start == "sft":
        t.state.warm_start = _warm_start_sft(t)
    if cfg.val.at_start:
        start = _announce(t, t.validate("start"), "starting point of RL")
        t.state.evals["start"] = start
        if cfg.val.untrained and not warm:
            t.state.evals["untrained"] = start  # no warm start: the untrained model is the starting point
        t.state.best_score, t.state.best_step = t.score(start), 0
    t.abortable = True
    _save(t, best=cfg.val.at_start)


def _warm_start_sft(t: Trainer) -> dict[str, Any]:
    from searchrl.training.sft import oracle_trajectories, read_trajectories, run_sft

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
    result = run_sft(
        t.model, data, cfg.sft, pad_id=t.pad_id, seed=cfg.seed, bf16=cfg.train.bf16,
        chunk_size=cfg.train.logprob_chunk_size, max_grad_norm=cfg.train.max_grad_norm,
        on_update=lambda i, n, loss: t.logger.status(f"warm start: SFT update {i}/{n}, loss {loss:.3f}"),
        metrics_path=t.run_dir / "sft_metrics.jsonl",
    )
    t.print(
        f"Warm start done in {result.seconds:.0f}s: {result.updates} updates, held-out loss "
        f"{result.holdout_loss_before:.3f} -> {result.holdout_loss_after:.3f}"
    )
    return {**result.to_dict(), "dropped": dropped, "data": cfg.sft.data}


def _announce(t: Trainer, result: dict[str, Any], what: str) -> dict[str, Any]:
    for name, entry in result["datasets"].items():
        t.logger.announce(
            f"[bold]{what}[/bold]: {name} EM {entry['em']:.3f} [{entry['em_ci_low']:.3f}, {entry['em_ci_high']:.3f}] "
            f"on {entry['n']} questions ({result['seconds']:.0f}s)"
        )
    return result


def _fit(t: Trainer) -> None:
    """RL steps from the one after the last completed step to `train.steps`."""
    from searchrl.training.logger import EVENTS_FILE
    from searchrl.training.monitor import append_events, strongest_action

    cfg = t.cfg
    t.ensure_reference()
    for step in range(t.state.step + 1, cfg.train.steps + 1):
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
            _write_samples(t, step, out.trajectories)
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


def _rollback(t: Trainer, which: str, lr_factor: float, why: str) -> None:
    from searchrl.training.checkpoint import best_checkpoint, latest_checkpoint, load_checkpoint

    folder = (best_checkpoint(t.run_dir) if which == "best" else None) or latest_checkpoint(t.run_dir)
    if folder is None:
        raise StopTraining(f"{why} at step {t.state.step}, and there is no checkpoint to roll back to")
    load_checkpoint(folder, model=t.model, optimizer=t.optimizer, restore_rng_state=False)
    t.state.lr_scale *= lr_factor
    t.state.nonfinite_streak = 0
    t.print(f"[red]{why}: rolled back to {folder.name}; learning rate now x{t.state.lr_scale:g}[/red]")


def _save(t: Trainer, *, best: bool) -> None:
    from searchrl.training.checkpoint import mark_best, save_checkpoint

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
    from searchrl.training.checkpoint import latest_checkpoint

    latest = latest_checkpoint(t.run_dir)
    if t.abortable and (latest is None or not latest.name.endswith(f"{t.state.step:06d}")):
        if t.state.step > 0 or latest is not None:
            _save(t, best=False)
    latest = latest_checkpoint(t.run_dir)
    where = f"checkpoint {latest.name}" if latest is not None else "no checkpoint (interrupted before the first)"
    t.logger.close()
    t.logger.announce(f"Interrupted after step {t.state.step}: {where} in {t.run_dir}. "
                      f"Resume with: searchrl train --resume {t.run_dir}")


def _write_samples(t: Trainer, step: int, trajectories: Sequence[Trajectory]) -> None:
    import json

    from searchrl.training.checkpoint import atomic_write_text
    from searchrl.training.sft import trajectory_to_record

    lines = [json.dumps(trajectory_to_record(tr, t.tokenizer), ensure_ascii=False) for tr in trajectories]
    atomic_write_text(t.run_dir / "samples" / f"step_{step:04d}.jsonl", "".join(line + "\n" for line in lines))


def _finish(t: Trainer) -> dict[str, Any]:
    """Final evaluation (the last step's validation), final_model/, final_eval.json and summary.json."""
    import json

    from searchrl.training.checkpoint import atomic_write_json, best_checkpoint
    from searchrl.training.policy import export_policy

    cfg = t.cfg
    final = t.state.evals.get("last")
    if final is None or final.get("step") != t.state.step:
        final = t.validate("final")
    final = dict(final, label="final")
    t.state.evals["final"] = final
    if cfg.checkpoint.export_final:
        t.logger.status("exporting final_model/")
        export_policy(t.model, t.tokenizer, t.run_dir / "final_model")
    atomic_write_json(
        t.run_dir / "final_eval.json",
        {"step": t.state.step, "datasets": {n: _eval_entry(e) for n, e in final["datasets"].items()}},
    )
    summary = {
        "run_dir": str(t.run_dir),
        "steps": t.state.step,
        "algorithm": cfg.algorithm.get("name"),
        "warm_start": t.state.warm_start,
        "evals": {k: {n: _eval_entry(e) for n, e in v["datasets"].items()} for k, v in t.state.evals.items()
                  if k in ("untrained", "start", "final")},
        "gain": _paired_gain(t.state.evals.get("start"), final, seed=cfg.seed),
        "best_step": t.state.best_step,
        "best_checkpoint": str(best_checkpoint(t.run_dir) or ""),
    }
    atomic_write_json(t.run_dir / "summary.json", json.loads(json.dumps(summary, default=float)))
    _print_summary(t, summary)
    return summary


def _eval_entry(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low", "f1_ci_high", "n")
    return {k: entry[k] for k in keys if k in entry}


def _paired_gain(start: dict[str, Any] | None, final: dict[str, Any], *, seed: int) -> dict[str, Any]:
    """Per dataset: EM(final) − EM(start) on the same questions, with a paired bootstrap 95% interval.

    d_i = EM_final(q_i) − EM_start(q_i); the interval is the percentile bootstrap of mean(d) (resampling
    questions, so the two evaluations' shared per-question difficulty cancels).
    """
    from searchrl.evaluation.bootstrap import bootstrap_ci

    out: dict[str, Any] = {}
    if start is None:
        return out
    for name, final_em in final.get("per_question_em", {}).items():
        start_em = start.get("per_question_em", {}).get(name, {})
        common = [uid for uid in final_em if uid in start_em]
        if not common:
            continue
        diffs = [final_em[u] - start_em[u] for u in common]
        low, high = bootstrap_ci(diffs, n_resamples=2000, seed=seed)
        out[name] = {"em_gain": sum(diffs) / len(diffs), "ci_low": low, "ci_high": high, "n": len(common)}
    return out


def _print_summary(t: Trainer, summary: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"Test-split EM (greedy, 95% bootstrap CI) — {t.run_dir}")
    table.add_column("policy")
    for name in t.val_names:
        table.add_column(name)
    labels = {"untrained": "untrained model", "start": "start of RL (after warm start)" if t.state.warm_start
              else "start of RL", "final": f"after RL ({t.state.step} steps)"}
    for key, label in labels.items():
        if key in summary["evals"]:
            cells = [f"{e['em']:.3f} [{e['em_ci_low']:.3f}, {e['em_ci_high']:.3f}]"
                     for e in (summary["evals"][key].get(n, {}) for n in t.val_names) if e]
            table.add_row(label, *cells)
    if summary["gain"]:
        table.add_row("RL gain (paired)", *[
            f"{g['em_gain']:+.3f} [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}]"
            for g in (summary["gain"].get(n) for n in t.val_names) if g
        ])
    t.logger.announce(table)
    t.logger.announce(f"Run folder: {t.run_dir}")
