"""`searchrl train` end to end on a tiny random model and the synthetic world, plus the loop's invariants:
updates per rollout, the loss mask, non-finite updates, Ctrl-C and kill -9 + resume equivalence.

Precision (tests/README.md): "the same math through two code paths" (chunked vs full logits, shared-prompt vs
padded forwards, the lower-block cache, whole runs compared metric by metric) runs in float64 (`model.double()`
via `prepare_for_training(dtype=torch.float64)`, or `model.dtype=float64` for whole runs) and compares with
conftest's `assert_same_math`; bit-for-bit claims (resume, ratio = 1) only where the same kernels run the same
shapes; bf16 checks keep float32 weights (autocast leaves float64 alone) with tolerances derived from bf16's
resolution.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import EPS_BF16, SAME_MATH_ATOL, SAME_MATH_RTOL, assert_same_math

from searchrl.training.config import load_config
from searchrl.training.logger import read_jsonl

REPO = Path(__file__).resolve().parents[1]
TIME_KEYS = ("time/",)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from searchrl.models import build_tiny_random_model

    # One folder per test session (idempotent builder), shared by the test modules that need it.
    return build_tiny_random_model(tmp_path_factory.getbasetemp() / "searchrl_tiny_model")


pytestmark = pytest.mark.usefixtures("one_thread", "float64_norms")  # conftest.py


def tiny_overrides(model: Path, run_dir: Path, **extra: object) -> list[str]:
    values = {
        "model.name": str(model), "run.dir": str(run_dir), "train.steps": 3, "train.batch_size": 2,
        "train.group_size": 2, "train.mini_batch_size": 2, "train.micro_batch_size": 1, "train.warm_start": "null",
        "train.train_layers": "null",
        "rollout.max_turns": 1, "rollout.max_turn_tokens": 8, "rollout.max_obs_tokens": 48, "val.at_start": "false",
        "val.untrained": "false", "val.max_questions": 4, "val.test_max_questions": 4, "val.batch_size": 4,
        "val.every": 0,
        "checkpoint.every": 1, "log.samples_every": 1, "log.console": "false",
        "train.device": "cpu",  # these are the CPU tests, on any machine (tests/test_gpu.py overrides it)
    }
    values.update({k.replace("__", "."): v for k, v in extra.items()})
    return [f"{k}={v}" for k, v in values.items()]


def rows_without_time(path: Path) -> list[dict]:
    return [{k: v for k, v in row.items() if not k.startswith(TIME_KEYS)} for row in read_jsonl(path)]


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


FLOAT64_RUN = {"model__dtype": "float64", "train__bf16": "false"}  # tiny_overrides(...) extras: a float64 run


def assert_same_metrics(a_rows: list[dict], b_rows: list[dict]) -> None:
    """Two float64 runs of the same math: every float metric within the float64 same-math tolerance (conftest),
    every other value equal."""
    assert len(a_rows) == len(b_rows) > 0
    for a, b in zip(a_rows, b_rows, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float) and isinstance(b[key], float) and not math.isnan(b[key]):
                assert a[key] == pytest.approx(b[key], rel=SAME_MATH_RTOL, abs=SAME_MATH_ATOL), (a["step"], key)
            else:
                assert same(a[key], b[key]), (a["step"], key, a[key], b[key])


def test_tiny_run_end_to_end_writes_the_run_folder(tiny_model, tmp_path):
    from searchrl.algorithms import policy_loss_names
    from searchrl.models import load_policy
    from searchrl.analysis.diagnostics import all_diagnostic_keys
    from searchrl.training.run import train

    run = tmp_path / "run"
    # Sampling at T = 1.5: the trainer must score tokens under softmax(logits / T), as they were sampled.
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__ppo_epochs=2, rollout__temperature=1.5,
                                             val__at_start="true"))
    summary = train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    documented = {"reward/mean", "actor/pg_loss", "actor/ppo_kl", "actor/grad_norm", "actor/penalty",
                  "time/rollout_s", "time/update_s", "time/step_s",
                  "actor/nonfinite_skips", "val/world/em", "val/world/em_ci_low", "val/world/em_ci_high"}
    documented |= set(all_diagnostic_keys()) | {"train/dead_step", "actor/zero_grad_updates",
                                                 "env/empty_search_share", "env/answer_in_retrieval", "val/score"}
    documented |= {f"diag/{n}_active" for n in policy_loss_names("penalty")}
    for row in rows:
        assert documented <= set(row), documented - set(row)
        assert set(row) == set(rows[0])  # the key set never changes
        # B*G / mini_batch_size updates per epoch, two epochs.
        assert row["actor/updates"] == cfg.derived.updates_per_step == 4
        # The trainer scores tokens under softmax(logits / T) as sampled: without 1/T the gap is about 0.04. The
        # sampler decodes in float32; train.bf16 auto trains in bf16 where it is native, and the gap is then bf16
        # rounding noise, measured 3-4e-4 (AMX, AVX512-BF16 and AVX2 oneDNN paths), or in float32 (an AVX2-only
        # CPU's auto), measured 2e-7. 5e-3 holds both ways: >10x above the noise, 8x below the error.
        assert row["diag/sampler_logprob_gap"] < 5e-3
    assert math.isnan(rows[0]["val/world/em"]) and not math.isnan(rows[-1]["val/world/em"])
    assert rows[-1]["val/score"] == rows[-1]["val/world/em"]  # one validation dataset: its EM
    # The monitor's val_drop rule took the start-of-RL validation as its first observation (observe_start).
    monitor = json.loads((run / "checkpoints" / "step_000000" / "state.json").read_text())["monitor"]
    assert monitor["rules"]["val_drop"]["observed"] == 1
    assert monitor["rules"]["val_drop"]["best"] == summary["val"]["start"]["world"]["em"]
    assert sorted(p.name for p in (run / "samples").iterdir()) == ["step_0001.jsonl", "step_0002.jsonl", "step_0003.jsonl"]
    sample = json.loads((run / "samples" / "step_0001.jsonl").read_text().splitlines()[0])
    assert "response_text" in sample and len(sample["response_ids"]) == len(sample["response_mask"])
    assert (run / "config.yaml").is_file() and load_config(run / "config.yaml") == cfg
    assert list((run / "tb").iterdir())
    assert json.loads((run / "final_eval.json").read_text())["datasets"]["world"]["n"] == 4
    assert summary["steps"] == 3 and summary["evals"]["final"]["world"]["n"] == 4
    # Where the time went: every phase measured, the steps at least their own timers, the parts summing to the total.
    spent = summary["time"]
    assert set(spent) == {"total_s", "rl_steps_s", "evaluations_s", "warm_start_s", "checkpoints_s", "exports_s",
                          "other_s"}
    assert spent["total_s"] == summary["seconds"] and all(v >= 0 for v in spent.values())
    assert spent["rl_steps_s"] >= sum(r["time/step_s"] for r in rows) > 0
    assert spent["evaluations_s"] > 0 and spent["checkpoints_s"] > 0 and spent["exports_s"] > 0
    assert sum(v for k, v in spent.items() if k != "total_s") == pytest.approx(spent["total_s"])
    model, _ = load_policy(run / "final_model")  # loadable by `searchrl eval`
    from searchrl.fileio import current_umask
    assert (run / "final_model" / "model.safetensors").stat().st_mode & 0o777 == 0o666 & ~current_umask()  # not 0600
    # The start of RL beside the end, both loadable, both carrying the protocol they were trained with.
    for folder in ("start_model", "final_model"):
        settings = json.loads((run / folder / "searchrl_agent.json").read_text())
        assert settings["protocol"]["assistant_prefix"] == cfg.protocol.assistant_prefix
        assert settings["rollout"]["max_turns"] == cfg.rollout.max_turns
    start, _ = load_policy(run / "start_model")
    step0 = load_file(str(run / "checkpoints" / "step_000000" / "weights.safetensors"))
    # Bit for bit: these are copies of the same tensors (saved, exported, loaded), no arithmetic in between.
    assert all(torch.equal(value, step0[name]) for name, value in start.named_parameters() if name in step0)
    saved = load_file(str(run / "checkpoints" / "step_000003" / "weights.safetensors"))
    for name, value in model.named_parameters():
        assert torch.equal(value, saved[name])


def test_step_without_advantage_false_steps_only_where_an_advantage_is_nonzero(tiny_model, tmp_path, monkeypatch):
    """The Adam-steps control: LLDS with `train.step_without_advantage=false` steps on exactly the mini-batches
    whose rows carry an advantage (the ones GRPO steps on); the others run their forward (no graph) but no backward."""
    from searchrl.training import loop
    from searchrl.training.run import train

    steps, plans, signal_groups = [], [], []
    real_step, real_plan = torch.optim.AdamW.step, loop.minibatch_plan

    def counting_step(self, *a, **k):
        steps.append(1)
        return real_step(self, *a, **k)

    def recording_plan(group_ids, cfg, step):
        plans.append((list(group_ids), real_plan(group_ids, cfg, step)))
        return plans[-1][1]

    def one_group_with_spread(trajectories, reward_cfg):
        # The first group's first trajectory is right, everything else wrong: one group with an advantage per step.
        first = trajectories[0].group_id
        signal_groups.append(first)
        for i, tr in enumerate(trajectories):
            tr.reward = float(i == 0)
        return [tr.reward for tr in trajectories]

    graph_forwards = []  # (step, rows) of every forward that builds an autograd graph
    real_forward = loop.StepForward.__call__

    def recording_forward(self, rows, **k):
        if torch.is_grad_enabled():
            graph_forwards.append((len(plans), list(rows)))
        return real_forward(self, rows, **k)

    monkeypatch.setattr(torch.optim.AdamW, "step", counting_step)
    monkeypatch.setattr(loop, "minibatch_plan", recording_plan)
    monkeypatch.setattr(loop, "score_trajectories", one_group_with_spread)
    monkeypatch.setattr(loop.StepForward, "__call__", recording_forward)
    cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / "run", train__steps=2, train__batch_size=3,
                                             train__group_size=2, train__mini_batch_size=2, train__micro_batch_size=1,
                                             train__ppo_epochs=2, rollout__max_turns=1, checkpoint__every=0,
                                             algorithm__name="llds", train__step_without_advantage="false",
                                             train__lr="1e-2", log__samples_every=0))
    train(cfg, console=False)
    # Groups kept together, a mini-batch is one group: per step and epoch, 1 mini-batch of 3 has the advantage.
    expected = sum(1 for (group_ids, plan), first in zip(plans, signal_groups) for epoch in plan for mini in epoch
                   if any(group_ids[r] == first for micro in mini for r in micro))
    assert expected == 2 * 2
    assert len(steps) == expected
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["actor/zero_grad_updates"] for r in rows] == [4.0, 4.0]
    # The skipped mini-batches' forwards build no graph: only the signal group's rows (2 per update) are forwarded
    # with gradient.
    assert len(graph_forwards) == 2 * expected
    for step_no, rows_forwarded in graph_forwards:
        group_ids, _ = plans[step_no - 1]
        assert all(group_ids[r] == signal_groups[step_no - 1] for r in rows_forwarded)


def test_updates_per_rollout_and_the_loss_mask_follow_the_config(tiny_model, tmp_path, monkeypatch):
    from searchrl.algorithms import Objective
    from searchrl.rollout import RolloutEngine
    from searchrl.training import loop
    from searchrl.training.run import train

    steps, plans, masks, rollouts = [], [], [], []
    real_step, real_plan, real_loss, real_run = torch.optim.AdamW.step, loop.minibatch_plan, Objective.loss, RolloutEngine.run

    def counting_step(self, *a, **k):
        steps.append(1)
        return real_step(self, *a, **k)

    def recording_plan(n, cfg, step):
        plans.append(real_plan(n, cfg, step))
        return plans[-1]

    def recording_loss(self, batch):
        masks.append(batch.response_mask.clone())
        return real_loss(self, batch)

    def recording_run(self, *a, **k):
        rollouts.append(real_run(self, *a, **k))
        return rollouts[-1]

    monkeypatch.setattr(torch.optim.AdamW, "step", counting_step)
    monkeypatch.setattr(loop, "minibatch_plan", recording_plan)
    monkeypatch.setattr(Objective, "loss", recording_loss)
    monkeypatch.setattr(RolloutEngine, "run", recording_run)
    cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / "run", train__steps=2, train__batch_size=2,
                                             train__group_size=3, train__mini_batch_size=2, train__micro_batch_size=1,
                                             train__ppo_epochs=2, rollout__max_turns=2, checkpoint__every=0,
                                             train__keep_groups_together="false", log__samples_every=0))
    train(cfg, console=False)
    # 6 trajectories / 2 per update = 3 updates per epoch, 2 epochs, 2 steps; an update whose gradient is exactly
    # zero (its rows hold no sampled token) does not step the optimiser, and the metrics count it.
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["actor/updates"] for r in rows] == [cfg.derived.updates_per_step] * 2 == [6, 6]
    assert len(steps) + sum(r["actor/zero_grad_updates"] for r in rows) == 12
    train_rollouts = [r for r in rollouts if len(r) == 6]  # validation runs one sample per question
    assert len(train_rollouts) == 2
    calls = iter(masks)
    for trajectories, plan in zip(train_rollouts, plans):
        for epoch in plan:
            for mini in epoch:
                assert len(mini) == 2 and sum(len(m) for m in mini) == 2
                for micro in mini:
                    traj = trajectories[micro[0]]
                    if sum(traj.response_mask) == 0:
                        continue
                    mask = next(calls)
                    expected = torch.tensor(traj.response_mask, dtype=mask.dtype)
                    assert torch.equal(mask[0, : len(expected)], expected)
                    assert mask[0, len(expected):].sum() == 0
    assert next(calls, None) is None


def test_a_nan_loss_is_skipped_logged_and_repeated_ones_roll_back(tiny_model, tmp_path, monkeypatch):
    from searchrl.algorithms import Objective
    from searchrl.training import loop
    from searchrl.training.run import train

    run = tmp_path / "run"
    real_step, real_loss, after_skip, checkpoint_1 = loop.rl_step, Objective.loss, {}, {}
    nan_step = {"on": False}

    def loss_made_nan(self, batch):  # every update of step 2 gets a NaN loss
        loss = real_loss(self, batch)
        return loss._replace(value=loss.value * float("nan")) if nan_step["on"] else loss

    def recording_step(t, step):
        nan_step["on"] = step == 2
        try:
            out = real_step(t, step)
        finally:
            nan_step["on"] = False
        if step == 2:  # before the rollback that follows: what the skipped updates left
            after_skip.update({n: p.detach().clone() for n, p in t.model.named_parameters()})
            checkpoint_1.update(load_file(str(run / "checkpoints" / "step_000001" / "weights.safetensors")))
        return out

    monkeypatch.setattr(loop, "rl_step", recording_step)
    monkeypatch.setattr(Objective, "loss", loss_made_nan)
    # One update per step (mini-batch = all 4 trajectories, 2 micro-batches): old log-probs are computed in the
    # same micro-batches, so that update sees an importance ratio of exactly 1.
    # A monitor rule that fires while the lr is above 1.5e-5 asks for a rollback to the best checkpoint (the
    # start, step 0); the rollback halves the lr (2e-5 -> 1e-5), so it fires once. A step of 4 trajectories is read
    # alone only with monitor.min_trajectories <= 4 (by default the monitor reads blocks of 64 trajectories).
    monitor = dict(monitor__min_trajectories=4, monitor__on_collapse="rollback", monitor__rules__lr_high__kind="above",
                   monitor__rules__lr_high__metric="actor/lr", monitor__rules__lr_high__threshold=1.5e-5,
                   monitor__rules__nonfinite__action="warn", train__lr=2e-5)
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__mini_batch_size=4, train__micro_batch_size=2,
                                             train__nonfinite_rollback_after=1,
                                             **monitor))
    train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["actor/nonfinite_skips"] for r in rows] == [0.0, 1.0, 0.0]
    # The skipped update left every weight as step 1 ended (checkpoint 1), bit for bit (no arithmetic touched them).
    assert checkpoint_1 and checkpoint_1.keys() == after_skip.keys()
    assert all(torch.equal(after_skip[name], value) for name, value in checkpoint_1.items())
    assert rows[1]["diag/nonfinite_count"] >= 1 and rows[0]["diag/nonfinite_count"] == 0
    assert math.isnan(rows[1]["actor/grad_norm"])
    for row in (rows[0], rows[2]):
        # Exactly: the one update's own forward is π_old (BehaviourLogProbs.take), so log r = lp - lp = 0.
        assert row["diag/is_ratio_mean"] == 1.0 and row["diag/is_ratio_min"] == 1.0 and row["actor/ppo_kl"] == 0.0
    events = read_jsonl(run / "events.jsonl")
    assert any(e["rule"] == "nonfinite" and e["step"] == 2 for e in events)
    # One non-finite update in a row triggered a rollback.
    assert [e["step"] for e in events if e["rule"] == "lr_high"] == [1]
    state = json.loads((run / "checkpoints" / "step_000003" / "state.json").read_text())
    assert state["nonfinite_rollbacks"] == 1 and state["monitor"]["rollbacks_used"] == 1
    assert state["lr_scale"] == 0.25  # x0.5 for the monitor's rollback, x0.5 for the non-finite one
    assert rows[1]["actor/lr"] == pytest.approx(0.5 * rows[0]["actor/lr"])
    assert rows[2]["actor/lr"] == pytest.approx(0.25 * rows[0]["actor/lr"])


def _train_process(args: list[str], **kw) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.Popen([sys.executable, "-m", "searchrl.cli", "train", "--quiet", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _wait_rows(path: Path, n: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.is_file() and len(path.read_text().splitlines()) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"training exited early: {proc.stderr.read()}")
        time.sleep(0.2)
    raise AssertionError("timed out waiting for metrics rows")


def test_kill_9_and_resume_replays_the_same_steps(tiny_model, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    base = dict(train__steps=4, checkpoint__every=2, log__samples_every=0, log__tensorboard="false")
    ref = _train_process(tiny_overrides(tiny_model, straight, **base))
    victim = _train_process(tiny_overrides(tiny_model, killed, **base))
    _wait_rows(killed / "metrics.jsonl", 3, victim)  # mid-way: after step 3, before its checkpoint (every 2)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    # The kill came mid-run, before the final checkpoint: the resume below must replay step 3 and run step 4.
    from searchrl.training.checkpoint import latest_checkpoint

    assert not (killed / "final_model").exists() and not (killed / "summary.json").exists()
    assert latest_checkpoint(killed).name == "step_000002"
    assert ref.wait(timeout=600) == 0, ref.stderr.read()
    resumed = _train_process(["--resume", str(killed)])
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    a, b = rows_without_time(straight / "metrics.jsonl"), rows_without_time(killed / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    # Bit for bit: the resumed process replays steps 3-4 from exact state (weights, AdamW moments, RNG) with the same
    # kernels on the same shapes, on the same machine and thread count (OMP_NUM_THREADS=1) as the straight run.
    for row_a, row_b in zip(a, b, strict=True):
        assert row_a.keys() == row_b.keys()
        diff = [k for k in row_a if not same(row_a[k], row_b[k])]
        assert not diff, (row_a["step"], {k: (row_a[k], row_b[k]) for k in diff})
    wa = load_file(str(straight / "checkpoints" / "step_000004" / "weights.safetensors"))
    wb = load_file(str(killed / "checkpoints" / "step_000004" / "weights.safetensors"))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_ctrl_c_saves_a_checkpoint_and_exits_cleanly(tiny_model, tmp_path):
    run = tmp_path / "run"
    proc = _train_process(tiny_overrides(tiny_model, run, train__steps=50, checkpoint__every=0, log__samples_every=0))
    _wait_rows(run / "metrics.jsonl", 1, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    assert "Resume with: searchrl train --resume" in err and "Traceback" not in err
    rows = read_jsonl(run / "metrics.jsonl")
    checkpoints = sorted(p.name for p in (run / "checkpoints").iterdir() if p.name.startswith("step_"))
    assert checkpoints and int(checkpoints[-1].split("_")[1]) == len(rows) >= 1


@pytest.mark.parametrize("lora", [False, True])
def test_kl_to_the_start_of_rl_with_and_without_lora(tiny_model, tmp_path, lora):
    from searchrl.models import load_policy
    from searchrl.training.run import train

    run = tmp_path / "run"
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=2, algorithm__kl_coef=0.01,
                                             model__lora__enabled=str(lora).lower(), model__lora__r=4,
                                             train__lr=1e-3, log__samples_every=0))
    train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    assert all(math.isfinite(r["actor/kl_ref"]) and r["actor/kl_ref"] >= 0 for r in rows)
    assert rows[-1]["actor/kl_ref"] > 0  # the policy moved away from the reference
    weights = load_file(str(run / "checkpoints" / "step_000002" / "weights.safetensors"))
    assert all(("lora_" in name) == lora for name in weights)
    load_policy(run / "final_model")  # LoRA is merged into an ordinary HF folder


def test_train_layers_freezes_everything_below_the_top_blocks(tiny_model, tmp_path):
    from searchrl.models import load_policy
    from searchrl.training.run import train

    start, _ = load_policy(tiny_model)
    start_weights = {name: p.detach().clone() for name, p in start.named_parameters()}
    depth = start.config.num_hidden_layers
    run = tmp_path / "run"
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=2, train__train_layers=1, train__lr=1e-3,
                                             log__samples_every=0))
    train(cfg, console=False)
    weights = load_file(str(run / "checkpoints" / "step_000002" / "weights.safetensors"))
    top = f"layers.{depth - 1}."
    moved = {name for name, value in weights.items() if not torch.equal(value, start_weights[name])}
    assert moved and all(top in name or name.endswith("norm.weight") and "layers." not in name for name in moved), moved
    assert any(top in name for name in moved)
    with pytest.raises(Exception, match="more than the model's"):
        train(load_config("demo", tiny_overrides(tiny_model, tmp_path / "r2", train__train_layers=depth + 1)),
              console=False)


def test_time_budget_stops_rl_early_and_still_evaluates(tiny_model, tmp_path):
    from searchrl.training.run import train

    run = tmp_path / "run"
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=5, train__time_budget_min=1e-4,
                                             log__samples_every=0))
    summary = train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1]  # the first step always runs; then the budget is spent
    assert summary["steps"] == 1 and summary["stopped_early"] is True
    assert json.loads((run / "final_eval.json").read_text())["step"] == 1
    assert (run / "checkpoints" / "step_000001").is_dir()


def test_decisions_use_dev_and_test_is_evaluated_only_at_the_start_and_end(tiny_model, tmp_path, monkeypatch):
    from searchrl.training import loop, run as run_module, state
    from searchrl.training.run import train

    calls: list[tuple[str, str]] = []

    def recording(t, label, **kwargs):
        result = state.validate(t, label, **kwargs)
        calls.append((label, result["split"]))
        return result

    for module in (loop, run_module):  # both call state.validate, by the name they imported
        monkeypatch.setattr(module, "validate", recording)
    run = tmp_path / "run"
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=4, val__every=2, val__at_start="true",
                                             val__untrained="true", val__untrained_max_questions=2,
                                             train__warm_start="null", log__samples_every=0))
    assert (cfg.data.val_split, cfg.data.test_split) == ("dev", "test")
    summary = train(cfg, console=False)
    # test: the untrained model (= the start, no warm start), the start of RL and the end; dev: every decision
    assert calls == [("start", "test"), ("start", "dev"), ("step 2", "dev"), ("step 4", "dev"), ("final", "test")]
    assert summary["split"] == "test" and summary["val"]["split"] == "dev"
    assert set(summary["val"]) == {"split", "start", "final"} and summary["gain"]["world"]["n"] == 4
    evals = json.loads((run / "evals.json").read_text())
    assert {k: v["split"] for k, v in evals.items()} == {"untrained": "test", "start": "test", "final": "test"}
    # the paired gain within each question type, over the test questions of that type
    types = evals["final"]["question_types"]["world"]
    assert set(types) == set(evals["final"]["per_question_em"]["world"])
    by_type = summary["gain"]["world"]["by_type"]
    assert sum(g["n"] for g in by_type.values()) == 4 and set(by_type) == set(types.values())
    dev_ids = {q["id"] for q in map(json.loads, (world_folder() / "dev.jsonl").open())}
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows if not math.isnan(r["val/world/em"])] == [2, 4]
    state = json.loads((run / "checkpoints" / "step_000000" / "state.json").read_text())
    assert set(state["evals"]["val_start"]["per_question_em"]["world"]) <= {f"world:{i}" for i in dev_ids}
    assert summary["best_step"] in (0, 2, 4)  # chosen by dev EM: the only scores a decision may read
    assert not set(state["evals"]["start"]["per_question_em"]["world"]) & set(
        state["evals"]["val_start"]["per_question_em"]["world"])


def world_folder() -> Path:
    from searchrl.data import world_dir

    return world_dir(0)


def test_the_paired_gain_is_computed_per_question_and_worded_by_its_interval():
    from searchrl.evaluation.bootstrap import gain_verdict, paired_gain

    start = {"per_question_em": {"world": {f"q{i}": float(i < 10) for i in range(40)}}}
    up = {"per_question_em": {"world": {f"q{i}": float(i < 30) for i in range(40)}}}
    g = paired_gain(start, up, seed=0)["world"]
    assert g["em_gain"] == 0.5 and g["n"] == 40 and g["ci_low"] > 0
    assert "a real gain" in gain_verdict(g)
    same = paired_gain(start, {"per_question_em": {"world": {f"q{i}": float(i in range(1, 11)) for i in range(40)}}},
                       seed=0)["world"]
    assert same["em_gain"] == 0.0 and "within the 95% interval" in gain_verdict(same)
    assert "a real loss" in gain_verdict(paired_gain(up, start, seed=0)["world"])
    assert paired_gain(None, up, seed=0) == {}
    # With question types, the same paired gain within each type: questions q10..q29 went right, all "bridge".
    up["question_types"] = {"world": {f"q{i}": "bridge" if 10 <= i < 30 else "single-hop" for i in range(40)}}
    by_type = paired_gain(start, up, seed=0)["world"]["by_type"]
    assert by_type["bridge"]["em_gain"] == 1.0 and by_type["bridge"]["n"] == 20
    assert by_type["single-hop"] == {"em_gain": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 20}


def test_minibatch_plan_shuffles_rows_or_whole_groups():
    from searchrl.training.loop import minibatch_plan

    group_ids = [g for g in "abcd" for _ in range(4)]
    for keep in (False, True):
        cfg = load_config("demo", [f"train.keep_groups_together={keep}", "train.mini_batch_size=8",
                                   "train.micro_batch_size=4", "train.ppo_epochs=2"])
        plan = minibatch_plan(group_ids, cfg, step=3)
        assert plan == minibatch_plan(group_ids, cfg, step=3)  # seeded by (seed, step, epoch)
        for epoch in plan:
            assert sorted(r for mini in epoch for micro in mini for r in micro) == list(range(16))
            assert [len(micro) for mini in epoch for micro in mini] == [4, 4, 4, 4]
        micros = [micro for epoch in plan for mini in epoch for micro in mini]
        one_group = [len({group_ids[r] for r in micro}) == 1 for micro in micros]
        assert all(one_group) if keep else not all(one_group)
    grouped = minibatch_plan(group_ids, cfg, step=3)
    assert grouped[0] != grouped[1]  # each epoch has its own order
    assert grouped[0] != minibatch_plan(group_ids, cfg, step=4)[0]


def test_the_two_phase_curriculum_samples_its_types_first_then_every_type(tiny_model, tmp_path):
    from searchrl.training.loop import build
    from searchrl.training.state import QuestionSampler

    cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / "run", train__batch_size=8,
                                             data__train_types="[bridge]", data__train_types_steps=2))
    t = build(cfg, tmp_path / "run", console=False)
    types = {step: [q.metadata["type"] for q in t.sampler.batch(step)] for step in range(1, 9)}
    assert all(set(types[s]) == {"bridge"} for s in (1, 2))
    later = [kind for s in range(3, 9) for kind in types[s]]
    assert {"bridge", "comparison", "single-hop"} <= set(later)  # 48 draws from every type
    # the second phase counts its own steps from 1: step 5 is the every-type sampler's step 3
    every_type = QuestionSampler(t.train_source.questions, 8, cfg.seed)
    assert [q.uid for q in t.sampler.batch(5)] == [q.uid for q in every_type.batch(3)]
    assert t.sampler.cursor(3) == 16  # the data cursor counts both phases (a resume checks it)
    # the same run without the second phase samples bridge questions at every step
    cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / "run2", train__batch_size=8,
                                             data__train_types="[bridge]"))
    t = build(cfg, tmp_path / "run2", console=False)
    assert {q.metadata["type"] for s in range(1, 9) for q in t.sampler.batch(s)} == {"bridge"}
