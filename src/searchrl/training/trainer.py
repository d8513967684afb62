"""The trainer's state and services: what `loop.py` drives, kept out of the loop so the loop reads top to bottom.

- `Trainer`: the live objects of a run (data sampler, retriever, policy, objective, optimiser, rollout engine,
  monitor, logger) and the services the loop calls (learning rate, validation, the KL reference).
- `TrainerState`: everything besides weights and optimiser that a checkpoint restores.
- `QuestionSampler`: seeded epoch-wise question batches addressed by step (the data cursor).
- run summary helpers: samples files, the paired-bootstrap RL gain, the final table.
"""

from __future__ import annotations

import json
import math
import random
import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from rich.table import Table
from safetensors.torch import load_file

from searchrl import models  # models.load_policy, looked up at call time (tests and benchmarks replace it)
from searchrl.algorithms import policy_loss_names
from searchrl.data import load_source
from searchrl.errors import SearchRLError
from searchrl.evaluation.bootstrap import bootstrap_ci
from searchrl.evaluation import harness
from searchrl.fileio import atomic_write_text
from searchrl.models import checkpoint_dir, is_lora, load_trainable_state
from searchrl.retrieval.cache import CachedRetriever
from searchrl.retrieval.index import cached_bm25_index, load_index, load_retriever
from searchrl.rollout import RolloutEngine
from searchrl.rollout.hf import HFBackend
from searchrl.rollout.types import Trajectory
from searchrl.training.batching import TokenBatch
from searchrl.training.config import build_objective_from
from searchrl.training.diagnostics import TOKEN_DIAGNOSTIC_KEYS
from searchrl.training.logger import RunLogger
from searchrl.training.monitor import CollapseMonitor
from searchrl.training.policy import (
    lr_multiplier,
    make_optimizer,
    prepare_for_training,
    reference_policy,
    rollout_bf16,
)
from searchrl.training.sft import trajectory_to_record

NAN = float("nan")


def step_seed(seed: int, step: int, purpose: str) -> int:
    """A 31-bit seed that depends only on (run seed, step, purpose): resumed steps replay exactly."""
    return random.Random(f"{seed}:{step}:{purpose}").getrandbits(31)


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


