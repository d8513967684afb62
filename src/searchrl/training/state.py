"""A run's live objects and its state: what `loop.py` drives and what a checkpoint restores.

- `Trainer`: the typed components of a run (data, retriever, policy, objective, optimiser, rollout engine, monitor,
  logger) and its `TrainerState`; built by `loop.build`.
- `TrainerState`: everything besides weights and optimiser that a checkpoint restores.
- the services the loop and the run's lifecycle share: validation, checkpoint and rollback, the time budget.
"""

from __future__ import annotations

import json
import math
import random
import signal
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from searchrl.algorithms import Objective
from searchrl.analysis.monitor import CollapseMonitor
from searchrl.data import load_source
from searchrl.data.loaders import DataSource
from searchrl.data.types import Question
from searchrl.errors import SearchRLError
from searchrl.evaluation import harness
from searchrl.fileio import atomic_write_text
from searchrl.models import checkpoint_dir, is_lora, load_trainable_state
from searchrl.retrieval.base import Retriever
from searchrl.retrieval.cache import CachedRetriever
from searchrl.retrieval.index import cached_bm25_index, load_index, load_retriever
from searchrl.rollout import RolloutEngine
from searchrl.rollout.types import Trajectory
from searchrl.training.checkpoint import best_checkpoint, latest_checkpoint, load_checkpoint, mark_best, save_checkpoint
from searchrl.training.config import Config
from searchrl.training.logger import RunLogger
from searchrl.training.policy import reference_policy
from searchrl.training.sft import trajectory_to_record

NAN = float("nan")


def step_seed(seed: int, step: int, purpose: str) -> int:
    """A 31-bit seed that depends only on (run seed, step, purpose): resumed steps replay exactly."""
    return random.Random(f"{seed}:{step}:{purpose}").getrandbits(31)


class RunInterrupted(KeyboardInterrupt):
    """A signal stopped the run (after its checkpoint); `signum` says which, for the exit status 128 + signum."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopTraining(SearchRLError):
    """The run cannot continue (repeated non-finite updates, or the collapse monitor said stop)."""


@dataclass
class QuestionSampler:
    """Batches of questions in epoch-wise permutations that depend only on (seed, epoch).

    The batch of step s is positions [(s−1)·B, s·B) of the concatenated permutations (the data cursor), so a
    resumed run draws exactly the questions an uninterrupted run would.
    """

    questions: list[Question]
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

    def batch(self, step: int) -> list[Question]:
        n = len(self.questions)
        return [self.questions[self._epoch(pos // n)[pos % n]]
                for pos in range(self.cursor(step), self.cursor(step) + self.batch_size)]


@dataclass
class CurriculumSampler:
    """`data.train_types_steps`: steps 1..`steps` draw from `first` (the questions of `data.train_types`), the later
    steps from `rest` (every training question), each in its own seeded epochs; the data cursor counts both."""

    first: QuestionSampler
    rest: QuestionSampler
    steps: int

    def cursor(self, step: int) -> int:
        return self.first.cursor(step)

    def batch(self, step: int) -> list[Question]:
        return self.first.batch(step) if step <= self.steps else self.rest.batch(step - self.steps)


@dataclass
class TrainerState:
    """Everything besides weights and optimiser that a checkpoint restores."""

    step: int = 0  # last completed RL step
    lr_scale: float = 1.0  # product of the rollback learning-rate factors so far
    nonfinite_streak: int = 0
    nonfinite_rollbacks: int = 0
    best_score: float | None = None
    best_step: int | None = None
    evals: dict = field(default_factory=dict)  # "untrained" / "start" / "val_start" / "last" / "final" -> results
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


@dataclass
class Lap:
    """The wall time of one `Trainer.timed` block, set when the block ends."""

    seconds: float = 0.0


@dataclass
class Trainer:
    """The live objects of a run and its state (`loop.build` makes one per run or resume)."""

    cfg: Config
    run_dir: Path
    device: torch.device
    logger: RunLogger
    train_source: DataSource
    sampler: QuestionSampler | CurriculumSampler
    val_sources: list[DataSource]
    test_sources: list[DataSource] | None  # None: the start and final evaluations use the validation split
    retriever: Retriever
    val_retrievers: dict[str, Retriever]
    tokenizer: Any
    model: torch.nn.Module
    objective: Objective
    optimizer: torch.optim.Optimizer
    engine: RolloutEngine
    monitor: CollapseMonitor
    budget: TimeBudget
    probe: list[Trajectory] = field(default_factory=list)  # log.probe_trajectories: the fixed LLD probe set
    state: TrainerState = field(default_factory=TrainerState)
    reference: Callable[[], Any] | None = None  # the frozen start of RL for the KL term (`ensure_reference`)
    abortable: bool = True  # Ctrl-C may drop the step in flight (no weight has moved since the last checkpoint)
    stop_requested: int = 0  # the signal that asked to stop after this step (0: none)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time by phase, this process (`timed`)

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id)

    @property
    def val_names(self) -> list[str]:
        return [name for source in self.val_sources for name in dataset_names(source)]

    @property
    def val_types(self) -> dict[str, list[str]]:
        """Each validation dataset's question types (`metadata.type`), sorted: a fixed key set for the run."""
        out: dict[str, list[str]] = {}
        for source in self.val_sources:
            names = dataset_names(source)
            for q in source.questions:
                name = names[0] if len(names) == 1 else q.data_source
                kinds = out.setdefault(name, [])
                kind = (q.metadata or {}).get("type")
                if kind and kind not in kinds:
                    kinds.append(kind)
        return {name: sorted(kinds) for name, kinds in out.items()}

    def print(self, text: str) -> None:
        self.logger.print(text)

    def status(self, text: str) -> None:
        self.logger.status(f"step {self.state.step + 1}: {text}")

    @contextmanager
    def timed(self, phase: str) -> Iterator[Lap]:
        """Add the wall time of the block to `seconds[phase]` (summary.json's `time`: where a run's time went); the
        yielded `Lap` holds that same reading once the block ends, for a caller that reports it too."""
        lap = Lap()
        began = self.budget.clock()
        try:
            yield lap
        finally:
            lap.seconds = self.budget.clock() - began
            self.seconds[phase] = self.seconds.get(phase, 0.0) + lap.seconds

    @contextmanager
    def updating(self) -> Iterator[None]:
        """The optimiser updates of a step. Before them a Ctrl-C aborts the step (the live weights are still the
        last checkpoint's); from the first update on, it finishes the step and saves. The flag stays down after
        the updates: the weights are no longer the last checkpoint's until the step is saved or recorded."""
        self.abortable = False
        yield


