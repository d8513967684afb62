"""A run's lifecycle (training/run.py): the time budget bounds the whole run, the run folder is locked while a
process owns it, and SIGTERM stops a run cleanly with a checkpoint."""

from __future__ import annotations

import signal
import time

import pytest

from searchrl.training.config import load_config
from searchrl.training.logger import read_jsonl
from test_train import _train_process, _wait_rows, tiny_model, tiny_overrides  # noqa: F401 - tiny_model: a fixture

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


class FakeClock:
    """The trainer's clock (`train(clock=...)`), advanced only by the fake work below."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _run_with_load(tiny_model, run, monkeypatch, *, slower_from_step: int, slowdown: float) -> tuple[float, dict]:
    """A tiny run on a fake clock where a training rollout costs 0.5 s a generated token (plus 20 s for its
    update) and an evaluation 2 s a question, all `slowdown` times as long from RL step `slower_from_step` on
    (other work arrived on the machine); the machine's speed probe reads the same load."""
    from searchrl.evaluation import harness
    from searchrl.training import run as run_module
    from searchrl.training import state

    clock = FakeClock()
    steps = {"n": 0}
    load = lambda: slowdown if steps["n"] >= slower_from_step else 1.0  # noqa: E731
    real_build, real_evaluate = run_module.build, harness.evaluate

    def build_slow(*args, **kw):
        t = real_build(*args, **kw)
        real_run = t.engine.run

        def slow_run(questions, group_size, **run_kw):
            steps["n"] += 1
            out = real_run(questions, group_size, **run_kw)
            clock.now += load() * (0.5 * sum(sum(tr.response_mask) for tr in out) + 20.0)
            return out

        t.engine.run = slow_run  # the training rollouts only; evaluations make their own engine
        return t

    def slow_evaluate(*args, **kw):
        report = real_evaluate(*args, **kw)
        clock.now += load() * 2.0 * len(report.records)
        return report

    monkeypatch.setattr(state, "cpu_speed_probe", lambda: 0.02 * load())
    monkeypatch.setattr(run_module, "build", build_slow)
    monkeypatch.setattr(harness, "evaluate", slow_evaluate)
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=200, train__time_budget_min=15,
                                             val__at_start="true", val__max_questions=20, val__test_max_questions=40,
                                             checkpoint__every=0, log__samples_every=0))
    start = clock.now
    summary = run_module.train(cfg, console=False, clock=clock)
    return clock.now - start, summary


def test_the_time_budget_bounds_the_whole_run_when_the_machine_slows_down(tiny_model, tmp_path, monkeypatch):
    """The final evaluations are estimated from the start-of-RL ones, scaled by how much slower the machine now
    generates; so a machine that turns 3x slower mid-run still ends within the budget plus a minute."""
    elapsed, summary = _run_with_load(tiny_model, tmp_path / "run", monkeypatch, slower_from_step=3, slowdown=3.0)
    assert summary["stopped_early"] and summary["steps"] >= 3
    assert elapsed <= 15 * 60 + 60, elapsed


def test_the_slowdown_needs_both_the_steps_and_the_speed_probe(monkeypatch):
    """Steps 3x as long on an unchanged machine (the agent now searches twice and writes longer answers) do not
    count as a slowdown, nor does a speed probe that reads 3x slower while the steps do not slow down (a noisy
    moment moves the short probe more than the run); a machine whose steps and probe both slow down 3x does."""
    from searchrl.training import state

    real_probe_seconds = state.cpu_speed_probe()
    assert 0 < real_probe_seconds < 5  # the real probe: a short fixed workload

    def budget_after(walls: list[float], probes: list[float]) -> state.TimeBudget:
        speeds = iter(probes)
        monkeypatch.setattr(state, "cpu_speed_probe", lambda: next(speeds))
        clock = FakeClock()
        budget = state.TimeBudget(16, clock=clock)
        for wall in walls:
            clock.now += wall
            budget.record_step(wall)
        return budget

    first = [20.0, 20.0, 20.0]
    longer_steps = budget_after(first + [60.0] * 3, [0.02] * 6)
    assert longer_steps.slowdown() == 1.0
    assert longer_steps.needed_to_finish(100.0) == pytest.approx(1.1 * 100.0 + longer_steps.margin_s)
    assert budget_after(first + [20.0] * 3, [0.02] * 3 + [0.06] * 3).slowdown() == 1.0  # a noisy probe alone
    assert budget_after(first + [60.0, 20.0, 20.0], [0.02] * 3 + [0.06, 0.02, 0.02]).slowdown() == 1.0  # one moment
    slower = budget_after(first + [60.0] * 3, [0.02] * 3 + [0.06] * 3)
    assert slower.slowdown() == pytest.approx(3.0)
    assert budget_after(first + [30.0] * 3, [0.02] * 3 + [0.06] * 3).slowdown() == pytest.approx(1.5)  # the smaller