def install_sigint(trainer: Trainer) -> Any:
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
    stopped_early: bool = False  # train.time_budget_min ended RL before train.steps

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
        self.started = time.perf_counter()  # train.time_budget_min counts from here
        self.cfg = cfg
        self.device = models.resolve_device(cfg.train.device)  # first: a missing GPU fails before anything loads
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
        self.val_sources = validation_sources(cfg)
        self.test_sources = test_sources(cfg)  # None: the start and final evaluations use the validation split
        self.retriever = build_retriever(cfg, train_source)
        self.val_retrievers = {
            s.name: self.retriever for s in (*self.val_sources, *(self.test_sources or ()))
            if cfg.retrieval.index or s.corpus_path == train_source.corpus_path
        }

        # Policy: the configured model, or a warm-start folder (from `searchrl sft`), trained in fp32 (a LoRA run's
        # frozen base in model.dtype) on train.device.
        start_from = cfg.train.warm_start if cfg.train.warm_start not in (None, "sft") else cfg.model.name
        dtype = getattr(torch, cfg.model.dtype)
        model, tokenizer = models.load_policy(start_from, dtype=dtype)
        self.tokenizer = tokenizer
        self.pad_id = int(tokenizer.pad_token_id)
        self.model = prepare_for_training(
            model, lora=cfg.model.lora, gradient_checkpointing=cfg.model.gradient_checkpointing, seed=cfg.seed,
            train_layers=cfg.train.train_layers, dtype=dtype, device=self.device,
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
        self.backend = HFBackend(self.model, tokenizer, max_batch_size=max(cfg.derived.trajectories_per_step, 1),
                                 bf16=rollout_bf16(cfg, self.device),
                                 static_decode=cfg.rollout.cuda_graphs and self.device.type == "cuda")
        self.engine = RolloutEngine(self.backend, tokenizer, self.retriever, cfg.protocol, cfg.rollout)
        self.monitor = CollapseMonitor(cfg.monitor)
        self.val_names = [name for source in self.val_sources for name in _dataset_names(source)]

    def ensure_reference(self) -> None:
        """The KL reference: the policy at the start of RL (after any warm start), i.e. checkpoint step 0.

        Under LoRA it is the model with its adapters disabled (the base model, no copy)."""
        if self.reference is not None or not self.objective.needs_ref:
            return
        self.reference = reference_policy(self.model)
        if not is_lora(self.model):
            start = checkpoint_dir(self.run_dir, 0) / "weights.safetensors"
            with self.reference() as frozen:
                for p in frozen.parameters():
                    p.requires_grad_(True)  # so the trainable-name check matches, then frozen again
                load_trainable_state(frozen, load_file(str(start)), start)
                for p in frozen.parameters():
                    p.requires_grad_(False)

    # -- small services used by rl_step ------------------------------------------------------------

    @contextmanager
    def updating(self) -> Iterator[None]:
        """The optimiser updates of a step. Before them a Ctrl-C aborts the step (the live weights are still the
        last checkpoint's); from the first update on, it finishes the step and saves. The flag stays down after
        the updates: the weights are no longer the last checkpoint's until the step is saved or recorded."""
        self.abortable = False
        yield

    def status(self, text: str) -> None:
        self.logger.status(f"step {self.state.step + 1}: {text}")

    @property
    def current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    def set_lr(self, step: int) -> None:
        """lr of step `step` (1-based): warm-up/schedule multiplier × rollback scale × train.lr."""
        t = self.cfg.train
        lr = t.lr * self.state.lr_scale * lr_multiplier(
            step - 1, warmup_steps=self.cfg.derived.warmup_steps, total_steps=t.steps, schedule=t.lr_schedule
        )
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def answer_mask(self, trajectories: Sequence[Trajectory], batch: TokenBatch) -> torch.Tensor:
        """(N, T) 1 on the tokens of each trajectory's last `<answer>…</answer>` span (LLDS-MA), on the batch's
        device (filled on the CPU: one copy instead of a device write per token)."""
        out = torch.zeros(batch.response_mask.shape, dtype=batch.response_mask.dtype)
        for i, tr in enumerate(trajectories):
            for j in _answer_token_positions(tr, self.tokenizer):
                out[i, j] = 1.0
        return out.to(batch.response_mask.device)

    # -- evaluation ----------------------------------------------------------------------------------

    def validate(self, label: str, *, test: bool = False, limit: int | None = None) -> dict[str, Any]:
        """Greedy evaluation of the live policy on the validation split(s), or with `test=True` on the test
        split(s) (the validation split(s) when `data.test_split` is null); returns a JSON-safe summary."""
        cfg = self.cfg
        on_test = test and self.test_sources is not None
        split = cfg.data.test_split if on_test else cfg.data.val_split
        if limit is None:
            limit = cfg.val.test_max_questions if on_test else cfg.val.max_questions
        self.logger.status(f"{'test' if on_test else 'validation'} ({label}, {split} split)")
        was_training = self.model.training
        report = harness.evaluate(  # through the module, so a test's replacement is seen wherever imported
            self.model, self.tokenizer, self.test_sources if on_test else self.val_sources,
            retriever=self.val_retrievers or None, limit=limit, protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout,
            batch_size=cfg.val.batch_size, seed=cfg.seed, progress=False,
        )
        if was_training:
            self.model.train()
        datasets: dict[str, dict[str, Any]] = {
            name: {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            for name, entry in report.datasets.items()
        }
        per_question: dict[str, dict[str, float]] = {name: {} for name in datasets}
        by_type: dict[str, dict[str, list[float]]] = {name: {} for name in datasets}
        for record in report.records:
            if record.get("finish_reason") == "retrieval_error":  # left out of the scores, counted by the harness
                continue
            per_question[record["dataset"]][record["uid"]] = float(record["em"])
            if record.get("type"):  # the question kind (the world's single-hop / bridge / comparison)
                by_type[record["dataset"]].setdefault(record["type"], []).append(float(record["em"]))
        for name, kinds in by_type.items():
            datasets[name]["em_by_type"] = {k: sum(v) / len(v) for k, v in sorted(kinds.items())}
        return {"label": label, "step": self.state.step, "split": split, "datasets": datasets,
                "per_question_em": per_question, "seconds": float(report.timing.get("wall_s", NAN))}

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


def validation_sources(cfg: Any) -> list:
    """The sources validated on: `data.val`, or else the training source, each at `data.val_split`."""
    return [load_source(s, split=cfg.data.val_split) for s in (cfg.data.val or (cfg.data.train,))]


def test_sources(cfg: Any) -> list | None:
    """The same sources at `data.test_split` (None when it is null), evaluated only at the start and end of RL."""
    if cfg.data.test_split is None:
        return None
    return [load_source(s, split=cfg.data.test_split) for s in (cfg.data.val or (cfg.data.train,))]


def build_retriever(cfg: Any, source: Any) -> Any:
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


def write_samples(t: Trainer, step: int, trajectories: Sequence[Trajectory]) -> None:
    lines = [json.dumps(trajectory_to_record(tr, t.tokenizer), ensure_ascii=False) for tr in trajectories]
    atomic_write_text(t.run_dir / "samples" / f"step_{step:04d}.jsonl", "".join(line + "\n" for line in lines))


def eval_entry(entry: dict[str, Any]) -> dict[str, Any]:
    keys = ("em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low", "f1_ci_high", "n", "em_by_type")
    return {k: entry[k] for k in keys if k in entry}


def paired_gain(start: dict[str, Any] | None, final: dict[str, Any], *, seed: int) -> dict[str, Any]:
    """Per dataset: EM(final) − EM(start) on the same questions, with a paired bootstrap 95% interval.

    d_i = EM_final(q_i) − EM_start(q_i); the interval is the percentile bootstrap of mean(d) (resampling
    questions, so the two evaluations' shared per-question difficulty cancels).
    """
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


def gain_verdict(gain: dict[str, Any]) -> str:
    """Whether a paired gain (see :func:`paired_gain`) is beyond its 95% interval, in words."""
    text = f"{gain['em_gain']:+.3f} [{gain['ci_low']:+.3f}, {gain['ci_high']:+.3f}] on {gain['n']} questions: "
    if gain["ci_low"] > 0:
        return text + "a real gain (the 95% interval excludes 0)"
    if gain["ci_high"] < 0:
        return text + "a real loss (the 95% interval excludes 0)"
    return text + "within the 95% interval, so not distinguishable from no change"


def print_summary(t: Trainer, summary: dict[str, Any]) -> None:
    table = Table(title=f"EM on the {summary.get('split') or 'validation'} split (greedy, 95% bootstrap CI) — {t.run_dir}")
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
    for name in t.val_names:
        if summary["gain"].get(name):
            t.logger.announce(f"RL gain on {name} ({summary.get('split')} split): {gain_verdict(summary['gain'][name])}")
    for name in t.val_names:
        parts = []
        for key, label in labels.items():
            kinds = summary["evals"].get(key, {}).get(name, {}).get("em_by_type")
            if kinds:
                parts.append(f"{label}: " + ", ".join(f"{k} {v:.2f}" for k, v in kinds.items()))
        if parts:
            t.logger.announce(f"{name} EM by question type — " + "; ".join(parts))
    t.logger.announce(f"Run folder: {t.run_dir}")