def ensure_reference(t: Trainer) -> None:
    """The KL reference: the policy at the start of RL (after any warm start), i.e. checkpoint step 0. Under LoRA
    it is the model with its adapters disabled (the base model, no copy)."""
    if t.reference is not None or not t.objective.needs_ref:
        return
    t.reference = reference_policy(t.model)
    if not is_lora(t.model):
        start = checkpoint_dir(t.run_dir, 0) / "weights.safetensors"
        with t.reference() as frozen:
            for p in frozen.parameters():
                p.requires_grad_(True)  # so the trainable-name check matches, then frozen again
            load_trainable_state(frozen, load_file(str(start)), start)
            for p in frozen.parameters():
                p.requires_grad_(False)


# ============================================================================================ data and retrieval


def validation_sources(cfg: Config) -> list[DataSource]:
    """The sources validated on: `data.val`, or else the training source, each at `data.val_split`."""
    return [load_source(s, split=cfg.data.val_split) for s in (cfg.data.val or (cfg.data.train,))]


def test_sources(cfg: Config) -> list[DataSource] | None:
    """The same sources at `data.test_split` (None when it is null), evaluated only at the start and end of RL."""
    if cfg.data.test_split is None:
        return None
    return [load_source(s, split=cfg.data.test_split) for s in (cfg.data.val or (cfg.data.train,))]


def build_retriever(cfg: Config, source: DataSource) -> Retriever:
    """`retrieval.index` (a folder or URL), or BM25 over the training source's corpus (built once, cached)."""
    if cfg.retrieval.index:
        return load_retriever(cfg.retrieval.index, cache=cfg.retrieval.cache)
    if source.corpus_path is None:
        raise SearchRLError(
            f"data.train: '{cfg.data.train}' brings no corpus; set retrieval.index to an index folder or server URL"
        )
    index = load_index(cached_bm25_index(source.corpus_path, show_progress=False))
    return CachedRetriever(index) if cfg.retrieval.cache else index


def evaluation_retrievers(cfg: Config, train_source: DataSource, retriever: Retriever,
                          sources: Sequence[DataSource]) -> dict[str, Retriever]:
    """The training retriever for each evaluated source that searches the same passages (it shares the training
    source's corpus, or `retrieval.index` is set); the harness gives the others BM25 over their own corpus."""
    return {s.name: retriever for s in sources if cfg.retrieval.index or s.corpus_path == train_source.corpus_path}


def dataset_names(source: DataSource) -> list[str]:
    """The dataset names the evaluation harness reports for a source (one per data_source value)."""
    values = list(dict.fromkeys(q.data_source for q in source.questions))
    return [source.name] if len(values) <= 1 else values


