"""Collapse monitor: every rule fires on a series that crosses it and stays quiet on one that does not."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from searchrl.errors import ConfigError
from searchrl.analysis.monitor import (
    CollapseMonitor,
    MonitorConfig,
    MonitorEvent,
    RuleConfig,
    append_events,
    default_rules,
    strongest_action,
)

NAN = float("nan")


def only(rule: str, **cfg: object) -> MonitorConfig:
    """A config where only `rule` is enabled (so other defaults cannot fire on the synthetic rows)."""
    rules = {name: {"enabled": name == rule} for name in default_rules()}
    return MonitorConfig.from_dict({"rules": rules, **cfg})


def feed(monitor: CollapseMonitor, key: str, values: list[float], start: int = 1) -> list[MonitorEvent]:
    events = []
    for offset, value in enumerate(values):
        events += monitor.update(start + offset, {key: value})
    return events


def test_is_ratio_low_needs_three_consecutive_steps() -> None:
    events = feed(CollapseMonitor(only("is_ratio_low")), "diag/is_ratio_mean", [1.0, 1.0, 0.4, 0.3, 0.2, 0.1])
    assert [(e.step, e.rule, e.metric) for e in events] == [(5, "is_ratio_low", "diag/is_ratio_mean")]
    assert events[0].value == pytest.approx(0.2) and events[0].threshold == pytest.approx(0.5)
    assert "0.2 < 0.5" in events[0].message and "since step 3" in events[0].message
    # A recovery in between resets the streak: quiet.
    assert feed(CollapseMonitor(only("is_ratio_low")), "diag/is_ratio_mean", [0.4, 0.4, 0.9, 0.4, 0.4, 1.0]) == []
    # A NaN step (not applicable) neither breaks nor extends the streak.
    events = feed(CollapseMonitor(only("is_ratio_low")), "diag/is_ratio_mean", [0.4, NAN, 0.4, 0.4])
    assert [e.step for e in events] == [4]


def test_clip_spike_falls_back_to_the_trainer_key() -> None:
    monitor = CollapseMonitor(only("clip_spike"))
    events = feed(monitor, "actor/clip_frac", [0.01, 0.25, 0.27, 0.3])
    assert [(e.step, e.metric) for e in events] == [(4, "actor/clip_frac")]
    assert feed(CollapseMonitor(only("clip_spike")), "diag/clip_frac", [0.19, 0.2, 0.15, 0.2]) == []  # 0.2 is not > 0.2


def test_entropy_blowup_against_early_median() -> None:
    series = [1.0, 1.2, 0.8, 1.0, 1.0, 2.0, 3.5]  # median of the first five = 1.0
    events = feed(CollapseMonitor(only("entropy_blowup")), "diag/entropy", series)
    assert [(e.step, e.threshold) for e in events] == [(7, pytest.approx(3.0))]
    assert feed(CollapseMonitor(only("entropy_blowup")), "diag/entropy", series[:6] + [2.9, 2.95]) == []
    # The baseline steps themselves never fire, whatever their values.
    assert feed(CollapseMonitor(only("entropy_blowup")), "diag/entropy", [0.1, 10.0, 10.0, 10.0, 10.0]) == []


def test_format_drop_from_best_moving_average() -> None:
    series = [0.9] * 12 + [0.3] * 5  # MA5 after k low steps: (0.9·(5−k) + 0.3·k)/5; < 0.45 from k = 4
    events = feed(CollapseMonitor(only("format_drop")), "diag/format_valid", series)
    assert [e.step for e in events] == [16]
    assert events[0].value == pytest.approx(0.42) and events[0].threshold == pytest.approx(0.45)
    assert feed(CollapseMonitor(only("format_drop")), "env/format_valid", [0.9] * 12 + [0.6] * 8) == []


def test_search_drop_fires_when_the_agent_stops_searching() -> None:
    # The measured SAPO run at lr 2e-5 (docs/experiments.md): 1.5 searches per trajectory, then 1.0.
    measured = [1.48, 1.52, 1.09, 1.11, 1.02, 1.0, 1.02, 1.05, 1.0, 1.03]
    events = feed(CollapseMonitor(only("search_drop")), "diag/searches_mean", measured)
    assert [e.step for e in events] == [6] and events[0].rule == "search_drop"
    # CalibAdv's run in the same comparison searched more, and GRPO's stayed level: no warning.
    rising = [1.48, 1.64, 1.72, 1.78, 1.75, 1.61, 1.7, 1.88, 1.83, 1.77]
    level = [1.48, 1.55, 1.59, 1.52, 1.52, 1.55, 1.44, 1.61, 1.58, 1.48]
    assert feed(CollapseMonitor(only("search_drop")), "diag/searches_mean", rising) == []
    assert feed(CollapseMonitor(only("search_drop")), "env/searches_mean", level) == []


def test_format_collapse_fires_at_the_step_grpo_lost_the_protocol() -> None:
    # Format validity per step of the collapse regime's seed-0 runs (results/collapse/*/metrics.jsonl).
    grpo = [0.75, 0.0, 0.16, 0.02, 0.02, 0.0, 0.25, 0.98, 1.0, 0.98, 0.95, 1.0]
    sapo = [0.75, 0.92, 0.88, 0.91, 0.91, 0.84, 0.92, 0.97, 0.95, 0.84, 0.62, 0.77]
    events = feed(CollapseMonitor(only("format_collapse")), "diag/format_valid", grpo)
    assert [e.step for e in events] == [2] and events[0].rule == "format_collapse"
    assert feed(CollapseMonitor(only("format_collapse")), "diag/format_valid", sapo) == []
    # An untrained start (format 0) that learns the protocol is not a collapse.
    assert feed(CollapseMonitor(only("format_collapse")), "diag/format_valid", [0.0, 0.0, 0.1, 0.4, 0.8]) == []


def test_reward_drop_respects_warmup_and_a_positive_best() -> None:
    rising_then_collapse = [0.1 + 0.04 * i for i in range(15)] + [0.0] * 6
    events = feed(CollapseMonitor(only("reward_drop")), "reward/mean", rising_then_collapse)
    assert len(events) == 1 and events[0].rule == "reward_drop" and events[0].step > 15
    # Collapse inside the warm-up (10 steps): quiet.
    assert feed(CollapseMonitor(only("reward_drop")), "reward/mean", [0.5] * 5 + [0.0] * 4) == []
    # A reward that never rose above 0 cannot "fall by half".
    assert feed(CollapseMonitor(only("reward_drop")), "reward/mean", [0.0] * 30) == []
    # Noise around a level is not a collapse.
    noisy = [0.4 + (0.1 if i % 2 else -0.1) for i in range(40)]
    assert feed(CollapseMonitor(only("reward_drop")), "reward/mean", noisy) == []


def test_nonfinite_rule() -> None:
    monitor = CollapseMonitor(only("nonfinite"))
    assert monitor.update(1, {"actor/pg_loss": 0.3, "actor/grad_norm": 1.2, "diag/nonfinite_count": 0}) == []
    events = monitor.update(2, {"actor/pg_loss": NAN, "actor/grad_norm": 1.2})
    assert [(e.rule, e.metric) for e in events] == [("nonfinite", "actor/pg_loss")]
    assert events[0].to_record()["value"] is None  # NaN is written as null
    events = CollapseMonitor(only("nonfinite")).update(1, {"actor/pg_loss": 0.1, "diag/nonfinite_count": 2})
    assert [e.metric for e in events] == ["diag/nonfinite_count"]
    assert CollapseMonitor(only("nonfinite")).update(1, {"actor/grad_norm": math.inf})[0].metric == "actor/grad_norm"
    assert CollapseMonitor(only("nonfinite")).update(1, {}) == []  # missing keys are not an error


def test_fires_once_per_episode_and_rearms() -> None:
    monitor = CollapseMonitor(only("clip_spike", rules={"clip_spike": {"patience": 1}}))
    events = feed(monitor, "diag/clip_frac", [0.3, 0.3, 0.3, 0.1, 0.3])
    assert [e.step for e in events] == [1, 5]


def test_warns_before_the_reward_falls_on_a_sapo_fig1_like_curve() -> None:
    """GRPO in SAPO Fig. 1: the ratio falls at ~step 90, the clip fraction spikes, reward collapses at ~120."""
    monitor = CollapseMonitor()
    first_step: dict[str, int] = {}
    for step in range(1, 141):
        decay = max(0.0, (step - 90) / 30)  # 0 before step 90, 1 at step 120
        row = {
            "diag/is_ratio_mean": 1.0 - 0.98 * min(1.0, decay),
            "diag/clip_frac": 0.01 + 0.26 * min(1.0, decay),
            "diag/entropy": 1.0 + 0.03 * min(step, 75),
            "reward/mean": 0.55 * min(1.0, step / 60) * (1.0 if step < 115 else max(0.0, 1 - (step - 115) / 5)),
            "diag/format_valid": 0.9,
            "actor/pg_loss": 0.01,
            "actor/grad_norm": 0.5,
        }
        for event in monitor.update(step, row):
            first_step.setdefault(event.rule, step)
    assert {"is_ratio_low", "clip_spike", "reward_drop"} <= set(first_step)
    assert first_step["is_ratio_low"] < first_step["reward_drop"]
    assert first_step["clip_spike"] < first_step["reward_drop"]
    assert "format_drop" not in first_step and "nonfinite" not in first_step


def test_actions_rollback_budget_and_strongest() -> None:
    cfg = only("clip_spike", on_collapse="rollback", max_rollbacks=1, rules={"clip_spike": {"patience": 1}})
    monitor = CollapseMonitor(cfg)
    assert monitor.update(1, {"diag/clip_frac": 0.5})[0].action == "rollback"
    monitor.on_rollback(1)
    assert monitor.rollbacks_used == 1
    # After the rollback the streak is cleared, so the same condition fires again, now beyond the budget.
    assert monitor.update(2, {"diag/clip_frac": 0.5})[0].action == "stop"
    events = [MonitorEvent(1, "a", "", "m", 0.0, 0.0, "warn"), MonitorEvent(1, "b", "", "m", 0.0, 0.0, "rollback")]
    assert strongest_action(events) == "rollback" and strongest_action([]) is None
    # A rule can override the run-wide action.
    cfg = only("nonfinite", rules={"nonfinite": {"action": "stop"}})
    assert CollapseMonitor(cfg).update(1, {"actor/pg_loss": NAN})[0].action == "stop"


def test_state_round_trip_matches_an_uninterrupted_run() -> None:
    def rows() -> list[dict[str, float]]:
        out = []
        for step in range(1, 41):
            out.append({
                "reward/mean": 0.5 if step < 25 else 0.05,
                "diag/entropy": 1.0 if step < 30 else 4.0,
                "diag/is_ratio_mean": 1.0 if step < 20 else 0.3,
                "diag/clip_frac": 0.0,
                "diag/format_valid": 0.9,
            })
        return out

    full = CollapseMonitor()
    expected = [e for step, row in enumerate(rows(), 1) for e in full.update(step, row)]
    assert {e.rule for e in expected} == {"reward_drop", "entropy_blowup", "is_ratio_low"}

    first = CollapseMonitor()
    got = [e for step, row in enumerate(rows()[:22], 1) for e in first.update(step, row)]
    state = json.loads(json.dumps(first.state_dict()))  # must survive JSON (it goes into the checkpoint)
    resumed = CollapseMonitor()
    resumed.load_state_dict(state)
    got += [e for step, row in enumerate(rows()[22:], 23) for e in resumed.update(step, row)]
    assert got == expected
    assert resumed.state_dict() == full.state_dict()
    with pytest.raises(ValueError, match="version"):
        CollapseMonitor().load_state_dict({"version": 99})


def test_config_from_dict_merges_validates_and_round_trips() -> None:
    cfg = MonitorConfig.from_dict({
        "on_collapse": "rollback", "rollback_lr_factor": "0.25",
        "rules": {
            "clip_spike": {"patience": "5", "threshold": 0.3},
            "entropy_blowup": False,
            "kl_high": {"kind": "above", "metric": "actor/ppo_kl", "threshold": 0.05, "patience": 2},
        },
    })
    assert cfg.on_collapse == "rollback" and cfg.rollback_lr_factor == 0.25
    assert cfg.rules["clip_spike"] == RuleConfig(
        kind="above", metrics=("diag/clip_frac", "actor/clip_frac"), threshold=0.3, patience=5,
        description=default_rules()["clip_spike"].description,
    )
    assert not cfg.rules["entropy_blowup"].enabled
    assert cfg.rules["kl_high"].metrics == ("actor/ppo_kl",)
    assert MonitorConfig.from_dict(cfg.to_dict()) == cfg
    assert MonitorConfig.from_dict(None) == MonitorConfig()
    events = feed(CollapseMonitor(cfg), "actor/ppo_kl", [0.1, 0.1])
    assert [e.rule for e in events] == ["kl_high"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"on_collapse": "panic"},
         "train.monitor.on_collapse: 'panic' is not allowed; allowed values: warn, rollback, stop"),
        ({"rollback_lr_factor": 2}, "train.monitor.rollback_lr_factor: must be in (0, 1]"),
        ({"max_rollbacks": -1}, "train.monitor.max_rollbacks: must be >= 0"),
        ({"colour": 1}, "train.monitor.colour: unknown key; allowed keys:"),
        ({"rules": {"clip_spike": {"patience": 0}}}, "train.monitor.rules.clip_spike.patience: must be >= 1"),
        ({"rules": {"clip_spike": {"patince": 2}}}, "train.monitor.rules.clip_spike.patince: unknown key"),
        ({"rules": {"clip_spike": {"patience": "many"}}}, "rules.clip_spike.patience: expected an integer"),
        ({"rules": {"reward_drop": {"threshold": 1.5}}}, "rules.reward_drop.threshold: a drop_from_best factor"),
        ({"rules": {"mine": {"metric": "x", "threshold": 1}}}, "rules.mine: a new entry needs kind"),
        ({"rules": {"mine": {"kind": "sideways", "metric": "x", "threshold": 1}}}, "rules.mine.kind: 'sideways'"),
        ({"rules": {"mine": False}}, "rules.mine: only an existing entry can be switched off"),
        ({"rules": {"clip_spike": {"action": "explode"}}}, "rules.clip_spike.action: 'explode' is not allowed"),
    ],
)
def test_config_errors_name_the_key(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        MonitorConfig.from_dict(raw, where="train.monitor")
    assert message in str(info.value)


def test_disabled_monitor_and_event_records(tmp_path) -> None:
    assert feed(CollapseMonitor(MonitorConfig(enabled=False)), "diag/is_ratio_mean", [0.0] * 10) == []
    events = feed(CollapseMonitor(only("is_ratio_low")), "diag/is_ratio_mean", [0.1, 0.1, 0.1])
    path = tmp_path / "events.jsonl"
    append_events(path, events)
    append_events(path, [])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [events[0].to_record()]
    assert set(lines[0]) == {"step", "rule", "message", "metric", "value", "threshold", "action"}
    assert lines[0]["step"] == 3 and lines[0]["rule"] == "is_ratio_low" and lines[0]["action"] == "warn"


def test_answer_collapse_fires_at_the_step_the_committed_grpo_run_stopped_answering() -> None:
    """The collapse study's GRPO seed-0 and seed-1 runs (results/collapse/, as committed): the share of trajectories
    that answer went 0.94 -> 0.06 and 0.88 -> 0.25 at step 2; the rule fires there, and never on SAPO's runs."""
    from searchrl.training.logger import read_jsonl

    results = Path(__file__).resolve().parents[1] / "results" / "collapse"
    for run, step in (("grpo-s0", 2), ("grpo-s1", 2)):
        answered = [row["env/answered"] for row in read_jsonl(results / run / "metrics.jsonl")]
        events = feed(CollapseMonitor(only("answer_collapse")), "env/answered", answered)
        assert [e.step for e in events] == [step] and events[0].rule == "answer_collapse", run
    for run in ("sapo-s0", "sapo-s1", "sapo-s2"):
        answered = [row["env/answered"] for row in read_jsonl(results / run / "metrics.jsonl")]
        assert feed(CollapseMonitor(only("answer_collapse")), "env/answered", answered) == [], run


