"""Collapse monitor: rules over the per-step metric series that warn before the reward falls.

The trainer calls `CollapseMonitor.update(step, metrics)` once per step with the flat metrics row it
logs to metrics.jsonl, writes each returned `MonitorEvent` to events.jsonl (`event.to_record()`, schema
in docs/metrics.md), and acts on `strongest_action(events)`:

- "warn": log the warning and continue;
- "stop": save and stop training;
- "rollback": restore the best checkpoint, multiply the learning rate by `cfg.rollback_lr_factor`, call
  `monitor.on_rollback(step)` and continue. After `cfg.max_rollbacks` rollbacks a rollback decision
  becomes "stop".

    monitor = CollapseMonitor(cfg.monitor)                             # once, at start
    monitor.load_state_dict(checkpoint["monitor"])                     # on resume
    monitor.observe_start(start_of_rl_validation_row)                  # once, before step 1 (val_drop's start)
    events = monitor.update(step, row)                                 # every step, after logging `row`
    append_events(run_dir / "events.jsonl", events)
    action = strongest_action(events)                                  # None, "warn", "rollback" or "stop"

The monitor only decides; the trainer performs the stop or rollback. It is stateful (streaks, moving
windows, best values, the early-entropy baseline) and serialisable with `state_dict()` /
`load_state_dict()`, so a resumed run keeps its history.

Default thresholds come from the papers' curves (SAPO arXiv 2603.10069 Fig. 1, LLDS arXiv 2512.04220 Figs. 4
and 7, CalibAdv arXiv 2604.18235's entropy monitor) and from this project's measured collapses (docs/experiments.md):
GRPO's importance ratio falls from ≈1 to ≈0.02 and its clip fraction spikes to ≈0.27 while reward
collapses (SAPO Fig. 1); entropy rises ≈4× before the collapse (SAPO Fig. 1(c); CalibAdv's entropy
spikes); the valid-search rate and reward fall to zero (LLDS Figs. 4 and 7).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from searchrl.errors import SettingError
from searchrl.settings import build, check, setting, to_dict

# Rule kinds. Each is a predicate over one metric's series; see `RuleConfig`.
RULE_KINDS: tuple[str, ...] = ("below", "above", "above_early_median", "drop_from_best", "nonfinite")
# What the trainer should do on a collapse warning, weakest first.
ACTIONS: tuple[str, ...] = ("warn", "rollback", "stop")


@dataclass(frozen=True)
class RuleConfig:
    """One collapse rule. It fires once when its condition has held `patience` steps, then stays quiet until the
    condition clears (no warning every step while collapsed).

    kind:
      - "below": value < threshold for `patience` consecutive observed steps.
      - "above": value > threshold for `patience` consecutive observed steps.
      - "above_early_median": value > threshold × median(first `baseline_steps` observed values), for
        `patience` consecutive steps after the baseline is set.
      - "drop_from_best": moving average over `window` steps < threshold × best moving average so far,
        after `warmup` observed steps, for `patience` consecutive steps (only once the best is > 0).
      - "nonfinite": a listed metric is NaN or ±inf, or a listed `…_count` metric is > threshold.
    metrics: in order of preference; the first one present with a finite value in a step's row is used (e.g.
      `diag/is_ratio_mean`, then the trainer's `actor/is_ratio_mean`). For "nonfinite" every listed key is
      checked. A step where none has a finite value is not observed: it neither extends nor breaks a streak
      (NaN means "not applicable" in the metric schema).
    """

    kind: str = setting(help="what the rule tests (see the class docstring)", choices=RULE_KINDS)
    metrics: tuple[str, ...] = setting(help="metric keys, in order of preference", alias="metric")
    threshold: float = setting(help="the bound, or the factor of a relative kind")
    patience: int = setting(1, "consecutive observed steps the condition must hold", ge=1)
    window: int = setting(1, "moving-average window (drop_from_best)", ge=1)
    warmup: int = setting(0, "observed steps before the rule may fire (drop_from_best)", ge=0)
    baseline_steps: int = setting(5, "observed values whose median is the baseline (above_early_median)", ge=1)
    enabled: bool = setting(True, "false: the rule never fires")
    action: str | None = setting(None, "overrides `monitor.on_collapse` for this rule (null: use it)", choices=ACTIONS)
    description: str = setting("", "what the rule detects (shown in the warning)")

    def __post_init__(self) -> None:
        check(self)
        if not self.metrics or not all(self.metrics):
            raise SettingError("metrics", f"at least one (non-empty) metric key is needed, got {list(self.metrics)}")
        if self.kind == "drop_from_best" and not 0.0 < self.threshold < 1.0:
            raise SettingError("threshold", f"a drop_from_best factor must be in (0, 1), got {self.threshold}")
        if self.kind == "above_early_median" and self.threshold <= 0.0:
            raise SettingError("threshold", f"an above_early_median factor must be > 0, got {self.threshold}")


def default_rules() -> dict[str, RuleConfig]:
    """The default rules, with thresholds read from the papers' curves."""
    return {
        "is_ratio_low": RuleConfig(
            kind="below", metrics=("diag/is_ratio_mean", "actor/is_ratio_mean"), threshold=0.5, patience=3,
            description="importance ratio collapsing toward 0 (SAPO Fig. 1a: GRPO falls from ~1 to ~0.02)",
        ),
        "clip_spike": RuleConfig(
            kind="above", metrics=("diag/clip_frac", "actor/clip_frac"), threshold=0.2, patience=3,
            description="PPO clip fraction spiking (SAPO Fig. 1b: GRPO reaches ~0.27 at collapse)",
        ),
        "entropy_blowup": RuleConfig(
            kind="above_early_median", metrics=("diag/entropy", "actor/entropy"), threshold=3.0, patience=1,
            baseline_steps=5,
            description="entropy running away from its early level (SAPO Fig. 1c: ~1 to ~4.4 before collapse)",
        ),
        "format_drop": RuleConfig(
            kind="drop_from_best", metrics=("diag/format_valid", "env/format_valid"), threshold=0.5,
            window=5, warmup=10,
            description="valid-format rate halved from its best (LLDS Fig. 4: valid searches fall to 0)",
        ),
        "format_collapse": RuleConfig(
            kind="drop_from_best", metrics=("diag/format_valid", "env/format_valid"), threshold=1 / 3,
            window=1, warmup=1,
            description="valid-format rate fell below a third of its best in one step (measured in "
                        "docs/experiments.md: GRPO in the collapse regime went from 0.75 to 0.00 at step 2)",
        ),
        "answer_collapse": RuleConfig(
            kind="drop_from_best", metrics=("env/answered",), threshold=1 / 3, window=1, warmup=1,
            description="the share of trajectories that give an answer fell below a third of its best in one step "
                        "(the agent stops answering: measured in docs/experiments.md, GRPO went from 0.94 to 0.06 "
                        "at step 2, after which every group is all wrong and the gradient is zero)",
        ),
        "reward_drop": RuleConfig(
            kind="drop_from_best", metrics=("reward/mean",), threshold=0.5, window=5, warmup=10,
            description="reward halved from its best moving average (SAPO Fig. 1d, LLDS Fig. 7)",
        ),
        "search_drop": RuleConfig(
            kind="drop_from_best", metrics=("diag/searches_mean", "env/searches_mean"), threshold=0.8,
            window=3, warmup=3, patience=2,
            description="searches per trajectory fell by a fifth from their best (the agent stops searching: "
                        "measured in docs/experiments.md, SAPO at lr 2e-5 went from 1.5 to 1.0 searches)",
        ),
        "empty_searches": RuleConfig(
            kind="above", metrics=("env/empty_search_share",), threshold=0.5, patience=1,
            description="most searches retrieved nothing (the agent searches for words the corpus does not hold: "
                        "measured in docs/experiments.md, an off-policy GRPO run took to searching the instruction's "
                        "placeholder `query`; 54 of its 55 searches at step 4 retrieved nothing, and it answered "
                        "without evidence)",
        ),
        "val_drop": RuleConfig(
            kind="drop_from_best", metrics=("val/score",), threshold=0.5, window=1, warmup=0,
            description="validation EM fell below half its best, the start of RL included (the report's collapse "
                        "rule; measured in docs/experiments.md, an off-policy GRPO run's dev EM went from 0.44 to "
                        "0.08 at step 3)",
        ),
        "nonfinite": RuleConfig(
            kind="nonfinite", metrics=("actor/pg_loss", "actor/grad_norm", "diag/grad_norm", "diag/nonfinite_count"),
            threshold=0.0,
            description="NaN or Inf in the loss or gradient",
        ),
    }