# ============================================================================================ evaluation


def validate(t: Trainer, label: str, *, test: bool = False, limit: int | None = None) -> dict[str, Any]:
    """Greedy evaluation of the live policy on the validation split(s), or with `test=True` on the test split(s)
    (the validation split(s) when `data.test_split` is null); returns a JSON-safe summary.

    The question sample depends on `val.sample_seed` only, never on the run's seed: every run and seed that
    shares a config scores the same questions."""
    cfg = t.cfg
    on_test = test and t.test_sources is not None
    split = cfg.data.test_split if on_test else cfg.data.val_split
    if limit is None:
        limit = cfg.val.test_max_questions if on_test else cfg.val.max_questions
    t.logger.status(f"{'test' if on_test else 'validation'} ({label}, {split} split)")
    was_training = t.model.training
    with t.timed("evaluations") as lap:
        report = harness.evaluate(  # through the module, so a test's replacement is seen wherever imported
            t.model, t.tokenizer, t.test_sources if on_test else t.val_sources,
            retriever=t.val_retrievers or None, limit=limit, protocol_cfg=cfg.protocol, rollout_cfg=cfg.rollout,
            batch_size=cfg.val.batch_size, seed=cfg.val.sample_seed, progress=False,
        )
    seconds = lap.seconds
    if was_training:
        t.model.train()
    datasets: dict[str, dict[str, Any]] = {
        name: {k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        for name, entry in report.datasets.items()
    }
    per_question: dict[str, dict[str, float]] = {name: {} for name in datasets}
    question_types: dict[str, dict[str, str]] = {name: {} for name in datasets}
    for record in report.records:
        if record.get("finish_reason") == "retrieval_error":  # left out of the scores, counted by the harness
            continue
        per_question[record["dataset"]][record["uid"]] = float(record["em"])
        if record.get("type"):  # the question kind (the world's single-hop / bridge / comparison)
            question_types[record["dataset"]][record["uid"]] = record["type"]
    for name, types in question_types.items():
        kinds: dict[str, list[float]] = {}
        for uid, kind in types.items():
            kinds.setdefault(kind, []).append(per_question[name][uid])
        datasets[name]["em_by_type"] = {k: sum(v) / len(v) for k, v in sorted(kinds.items())}
    return {"label": label, "step": t.state.step, "split": split, "datasets": datasets,
            "per_question_em": per_question, "question_types": {n: q for n, q in question_types.items() if q},
            "seconds": seconds}


def val_metrics(t: Trainer, result: dict[str, Any] | None) -> dict[str, float]:
    """`val/score` (the model-selection score, `validation_score`), `val/<dataset>/<metric>` keys, and
    `val/<dataset>/em/<type>` for each question type the validation split holds (the world's single-hop, bridge,
    comparison); NaN on steps without validation."""
    keys = ("em", "em_ci_low", "em_ci_high", "f1", "f1_ci_low", "f1_ci_high", "searches", "format_valid")
    out = {"val/score": validation_score(result) if result else NAN}
    for name, types in t.val_types.items():
        entry = (result or {}).get("datasets", {}).get(name, {})
        for key in keys:
            out[f"val/{name}/{key}"] = float(entry.get(key, NAN))
        for kind in types:
            out[f"val/{name}/em/{kind}"] = float(entry.get("em_by_type", {}).get(kind, NAN))
    return out


def validation_score(result: dict[str, Any]) -> float:
    """The model-selection score of a validation: mean EM over its datasets."""
    ems = [entry["em"] for entry in result["datasets"].values() if not math.isnan(entry.get("em", NAN))]
    return sum(ems) / len(ems) if ems else NAN


def record_validation(t: Trainer, result: dict[str, Any]) -> bool:
    """Keep `result` as the latest validation; whether it is the best so far (a new `checkpoints/best`)."""
    t.state.evals["last"] = result
    score = validation_score(result)
    if t.state.best_score is None or score > t.state.best_score:
        t.state.best_score, t.state.best_step = score, t.state.step
        return True
    return False


def write_samples(t: Trainer, step: int, trajectories: list[Trajectory]) -> None:
    """samples/step_XXXX.jsonl: the step's trajectories, decoded (`log.samples_every`)."""
    lines = [json.dumps(trajectory_to_record(tr, t.tokenizer), ensure_ascii=False) for tr in trajectories]
    atomic_write_text(t.run_dir / "samples" / f"step_{step:04d}.jsonl", "".join(line + "\n" for line in lines))


# ============================================================================================ checkpoints


def save(t: Trainer, *, best: bool) -> None:
    """A checkpoint of the live state (and `checkpoints/best` when `best`)."""
    t.state.monitor = t.monitor.state_dict()
    with t.timed("checkpoints"):
        save_checkpoint(
            t.run_dir, t.state.step, model=t.model, optimizer=t.optimizer, scheduler=None,
            trainer_state=t.state.to_dict(t.sampler.cursor(t.state.step + 1)),
            keep_last=t.cfg.checkpoint.keep_last,
            protect=(0,),  # the start of RL: the KL reference and the baseline of every comparison
        )
        if best and t.cfg.checkpoint.keep_best and t.state.best_score is not None:
            mark_best(t.run_dir, t.state.step, t.state.best_score)


def rollback(t: Trainer, which: str, lr_factor: float, why: str) -> None:
    """Restore the best (`which="best"`) or latest checkpoint's weights and optimiser, and scale the learning rate
    by `lr_factor`; the step counter and the data cursor go on."""
    folder = (best_checkpoint(t.run_dir) if which == "best" else None) or latest_checkpoint(t.run_dir)
    if folder is None:
        raise StopTraining(f"{why} at step {t.state.step}, and there is no checkpoint to roll back to")
    load_checkpoint(folder, model=t.model, optimizer=t.optimizer, restore_rng_state=False)
    t.state.lr_scale *= lr_factor
    t.state.nonfinite_streak = 0
    t.print(f"[red]{why}: rolled back to {folder.name}; learning rate now x{t.state.lr_scale:g}[/red]")


# ============================================================================================ the time budget


def cpu_speed_probe() -> float:
    """Seconds for a fixed float32 matmul workload, the median of 5 repeats of a few milliseconds on two cores: the
    machine's present speed, whatever the run is doing. The time budget compares it with its value at the first RL
    steps; other work on the machine makes it slower, a change in the agent's trajectories does not."""
    a = torch.full((384, 384), 0.5)
    times = []
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(8):
            torch.mm(a, a)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


@dataclass
class TimeBudget:
    """`train.time_budget_min`, counted from the trainer's start: RL stops after the last step that leaves time
    for the final evaluations, re-estimated before every step.

    Needed for one more step: the longest of the last two steps (measured at the machine's present speed), plus
    the final evaluations: the validation and test evaluations of the start of RL, as long as they took then,
    scaled by how much slower the machine is now than over the first RL steps of this process, plus 10% and a
    margin for the final checkpoint and exports. The slowdown needs two witnesses to agree, each the median of the
    last 3 steps against the median of the first 3: the step's own wall time (which longer trajectories also
    raise) and a fixed matmul timed after each step (`cpu_speed_probe`, which a noisy moment on the machine moves
    more than it moves the run); the smaller of the two counts. `clock` is `time.perf_counter` (a test passes its
    own clock, and replaces `cpu_speed_probe`).
    """

    minutes: float | None
    clock: Callable[[], float] = time.perf_counter
    started: float = 0.0
    step_walls: list[float] = field(default_factory=list)
    probe_seconds: list[float] = field(default_factory=list)  # the speed probe after each step
    margin_s: float = 20.0
    window: int = 3  # steps in the baseline and in the present reading (medians of each witness)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    def record_step(self, wall_s: float) -> None:
        self.step_walls.append(wall_s)
        if self.minutes is not None:
            self.probe_seconds.append(cpu_speed_probe())

    def slowdown(self) -> float:
        """How much slower the machine is now than over the first steps of this process (≥ 1)."""
        if len(self.probe_seconds) <= self.window or len(self.step_walls) <= self.window:
            return 1.0

        def ratio(values: list[float]) -> float:
            baseline = statistics.median(values[: self.window])
            return statistics.median(values[-self.window:]) / baseline if baseline > 0 else 1.0

        return max(1.0, min(ratio(self.probe_seconds), ratio(self.step_walls)))

    def needed_to_finish(self, final_eval_s: float) -> float:
        return 1.1 * self.slowdown() * final_eval_s + self.margin_s

    def allows_another_step(self, final_eval_s: float) -> bool:
        """Whether one more step and then the final evaluations end within the budget."""
        if self.minutes is None or not self.step_walls:
            return True
        step = max(self.step_walls[-2:])
        return self.elapsed() + step + self.needed_to_finish(final_eval_s) <= self.minutes * 60


def final_eval_seconds(t: Trainer) -> float:
    """How long the final evaluations took at the start of RL: the validation, and the test when there is one."""

    def seconds(*keys: str) -> float:
        value = next((e.get("seconds", 0.0) for k in keys if (e := t.state.evals.get(k))), 0.0)
        return value if math.isfinite(value) else 0.0

    return seconds("val_start", "last") + (seconds("start") if t.test_sources is not None else 0.0)