def test_small_steps_are_read_in_blocks_of_64_trajectories() -> None:
    """A step of one question's 8 samples is read in blocks of 8 steps (64 trajectories): one question the agent
    does not answer (0/8) is no collapse; a sustained stop is seen at the end of its block; a NaN loss is still
    seen at its own step; a block in progress survives a checkpoint. With 64 trajectories a step, every step is
    read alone, as before."""
    healthy = [0.875, 1.0, 0.75, 1.0, 0.875, 1.0, 1.0, 0.875]
    one_bad_step = healthy + [1.0, 0.0, 1.0, 0.875, 1.0, 0.75, 1.0, 1.0]
    assert feed(CollapseMonitor(only("answer_collapse"), trajectories_per_step=8), "env/answered", one_bad_step) == []
    assert [e.step for e in feed(CollapseMonitor(only("answer_collapse"), trajectories_per_step=64), "env/answered",
                                 one_bad_step)] == [10]  # the same series read step by step: a false alarm

    stops = healthy + [0.25, 0.0, 0.125, 0.0, 0.0, 0.125, 0.0, 0.0]
    events = feed(CollapseMonitor(only("answer_collapse"), trajectories_per_step=8), "env/answered", stops)
    assert [e.step for e in events] == [16] and "blocks of 8 steps" in events[0].message
    assert events[0].value == pytest.approx(sum(stops[8:]) / 8)

    monitor = CollapseMonitor(only("nonfinite"), trajectories_per_step=8)
    assert [e.step for e in feed(monitor, "actor/pg_loss", [0.1, 0.2, NAN])] == [3]

    first = CollapseMonitor(only("answer_collapse"), trajectories_per_step=8)
    feed(first, "env/answered", stops[:12])
    resumed = CollapseMonitor(only("answer_collapse"), trajectories_per_step=8)
    resumed.load_state_dict(json.loads(json.dumps(first.state_dict())))
    assert [e.step for e in feed(resumed, "env/answered", stops[12:], start=13)] == [16]


