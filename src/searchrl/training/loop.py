"""The RL loop: GRPO-family training of a search agent, readable top to bottom.

    build(cfg, run_dir)   data, retriever, policy (+LoRA), objective, optimiser, rollout engine, monitor
    fit(t)                for step in 1..steps: rl_step, then validate / log / monitor / checkpoint
    (run.py wraps these: the run folder, warm start and start-of-RL evaluation, resume, signals, the summary)

One RL step (`rl_step`) is, in order:
  1. sample B questions; G rollouts each, one group id per question (the question's uid)
  2. rewards
  3. advantages from the configured estimator                                                    [ALGO]
  4. old log-probs (and reference log-probs when the KL coefficient is set), no grad
  5. ppo_epochs × (B·G / mini_batch_size) optimiser updates, each accumulating the gradient of
     mini_batch_size / micro_batch_size micro-batches of the objective's loss                     [ALGO]
     (Search-R1 does 10 updates per rollout batch; importance ratios drift from the 2nd update on, the
     regime where SAPO's and LLDS's penalties act.)
  6. metrics (docs/metrics.md)

Lines marked [ALGO] are the method; the rest is plumbing. No line here compares an algorithm's name: the
`Objective` built from the `algorithm:` section says what it needs (reference log-probs, entropy, turn scores,
answer mask) and computes advantages and the loss.

Determinism: the data order, the rollout sampling seed and the mini-batch shuffles of step s are functions of
(seed, s) only, and a checkpoint restores weights, optimiser and trainer state exactly; so a run killed at any
moment and resumed from its last checkpoint writes the same metrics rows (time fields aside) and ends with the
same weights as a run never interrupted, on the same device.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from searchrl import models  # models.load_policy, looked up at call time (tests and benchmarks replace it)
from searchrl.algorithms import AdvantageBatch, PolicyBatch
from searchrl.data import load_source
from searchrl.analysis.monitor import CollapseMonitor, append_events, strongest_action
from searchrl.errors import SearchRLError
from searchrl.protocol import answer_span_positions
from searchrl.rewards import rows_by_group, score_trajectories, turn_scores_by_group
from searchrl.rollout import RolloutEngine
from searchrl.rollout.hf import HFBackend
from searchrl.rollout.types import Trajectory
from searchrl.training.config import Config, build_objective_from
from searchrl.training.forward import StepForward, collate, frozen_block_count, has_dropout, scatter_rows
from searchrl.training.logger import EVENTS_FILE, RunLogger
from searchrl.training.metrics import UpdateRecord, probe_log_likelihood, step_metrics
from searchrl.training.sft import oracle_trajectories
from searchrl.training.policy import (
    lr_multiplier,
    make_optimizer,
    prepare_for_training,
    rollout_bf16,
    set_learning_rate,
    trainable_parameters,
)
from searchrl.training.state import (
    CurriculumSampler,
    QuestionSampler,
    RunInterrupted,
    StopTraining,
    TimeBudget,
    Trainer,
    build_retriever,
    ensure_reference,
    evaluation_retrievers,
    final_eval_seconds,
    record_validation,
    rollback,
    save,
    step_seed,
    test_sources,
    val_metrics,
    validate,
    validation_sources,
    write_samples,
)

# ============================================================================================ build


def build(cfg: Config, run_dir: Path, *, console: bool = True, clock: Callable[[], float] | None = None) -> Trainer:
    """The live objects of a run: everything that can fail on bad input loads here, before the run folder is
    written. `train.time_budget_min` counts from here."""
    budget = TimeBudget(cfg.train.time_budget_min, **({"clock": clock} if clock else {}))
    device = models.resolve_device(cfg.train.device)  # first: a missing GPU fails before anything loads
    logger = RunLogger(run_dir, total_steps=cfg.train.steps, tensorboard=cfg.log.tensorboard, wandb=cfg.log.wandb,
                       wandb_project=cfg.log.wandb_project, console=cfg.log.console and console, run_name=cfg.run.name)

    # Data: training questions (sampled in seeded epochs) and the held-out validation and test splits.
    train_source = load_source(cfg.data.train, split=cfg.data.train_split)
    questions = [q for q in train_source.questions
                 if not cfg.data.train_types or (q.metadata or {}).get("type") in cfg.data.train_types]
    questions = questions[: cfg.data.max_train_questions]
    if not questions:
        types = f" of type {list(cfg.data.train_types)} (data.train_types)" if cfg.data.train_types else ""
        raise SearchRLError(f"data.train: '{cfg.data.train}' ({cfg.data.train_split}) has no questions{types}")
    sampler: QuestionSampler | CurriculumSampler = QuestionSampler(questions, cfg.train.batch_size, cfg.seed)
    if cfg.data.train_types_steps is not None:  # the curriculum's second phase: every type
        every_type = QuestionSampler(train_source.questions[: cfg.data.max_train_questions], cfg.train.batch_size,
                                     cfg.seed)
        sampler = CurriculumSampler(sampler, every_type, cfg.data.train_types_steps)
    val, test = validation_sources(cfg), test_sources(cfg)
    retriever = build_retriever(cfg, train_source)
    val_retrievers = evaluation_retrievers(cfg, train_source, retriever, (*val, *(test or ())))

    # Policy: the configured model, or a warm-start folder (from `searchrl sft`), trained in fp32 (a LoRA run's
    # frozen base in model.dtype) on train.device.
    start_from = cfg.train.warm_start if cfg.train.warm_start not in (None, "sft") else cfg.model.name
    dtype = getattr(torch, cfg.model.dtype)
    model, tokenizer = models.load_policy(start_from, dtype=dtype)
    model = prepare_for_training(
        model, lora=cfg.model.lora, gradient_checkpointing=cfg.model.gradient_checkpointing, seed=cfg.seed,
        train_layers=cfg.train.train_layers, dtype=dtype, device=device,
    )
    optimizer = make_optimizer(model, lr=cfg.train.lr, weight_decay=cfg.train.weight_decay,
                               betas=tuple(cfg.train.adam_betas), eps=cfg.train.adam_eps)
    probe = []
    if cfg.log.probe_trajectories:  # oracle trajectories of validation questions, laid out as this run's rollouts
        try:
            probe = oracle_trajectories(val[0], tokenizer, retriever, cfg.protocol, cfg.rollout,
                                        limit=cfg.log.probe_trajectories, think=cfg.sft.oracle_think).trajectories
        except SearchRLError as exc:
            raise SearchRLError(f"log.probe_trajectories={cfg.log.probe_trajectories}: {exc}") from None
    backend = HFBackend(model, tokenizer, max_batch_size=max(cfg.derived.trajectories_per_step, 1),
                        bf16=rollout_bf16(cfg, device),
                        static_decode=cfg.rollout.cuda_graphs and device.type == "cuda")
    if cfg.train.fast_forward and not has_dropout(model):  # the sampler records what the frozen blocks output
        backend.record_states_at = frozen_block_count(model)
    return Trainer(
        cfg=cfg, run_dir=run_dir, device=device, logger=logger, train_source=train_source,
        sampler=sampler, val_sources=val, test_sources=test,
        retriever=retriever, val_retrievers=val_retrievers, tokenizer=tokenizer, model=model,
        objective=build_objective_from(cfg), optimizer=optimizer,
        engine=RolloutEngine(backend, tokenizer, retriever, cfg.protocol, cfg.rollout),
        monitor=CollapseMonitor(cfg.monitor, cfg.derived.trajectories_per_step), budget=budget, probe=probe,
    )


# ============================================================================================ one RL step


@dataclass
class StepOutput:
    """What one RL step produced: the metrics row (without `val/…`) and the scored trajectories."""

    metrics: dict[str, float]
    trajectories: list[Trajectory]


def rl_step(t: Trainer, step: int) -> StepOutput:
    """One rollout batch and its optimiser updates (the module docstring's steps 1–6, in order)."""
    cfg, clock = t.cfg, t.budget.clock
    start = clock()

    # 1. Rollouts: B questions × G samples; a sample's group id is its question's uid.
    t.status("rollout")
    t.model.eval()
    trajectories = t.engine.run(t.sampler.batch(step), cfg.train.group_size, seed=step_seed(cfg.seed, step, "rollout"))
    rollout_s = clock() - start

    # 2. Rewards. Trajectories whose retrieval failed are scored but kept out of the loss and of group statistics.
    score_trajectories(trajectories, cfg.reward)
    usable = torch.tensor([tr.finish_reason != "retrieval_error" for tr in trajectories], device=t.device)
    group_ids = [tr.group_id if ok else f"excluded:{i}" for i, (tr, ok) in enumerate(zip(trajectories, usable))]
    batch = collate(trajectories, t.pad_id).to(t.device)
    loss_mask = batch.response_mask * usable[:, None]  # (N, T)
    rewards = torch.tensor([tr.reward for tr in trajectories], dtype=torch.float32, device=t.device)  # (N,)

    # 3. Advantages from the configured estimator.                                                        [ALGO]
    turn_scores = (turn_scores_by_group(trajectories, group_ids, cfg.reward.turn_scores)
                   if t.objective.needs_turn_scores else None)
    advantages = t.objective.advantages(AdvantageBatch(rewards, group_ids, loss_mask, turn_scores))  # (N, T)

    # 4. Old (behaviour) log-probs, and the reference model's for the KL term; no gradient.
    t.status("old log-probs")
    plan = minibatch_plan(group_ids, cfg, step)
    forward = StepForward(t.model, batch, temperature=1.0 if cfg.rollout.greedy else cfg.rollout.temperature,
                          bf16=cfg.train.bf16, chunk_size=cfg.train.logprob_chunk_size, fast=cfg.train.fast_forward,
                          sampler_states=[tr.sampler_states for tr in trajectories],
                          states_at=getattr(t.engine.backend, "record_states_at", 0))
    old_log_probs = forward.behaviour(plan, loss_mask)
    ref_log_probs = reference_log_probs(t, forward, plan, loss_mask) if t.objective.needs_ref else None
    answer_mask = answer_masks(t, trajectories, loss_mask) if t.objective.needs_answer_mask else None

    # 5. Several optimiser updates per rollout batch. From the first one on, Ctrl-C finishes the step.
    t.status("update")
    update_start = clock()
    t.model.train()
    record = UpdateRecord()
    with t.updating():
        for mini in (m for epoch in plan for m in epoch):
            t.optimizer.zero_grad(set_to_none=True)
            finite = True
            learn = cfg.train.step_without_advantage or has_advantage(advantages, loss_mask, mini)
            # A mini-batch that will not step still runs its forward (metrics, π_old reuse), without a graph.
            with forward.update(), torch.set_grad_enabled(learn):
                for micro in mini:
                    rows = torch.tensor(micro, device=t.device)
                    if loss_mask[rows].sum() == 0:  # nothing to learn (observation tokens or excluded rows)
                        continue
                    log_probs, entropy = forward(micro, with_entropy=True)  # (b, T_b), with gradient
                    width = log_probs.shape[1]
                    policy_batch = PolicyBatch(  # [ALGO]
                        log_probs=log_probs,
                        old_log_probs=old_log_probs.take(micro, log_probs),
                        advantages=advantages[rows, :width],
                        response_mask=loss_mask[rows, :width],
                        ref_log_probs=ref_log_probs[rows, :width] if ref_log_probs is not None else None,
                        entropy=entropy,
                        answer_mask=answer_mask[rows, :width] if answer_mask is not None else None,
                    )
                    loss = t.objective.loss(policy_batch)  # base loss + penalties + KL − entropy  [ALGO]
                    finite &= bool(torch.isfinite(loss.value))
                    if learn:
                        (loss.value / cfg.derived.grad_accum_steps).backward()
                    record.add_micro_batch(policy_batch, loss)
            grad_norm = float(torch.nn.utils.clip_grad_norm_(trainable_parameters(t.model),
                                                             cfg.train.max_grad_norm or float("inf")))
            # A zero gradient (no advantage signal, no penalty acting, or `learn` off) does not step AdamW, which
            # would otherwise move the weights on its momentum alone; a non-finite one is skipped and counted.
            stepped = finite and math.isfinite(grad_norm) and grad_norm > 0
            if stepped:
                t.optimizer.step()
            t.state.nonfinite_streak = 0 if finite and math.isfinite(grad_norm) else t.state.nonfinite_streak + 1
            record.add_update(grad_norm, finite=finite and math.isfinite(grad_norm), stepped=stepped)
    update_s = clock() - update_start
    probe_ll = probe_log_likelihood(t) if t.probe else float("nan")

    # 6. Metrics (docs/metrics.md): every key, every step; NaN when not applicable.
    metrics = step_metrics(trajectories, loss_mask=loss_mask, rewards=rewards, advantages=advantages,
                           old_log_probs=old_log_probs.values, group_ids=group_ids, turn_scores=turn_scores,
                           updates=record, lr=float(t.optimizer.param_groups[0]["lr"]))
    metrics["diag/probe_ll"] = probe_ll
    metrics.update({"time/rollout_s": rollout_s, "time/update_s": update_s, "time/step_s": clock() - start})
    return StepOutput(metrics, trajectories)


def has_advantage(advantages: torch.Tensor, loss_mask: torch.Tensor, mini: Sequence[Sequence[int]]) -> bool:
    """Whether any loss token of the mini-batch's rows carries a nonzero advantage (GRPO's gradient is zero if not)."""
    rows = torch.tensor([r for micro in mini for r in micro], device=advantages.device)
    return bool(((advantages[rows] != 0) & (loss_mask[rows] > 0)).any())


def reference_log_probs(t: Trainer, forward: StepForward, plan: list, loss_mask: torch.Tensor) -> torch.Tensor:
    """log π_ref (N, T) of the step's trajectories under the frozen reference model, for the KL term."""
    values = torch.zeros_like(loss_mask, dtype=forward.dtype)
    with torch.no_grad(), t.reference() as ref_model:
        for micro in (m for mini in plan[0] for m in mini):
            scatter_rows(values, micro, forward.of_model(ref_model or t.model, micro))
    return values


def answer_masks(t: Trainer, trajectories: Sequence[Trajectory], loss_mask: torch.Tensor) -> torch.Tensor:
    """(N, T) 1 on the tokens of each trajectory's last `<answer>…</answer>` span (LLDS-MA), filled on the CPU
    (one copy instead of a device write per token)."""
    out = torch.zeros(loss_mask.shape, dtype=loss_mask.dtype)
    for i, tr in enumerate(trajectories):
        for j in answer_span_positions(tr.response_ids, tr.response_mask, t.tokenizer.decode):
            out[i, j] = 1.0
    return out.to(loss_mask.device)


def minibatch_plan(group_ids: Sequence[str], cfg: Config, step: int) -> list[list[list[list[int]]]]:
    """Row indices per epoch → mini-batch → micro-batch for the step's trajectories (`group_ids`, one per row).

    Each epoch shuffles (when `train.shuffle_mini_batches`) with a seed of (seed, step, epoch), then cuts
    `mini_batch_size` rows per optimiser update and `micro_batch_size` rows per forward. With
    `train.keep_groups_together` the shuffle moves whole groups, each keeping its rows in order.
    """
    tc = cfg.train
    units = rows_by_group(group_ids) if tc.keep_groups_together else [[row] for row in range(len(group_ids))]
    plan = []
    for epoch in range(tc.ppo_epochs):
        shuffled = list(units)
        if tc.shuffle_mini_batches:
            random.Random(step_seed(cfg.seed, step, f"minibatch:{epoch}")).shuffle(shuffled)
        order = [row for unit in shuffled for row in unit]
        minis = [order[i : i + tc.mini_batch_size] for i in range(0, len(order), tc.mini_batch_size)]
        plan.append([[mini[j : j + tc.micro_batch_size] for j in range(0, len(mini), tc.micro_batch_size)]
                     for mini in minis])
    return plan


# ============================================================================================ the steps


def fit(t: Trainer) -> None:
    """RL steps from the one after the last completed step to `train.steps`: each step, then its validation,
    metrics row, monitor, faults and checkpoint."""
    cfg = t.cfg
    ensure_reference(t)
    for step in range(t.state.step + 1, cfg.train.steps + 1):
        if not t.budget.allows_another_step(final_eval_seconds(t)):
            t.print(f"[yellow]Time budget of {cfg.train.time_budget_min:g} min: RL stops after step {step - 1} of "
                    f"{cfg.train.steps}, leaving time for the final evaluations[/yellow]")
            t.state.stopped_early = True
            save(t, best=False)
            return
        began = t.budget.clock()
        t.abortable = True
        lr = cfg.train.lr * t.state.lr_scale * lr_multiplier(
            step - 1, warmup_steps=cfg.derived.warmup_steps, total_steps=cfg.train.steps, schedule=cfg.train.lr_schedule)
        set_learning_rate(t.optimizer, lr)
        with t.timed("rl_steps"):
            out = rl_step(t, step)
        t.abortable = False
        t.state.step = step
        val = validate(t, f"step {step}") if step == cfg.train.steps or (cfg.val.every and step % cfg.val.every == 0) else None
        row = {**out.metrics, **val_metrics(t, val)}
        events = t.monitor.update(step, row)
        t.logger.log(step, row)
        append_events(t.run_dir / EVENTS_FILE, events)
        for event in events:
            t.print(f"[yellow]{event.message}[/yellow]")
        if cfg.log.samples_every and step % cfg.log.samples_every == 0:
            write_samples(t, step, out.trajectories)
        improved = val is not None and record_validation(t, val)

        # Faults: repeated non-finite updates roll back to the last checkpoint; the monitor may roll back or stop.
        if t.state.nonfinite_streak >= cfg.train.nonfinite_rollback_after:
            if t.state.nonfinite_rollbacks >= cfg.train.nonfinite_max_rollbacks:
                save(t, best=improved)
                raise StopTraining(
                    f"{t.state.nonfinite_streak} consecutive non-finite updates at step {step} after "
                    f"{t.state.nonfinite_rollbacks} rollbacks; stopping. Checkpoints are intact in {t.run_dir}; "
                    "lower train.lr or check the data, then resume with `searchrl train --resume`"
                )
            rollback(t, "latest", cfg.train.nonfinite_lr_factor, f"{t.state.nonfinite_streak} non-finite updates")
            t.state.nonfinite_rollbacks += 1
        action = strongest_action(events)
        if action == "rollback":
            rollback(t, "best", cfg.monitor.rollback_lr_factor, "collapse monitor")
            t.monitor.on_rollback(step)
        elif action == "stop":
            save(t, best=improved)
            raise StopTraining(f"the collapse monitor stopped the run at step {step}; see {t.run_dir / EVENTS_FILE}")

        due = cfg.checkpoint.every and step % cfg.checkpoint.every == 0
        if due or improved or step == cfg.train.steps or t.stop_requested:
            save(t, best=improved)
        if t.stop_requested:
            raise RunInterrupted(t.stop_requested)
        t.budget.record_step(t.budget.clock() - began)