def test_without_the_slowdown_estimate_the_same_run_overruns(tiny_model, tmp_path, monkeypatch):
    """The check above can fail: estimating the final evaluations at their start-of-RL length (the code before)
    overruns the budget on the same slowed machine."""
    from searchrl.training.state import TimeBudget

    monkeypatch.setattr(TimeBudget, "slowdown", lambda self: 1.0)
    elapsed, _ = _run_with_load(tiny_model, tmp_path / "run", monkeypatch, slower_from_step=3, slowdown=3.0)
    assert elapsed > 15 * 60 + 60, elapsed


def test_a_locked_run_folder_refuses_a_second_process(tiny_model, tmp_path):
    """Two `searchrl train` on one run.dir, 0.3 s apart: the second is refused with a message, and the first
    finishes with its own rows only."""
    run = tmp_path / "run"
    args = tiny_overrides(tiny_model, run, train__steps=3, log__samples_every=0)
    first = _train_process(args)
    time.sleep(0.3)
    second = _train_process(args)
    errors = [p.communicate(timeout=300)[1] for p in (first, second)]
    done = [(p.returncode, err) for p, err in zip((first, second), errors)]
    # Whichever reached the lock first trains (on a loaded machine the later one can win the start); the other is
    # refused with a message, and the folder holds one run's rows.
    codes = sorted(code for code, _ in done)
    assert codes == [0, 2], done
    refused = next(err for code, err in done if code == 2)
    assert "in use by a running searchrl process" in refused and "Traceback" not in refused
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == [1, 2, 3]


def test_sigterm_saves_a_checkpoint_says_so_and_exits_non_zero(tiny_model, tmp_path):
    run = tmp_path / "run"
    proc = _train_process(tiny_overrides(tiny_model, run, train__steps=50, checkpoint__every=100, log__samples_every=0))
    _wait_rows(run / "metrics.jsonl", 2, proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 143, err
    assert "SIGTERM" in err and "Resume with: searchrl train --resume" in err and "Traceback" not in err
    rows = read_jsonl(run / "metrics.jsonl")
    checkpoints = sorted(p.name for p in (run / "checkpoints").iterdir() if p.name.startswith("step_"))
    assert int(checkpoints[-1].split("_")[1]) == len(rows) >= 2  # every finished step is kept (every=100)
    resumed = _train_process(["--resume", str(run), "train.steps=" + str(len(rows) + 1)])
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert [r["step"] for r in read_jsonl(run / "metrics.jsonl")] == list(range(1, len(rows) + 2))


def test_a_run_whose_evaluations_took_its_budget_says_what_trades_them_for_rl_steps():
    """After a time-budgeted run that stopped early with evaluations over a third of its time, the summary names the
    settings that give RL more of the budget (the demo on the slowest CPU: about half); otherwise it says nothing."""
    from searchrl.training.run import evaluation_share_hint

    demo = load_config("demo")
    slow = {"stopped_early": True, "steps": 10, "time": {"total_s": 913.2, "evaluations_s": 472.3},
            "val": {"split": "dev", "start": {"world": {"em": 0.23, "n": 200}}}}
    hint = evaluation_share_hint(demo, slow)
    assert hint is not None
    assert hint.startswith("Evaluations took 52% of this run's time, and the time budget ended RL after 10 of 40 steps.")
    assert "val.max_questions=100; 200 questions now" in hint and "val.untrained=false" in hint
    assert "val.test_max_questions" in hint and "wider interval" in hint
    # Already small validation, no untrained evaluation: only the test sample is left to trade.
    lean = load_config("demo", ["val.max_questions=100", "val.untrained=false"])
    small = {**slow, "val": {"split": "dev", "start": {"world": {"em": 0.23, "n": 100}}}}
    assert evaluation_share_hint(lean, small).split(". ", 1)[1] == (
        "On this machine, fewer test questions (val.test_max_questions) would leave more of the budget to RL, at the "
        "cost of a wider interval on the reported gain.")
    # No test split: the validation split is the result; only what does not touch it is named.
    no_test = load_config("demo", ["data.test_split=null"])
    assert evaluation_share_hint(no_test, slow).split(". ", 1)[1] == (
        "On this machine, no untrained evaluation (val.untrained=false) leaves more of the budget to RL.")
    assert evaluation_share_hint(load_config("demo", ["data.test_split=null", "val.untrained=false"]), small) is None
    assert evaluation_share_hint(demo, {**slow, "stopped_early": False}) is None  # every step ran
    assert evaluation_share_hint(demo, {**slow, "time": {"total_s": 900.0, "evaluations_s": 290.0}}) is None