def test_the_block_size_follows_from_the_trajectories_per_step() -> None:
    """The block size follows from the run's batch: 1 question x G=8 -> blocks of 8 steps; 8 x 8 -> each step."""
    assert CollapseMonitor(MonitorConfig(), trajectories_per_step=8).block_steps == 8
    assert CollapseMonitor(MonitorConfig(), trajectories_per_step=64).block_steps == 1
    assert CollapseMonitor(MonitorConfig(), trajectories_per_step=48).block_steps == 2
    assert CollapseMonitor(MonitorConfig.from_dict({"min_trajectories": 1}), trajectories_per_step=8).block_steps == 1


def test_empty_searches_fires_at_the_first_recorded_step_of_the_committed_placeholder_run() -> None:
    """Off-policy GRPO seed 3 of the on-policy control (results/collapse/onpolicy-control/grpo-offpolicy-s3, its
    samples as committed: every trajectory of steps 4, 8 and 12) searched for the instruction's placeholder word
    `query`, which the world's BM25 index does not hold: `env/empty_search_share`, computed from those trajectories
    as the trainer computes it, is 54/55, 61/61 and 64/64, and the rule fires at step 4, once. `answer_collapse`
    missed this run (answered 0.30 against a best of 0.80)."""
    from searchrl.training.logger import read_jsonl
    from searchrl.training.metrics import empty_search_share
    from searchrl.training.sft import read_trajectories

    run = Path(__file__).resolve().parents[1] / "results" / "collapse" / "onpolicy-control" / "grpo-offpolicy-s3"
    shares = {step: empty_search_share(read_trajectories(run / "samples" / f"step_{step:04d}.jsonl"))
              for step in (4, 8, 12)}
    assert shares == {4: pytest.approx(54 / 55), 8: 1.0, 12: 1.0}
    monitor = CollapseMonitor(only("empty_searches"))
    events = [e for step, share in shares.items() for e in monitor.update(step, {"env/empty_search_share": share})]
    assert [(e.step, e.rule, e.metric) for e in events] == [(4, "empty_searches", "env/empty_search_share")]
    assert "most searches retrieved nothing" in events[0].message
    answered = [row["env/answered"] for row in read_jsonl(run / "metrics.jsonl")]
    assert feed(CollapseMonitor(only("answer_collapse")), "env/answered", answered) == []