@dataclass(frozen=True)
class MonitorConfig:
    """Collapse-monitor settings (config section `monitor`; docs/metrics.md lists the rules)."""

    enabled: bool = setting(True, "run the collapse monitor")
    on_collapse: str = setting(
        "warn", "what a firing rule asks the trainer to do: \"warn\", \"stop\" or \"rollback\".", choices=ACTIONS
    )
    min_trajectories: int = setting(
        64, "rules read the steps in blocks of at least this many sampled trajectories (each rate the mean over the "
        "block): a step of one question's 8 samples is too noisy to judge a rate on; a step of this many or more is "
        "read alone. The nonfinite rule reads every step.", ge=1,
    )
    rollback_lr_factor: float = setting(0.5, "a rollback multiplies the learning rate by this (in (0, 1]).", gt=0, le=1)
    max_rollbacks: int = setting(2, "rollbacks allowed per run; beyond it a rollback decision becomes \"stop\".", ge=0)
    rules: dict[str, RuleConfig] = setting(
        factory=default_rules,
        help="rule name -> RuleConfig settings; a default rule changes only the keys given "
        "(`monitor.rules.clip_spike.patience=5`), false switches it off, a new rule needs kind, metric(s) and "
        "threshold",
    )

    def __post_init__(self) -> None:
        check(self, "monitor")

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None, *, where: str = "monitor") -> MonitorConfig:
        """From plain data (YAML `monitor:` after dotted overrides); see `searchrl.settings.build`."""
        return build(cls, raw, where)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (for the run's saved config); `from_dict(to_dict())` gives an equal config."""
        return to_dict(self)


# ----------------------------------------------------------------------------------------------------
# Events
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MonitorEvent:
    """One collapse warning. `to_record()` is the events.jsonl line (docs/metrics.md)."""

    step: int
    rule: str
    message: str
    metric: str
    value: float  # the value that crossed (a moving average for drop_from_best); NaN/inf for nonfinite
    threshold: float  # the effective threshold (factor × baseline or × best for relative rules)
    action: str  # "warn" | "rollback" | "stop": what the trainer should do

    def to_record(self) -> dict[str, Any]:
        """JSON-safe dict; a non-finite value is written as null (the message keeps its text)."""
        def finite_or_none(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "step": int(self.step), "rule": self.rule, "message": self.message, "metric": self.metric,
            "value": finite_or_none(self.value), "threshold": finite_or_none(self.threshold),
            "action": self.action,
        }


def strongest_action(events: Iterable[MonitorEvent]) -> str | None:
    """The most severe action among `events` ("stop" > "rollback" > "warn"), None if there are none."""
    ranked = [ACTIONS.index(e.action) for e in events]
    return ACTIONS[max(ranked)] if ranked else None


def append_events(path: str | os.PathLike[str], events: Iterable[MonitorEvent]) -> None:
    """Append events as JSON lines to `path` (events.jsonl), flushed and fsynced (an append-only log)."""
    lines = "".join(json.dumps(e.to_record()) + "\n" for e in events)
    if not lines:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(lines)
        fh.flush()
        os.fsync(fh.fileno())


# ----------------------------------------------------------------------------------------------------
# The monitor
# ----------------------------------------------------------------------------------------------------


@dataclass
class _RuleState:
    streak: int = 0  # consecutive observed steps with the condition true
    latched: bool = False  # fired and the condition has not cleared since
    observed: int = 0  # observed (finite) steps
    recent: list[float] = field(default_factory=list)  # last `window` values (drop_from_best)
    best: float | None = None  # best moving average (drop_from_best)
    baseline_values: list[float] = field(default_factory=list)  # first values (above_early_median)
    streak_start: int | None = None  # step where the current streak began

    def reset_streak(self) -> None:
        self.streak, self.latched, self.streak_start = 0, False, None

    def fires(self, step: int, patience: int) -> bool:
        """The condition held at `step`: extend the streak; True when it has held `patience` steps and the rule has
        not fired since the condition last cleared (then it latches)."""
        if self.streak == 0:
            self.streak_start = step
        self.streak += 1
        if self.streak < patience or self.latched:
            return False
        self.latched = True
        return True


def reads_validation(rule: RuleConfig) -> bool:
    """The rule reads validation keys (`val/…`) only: a validation already covers many questions."""
    return all(key.startswith("val/") for key in rule.metrics)


def reads_every_row(rule: RuleConfig) -> bool:
    """The nonfinite rule and the rules on validation keys read each step's row, never block means."""
    return rule.kind == "nonfinite" or reads_validation(rule)


def _first_finite(metrics: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, float] | None:
    for key in keys:
        if key in metrics:
            try:
                value = float(metrics[key])
            except (TypeError, ValueError):
                continue
            if math.isfinite(value):
                return key, value
    return None


class CollapseMonitor:
    """Watch the metric rows of a run and emit `MonitorEvent`s when a collapse rule fires."""

    STATE_VERSION = 1

    def __init__(self, cfg: MonitorConfig | None = None, trajectories_per_step: int | None = None) -> None:
        self.cfg = cfg if cfg is not None else MonitorConfig()
        self.rollbacks_used = 0
        self.last_step: int | None = None
        self._states: dict[str, _RuleState] = {name: _RuleState() for name in self.cfg.rules}
        # Steps per block (`MonitorConfig.min_trajectories`); unknown trajectories per step: every step alone.
        self.block_steps = 1 if not trajectories_per_step else max(
            1, math.ceil(self.cfg.min_trajectories / trajectories_per_step))
        self._block_keys = {k for rule in self.cfg.rules.values() if not reads_every_row(rule) for k in rule.metrics}
        self._pending: list[dict[str, float]] = []  # the current block's rows, reduced to `_block_keys`

    # -- decisions -------------------------------------------------------------------------------

    def _action(self, rule: RuleConfig) -> str:
        action = rule.action or self.cfg.on_collapse
        if action == "rollback" and self.rollbacks_used >= self.cfg.max_rollbacks:
            return "stop"
        return action

    def update(self, step: int, metrics: Mapping[str, Any]) -> list[MonitorEvent]:
        """Feed one step's metrics row; return the rules that fire at this step (usually none). The nonfinite rule
        reads every row, as do the rules on validation keys (`val/…`: a validation already covers many
        questions); the others read the mean of each block of `block_steps` rows, at the block's last step."""
        self.last_step = int(step)
        if not self.cfg.enabled:
            return []
        block: Mapping[str, Any] | None = metrics
        if self.block_steps > 1:
            row: dict[str, float] = {}
            for key in self._block_keys:
                found = _first_finite(metrics, (key,))
                if found is not None:
                    row[key] = found[1]
            self._pending.append(row)
            block = None
            if len(self._pending) >= self.block_steps:
                means: dict[str, float] = {}
                for key in self._block_keys:
                    values = [pending[key] for pending in self._pending if key in pending]
                    means[key] = sum(values) / len(values) if values else math.nan
                block = means
                self._pending = []
        events: list[MonitorEvent] = []
        for name, rule in self.cfg.rules.items():
            if not rule.enabled:
                continue
            read = metrics if reads_every_row(rule) else block
            if read is None:
                continue
            state = self._states.setdefault(name, _RuleState())
            event = self._check(name, rule, state, int(step), read)
            if event is not None:
                events.append(event)
        return events

    def observe_start(self, metrics: Mapping[str, Any]) -> None:
        """The start-of-RL validation (step 0, before any update): the rules on validation keys take it as their
        first observation, so a drop is measured from it (no rule can fire on a first observation)."""
        if not self.cfg.enabled:
            return
        for name, rule in self.cfg.rules.items():
            if rule.enabled and rule.kind != "nonfinite" and reads_validation(rule):
                self._check(name, rule, self._states.setdefault(name, _RuleState()), 0, metrics)

    def _check(
        self, name: str, rule: RuleConfig, state: _RuleState, step: int, metrics: Mapping[str, Any]
    ) -> MonitorEvent | None:
        if rule.kind == "nonfinite":
            return self._check_nonfinite(name, rule, state, step, metrics)
        found = _first_finite(metrics, rule.metrics)
        if found is None:
            return None  # not observed: NaN means "not applicable this step"
        metric, value = found
        state.observed += 1
        condition, shown_value, threshold, relation = False, value, rule.threshold, ""
        if rule.kind == "below":
            condition, relation = value < rule.threshold, "<"
        elif rule.kind == "above":
            condition, relation = value > rule.threshold, ">"
        elif rule.kind == "above_early_median":
            if len(state.baseline_values) < rule.baseline_steps:
                state.baseline_values.append(value)
                return None  # the baseline steps themselves cannot fire
            baseline = statistics.median(state.baseline_values)
            threshold, relation = rule.threshold * baseline, ">"
            condition = value > threshold
        elif rule.kind == "drop_from_best":
            state.recent = (state.recent + [value])[-rule.window :]
            if len(state.recent) < rule.window:
                return None
            moving = sum(state.recent) / len(state.recent)
            shown_value = moving
            if state.best is None or moving > state.best:
                state.best = moving
            threshold, relation = rule.threshold * state.best, "<"
            condition = state.observed > rule.warmup and state.best > 0 and moving < threshold
        if not condition:
            state.reset_streak()
            return None
        if not state.fires(step, rule.patience):
            return None
        if rule.kind == "drop_from_best":
            unit = "steps" if self.block_steps == 1 else f"blocks of {self.block_steps} steps"
            what = f"moving average over {rule.window} {unit} of {metric}"
        elif self.block_steps > 1:
            what = f"{metric} (mean over the last {self.block_steps} steps)"
        else:
            what = metric
        basis = ""
        if rule.kind == "above_early_median":
            basis = f" (= {rule.threshold:g} x median of its first {rule.baseline_steps} values)"
        elif rule.kind == "drop_from_best":
            basis = f" (= {rule.threshold:g} x its best, {state.best:.4g})"
        duration = f" for {state.streak} consecutive steps since step {state.streak_start}" if rule.patience > 1 else ""
        action = self._action(rule)
        message = (
            f"collapse warning [{name}] at step {step}: {what} = {shown_value:.4g} {relation} "
            f"{threshold:.4g}{basis}{duration}; {rule.description}. Action: {action}."
        )
        return MonitorEvent(step, name, message, metric, shown_value, threshold, action)

    def _check_nonfinite(
        self, name: str, rule: RuleConfig, state: _RuleState, step: int, metrics: Mapping[str, Any]
    ) -> MonitorEvent | None:
        bad: tuple[str, float] | None = None
        for key in rule.metrics:
            if key not in metrics or metrics[key] is None:
                continue
            try:
                value = float(metrics[key])
            except (TypeError, ValueError):
                continue
            if not math.isfinite(value) or (key.endswith("_count") and value > rule.threshold):
                bad = (key, value)
                break
        if bad is None:
            state.reset_streak()
            return None
        state.observed += 1
        if not state.fires(step, rule.patience):
            return None
        key, value = bad
        action = self._action(rule)
        message = f"collapse warning [{name}] at step {step}: {key} = {value:g}; {rule.description}. Action: {action}."
        return MonitorEvent(step, name, message, key, value, rule.threshold, action)

    def on_rollback(self, step: int) -> None:
        """The trainer restored a checkpoint at `step`: count it and clear streaks and moving windows.

        Baselines and best values are kept: they describe the healthy run the checkpoint came from.
        """
        self.rollbacks_used += 1
        self.last_step = int(step)
        self._pending = []
        for state in self._states.values():
            state.reset_streak()
            state.recent = []

    # -- persistence -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state (store it in the checkpoint)."""
        return {
            "version": self.STATE_VERSION,
            "rollbacks_used": self.rollbacks_used,
            "last_step": self.last_step,
            "rules": {name: asdict(state) for name, state in self._states.items()},
            "pending": [dict(row) for row in self._pending],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore from `state_dict()`. Rules no longer configured are dropped; new rules start fresh."""
        if state.get("version") != self.STATE_VERSION:
            raise ValueError(
                f"collapse monitor state has version {state.get('version')!r}, expected {self.STATE_VERSION}"
            )
        self.rollbacks_used = int(state.get("rollbacks_used", 0))
        last = state.get("last_step")
        self.last_step = None if last is None else int(last)
        self._pending = [dict(row) for row in state.get("pending", [])]
        known = {f.name for f in fields(_RuleState)}
        saved = state.get("rules", {})
        self._states = {}
        for name in self.cfg.rules:
            raw = saved.get(name)
            self._states[name] = _RuleState(**{k: v for k, v in raw.items() if k in known}) if raw else _RuleState()