def test_empty_search_share_counts_executed_searches_only() -> None:
    """An executed search that found nothing counts; a search in the final turn (not executed), a search that ended
    on a retrieval error, and answers do not; no executed search at all is NaN (not applicable), so the rule does
    not observe that step."""
    from searchrl.data import Question
    from searchrl.rollout import Trajectory
    from searchrl.rollout.types import Turn
    from searchrl.training.metrics import empty_search_share

    def trajectory(turns: list[Turn], finish: str = "answer") -> Trajectory:
        return Trajectory(Question("q", "q?", ["a"], "world"), "g", [1], [2], [1], [0.0], turns, None,
                          sum(t.query is not None for t in turns), finish)

    found = Turn("x</search>", "", "search", query="Drarun Bank", doc_ids=["479"], docs=["..."])
    empty = Turn("query</search>", "", "search", query="query")
    not_executed = Turn("y</search>", "", "search")  # the final turn's search: query stays None
    answer = Turn("<answer>a</answer>", "", "answer")
    assert empty_search_share([trajectory([found, answer]), trajectory([empty, answer])]) == 0.5
    assert empty_search_share([trajectory([found, not_executed], "max_turns")]) == 0.0
    assert empty_search_share([trajectory([found, empty], "retrieval_error")]) == 0.0
    assert math.isnan(empty_search_share([trajectory([answer]), trajectory([not_executed], "max_turns")]))
    assert feed(CollapseMonitor(only("empty_searches")), "env/empty_search_share", [NAN, 0.0, 0.5, NAN]) == []


def test_healthy_searches_over_the_world_retrieve_and_the_placeholder_does_not() -> None:
    """The premise of `empty_searches`, on the real pieces: the world's oracle trajectories replayed through the
    rollout engine with the demo's BM25 index (the searches a healthy agent makes: an entity's name) all retrieve
    a passage holding the answer, so the share is 0 and the rule is quiet; the placeholder `query` retrieves
    nothing."""
    from searchrl.data import load_source
    from searchrl.models import default_tokenizer
    from searchrl.training.config import load_config
    from searchrl.training.metrics import empty_search_share
    from searchrl.training.sft import oracle_trajectories
    from searchrl.training.state import build_retriever

    cfg = load_config("demo", ["protocol.assistant_prefix=<search>", "rollout.max_turn_tokens=24"])
    source = load_source("world", split="train")
    retriever = build_retriever(cfg, source)
    data = oracle_trajectories(source, default_tokenizer(), retriever, cfg.protocol, cfg.rollout, limit=16, think=False)
    assert len(data.trajectories) >= 12
    assert empty_search_share(data.trajectories) == 0.0
    assert retriever.search(["query"], topk=cfg.rollout.topk) == [[]]
    assert feed(CollapseMonitor(only("empty_searches")), "env/empty_search_share", [0.0] * 5) == []


def test_val_drop_measures_from_the_start_of_rl_and_fires_on_the_committed_placeholder_run() -> None:
    """Off-policy GRPO seed 3's dev EM went 0.44 (start of RL) -> 0.08 at step 3: with the start-of-RL validation as
    its first observation, val_drop fires at step 3; without it, step 3 would be the best so far and nothing would
    fire. It is quiet on the other four off-policy seeds and on the five on-policy ones (their dev EM never fell
    below half its best), and it reads every validation row even when the other rules read blocks."""
    from searchrl.training.logger import read_jsonl

    runs = Path(__file__).resolve().parents[1] / "results" / "collapse" / "onpolicy-control"

    def events_of(run: str, trajectories_per_step: int | None = None, start: bool = True) -> list[MonitorEvent]:
        summary = json.loads((runs / run / "summary.json").read_text())
        monitor = CollapseMonitor(only("val_drop"), trajectories_per_step=trajectories_per_step)
        if start:
            monitor.observe_start({"val/score": summary["val"]["start"]["world"]["em"]})
        return [e for row in read_jsonl(runs / run / "metrics.jsonl")
                for e in monitor.update(row["step"], {"val/score": row["val/world/em"]})]

    events = events_of("grpo-offpolicy-s3")
    assert [(e.step, e.rule) for e in events] == [(3, "val_drop")]
    assert events[0].value == pytest.approx(0.08) and events[0].threshold == pytest.approx(0.22)
    assert events_of("grpo-offpolicy-s3", start=False) == []
    assert [e.step for e in events_of("grpo-offpolicy-s3", trajectories_per_step=8)] == [3]
    for run in [f"grpo-{arm}-s{s}" for arm in ("offpolicy", "onpolicy") for s in range(5)]:
        if run != "grpo-offpolicy-s3":
            assert events_of(run, trajectories_per_step=64 if "off" in run else 8) == [], run
    # The start observation alone cannot fire, and a disabled monitor ignores it.
    monitor = CollapseMonitor(only("val_drop"))
    monitor.observe_start({"val/score": 0.5})
    assert monitor.update(1, {"val/score": NAN}) == [] and monitor.update(2, {"val/score": 0.3}) == []
    assert [e.step for e in monitor.update(3, {"val/score": 0.2})] == [3]
    CollapseMonitor(MonitorConfig(enabled=False)).observe_start({"val/score": 0.5})


def test_val_drop_fires_on_the_committed_runs_whose_dev_em_collapsed_and_on_no_other() -> None:
    """Every committed run with a start-of-RL validation (results/): val_drop, fed that validation and then each
    row's dev EM, fires on exactly the runs whose dev EM fell below half its best (the collapse study's GRPO seeds
    0-1, CalibAdv seeds 0-2 and LLDS seed 2; in the on-policy control's setting GRPO seed 3, LLDS seeds 1, 2 and 4,
    SAPO seed 1, CalibAdv seed 0 and sapo_strict seed 1; LLDS seed 3 and SAPO seed 1 of the Adam-steps control), at
    the step of that fall; never on the drift regime's 150-step runs, the demo's or the multi-hop recipe's. A new
    committed run whose dev EM falls below half belongs in this list."""
    from searchrl.training.logger import read_jsonl
    from searchrl.training.state import validation_score

    results = Path(__file__).resolve().parents[1] / "results"
    fired: dict[str, int] = {}
    checked = 0
    for metrics in sorted(results.rglob("metrics.jsonl")):
        summary_path = metrics.parent / "summary.json"
        start = json.loads(summary_path.read_text()).get("val", {}).get("start") if summary_path.is_file() else None
        if not start:
            continue
        checked += 1
        monitor = CollapseMonitor(only("val_drop"))
        monitor.observe_start({"val/score": validation_score({"datasets": start})})
        for row in read_jsonl(metrics):  # these rows predate `val/score`: the trainer's score of their dev EMs
            datasets = {k.split("/")[1]: {"em": v} for k, v in row.items()
                        if k.startswith("val/") and k.endswith("/em") and k.count("/") == 2}
            for event in monitor.update(row["step"], {"val/score": validation_score({"datasets": datasets})}):
                fired.setdefault(str(metrics.parent.relative_to(results)), event.step)
    assert checked >= 100  # 104 runs when this test was written
    assert fired == {
        "collapse/grpo-s0": 3, "collapse/grpo-s1": 3, "collapse/calibadv-s0": 3, "collapse/calibadv-s1": 3,
        "collapse/calibadv-s2": 9, "collapse/llds-s2": 3, "collapse/onpolicy-control/grpo-offpolicy-s3": 3,
        "collapse/onpolicy-control/llds-offpolicy-s1": 3, "collapse/onpolicy-control/llds-offpolicy-s2": 12,
        "collapse/onpolicy-control/llds-offpolicy-s4": 12, "collapse/onpolicy-control/sapo-offpolicy-s1": 12,
        "collapse/onpolicy-control/llds-matched-s3": 3, "collapse/onpolicy-control/sapo-matched-s1": 9,
        "collapse/onpolicy-control/calibadv-offpolicy-s0": 3, "collapse/onpolicy-control/sapo_strict-offpolicy-s1": 9,
    }
