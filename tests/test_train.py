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
    from searchrl.training.diagnostics import ALL_DIAGNOSTIC_KEYS
    from searchrl.training.loop import train

    run = tmp_path / "run"
    # Sampling at T = 1.5: the trainer must score tokens under softmax(logits / T), as they were sampled.
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__ppo_epochs=2, rollout__temperature=1.5))
    summary = train(cfg, console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    documented = {"reward/mean", "actor/pg_loss", "actor/ppo_kl", "actor/grad_norm", "actor/penalty",
                  "time/rollout_s", "time/update_s", "time/step_s",
                  "actor/nonfinite_skips", "val/world/em", "val/world/em_ci_low", "val/world/em_ci_high"}
    documented |= set(ALL_DIAGNOSTIC_KEYS) - {f"diag/{n}_active" for n in ("sapo", "llds")}
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
    assert sorted(p.name for p in (run / "samples").iterdir()) == ["step_0001.jsonl", "step_0002.jsonl", "step_0003.jsonl"]
    sample = json.loads((run / "samples" / "step_0001.jsonl").read_text().splitlines()[0])
    assert "response_text" in sample and len(sample["response_ids"]) == len(sample["response_mask"])
    assert (run / "config.yaml").is_file() and load_config(run / "config.yaml") == cfg
    assert list((run / "tb").iterdir())
    assert json.loads((run / "final_eval.json").read_text())["datasets"]["world"]["n"] == 4
    assert summary["steps"] == 3 and summary["evals"]["final"]["world"]["n"] == 4
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


def test_updates_per_rollout_and_the_loss_mask_follow_the_config(tiny_model, tmp_path, monkeypatch):
    from searchrl.algorithms import Objective
    from searchrl.rollout import RolloutEngine
    from searchrl.training import loop

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
                                             log__samples_every=0))
    loop.train(cfg, console=False)
    # 6 trajectories / 2 per update = 3 updates per epoch, 2 epochs, 2 steps.
    assert len(steps) == cfg.derived.updates_per_step * 2 == 12
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

    run = tmp_path / "run"
    real_step, real_loss, after_skip, checkpoint_1 = loop.rl_step, Objective.loss, {}, {}
    nan_step = {"on": False}

    def loss_made_nan(self, batch):  # every update of step 2 gets a NaN loss
        loss, terms = real_loss(self, batch)
        return (loss * float("nan"), terms) if nan_step["on"] else (loss, terms)

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
    # start, step 0); the rollback halves the lr (2e-5 -> 1e-5), so it fires once.
    monitor = dict(monitor__on_collapse="rollback", monitor__rules__lr_high__kind="above",
                   monitor__rules__lr_high__metric="actor/lr", monitor__rules__lr_high__threshold=1.5e-5,
                   monitor__rules__nonfinite__action="warn", train__lr=2e-5)
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__mini_batch_size=4, train__micro_batch_size=2,
                                             train__nonfinite_rollback_after=1,
                                             **monitor))
    loop.train(cfg, console=False)
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
    from searchrl.training.loop import train

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
    from searchrl.training.loop import train

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
    from searchrl.training.loop import train

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
    from searchrl.training.loop import train
    from searchrl.training.trainer import Trainer

    calls: list[tuple[str, str]] = []
    validate = Trainer.validate

    def recording(self, label, **kwargs):
        result = validate(self, label, **kwargs)
        calls.append((label, result["split"]))
        return result

    monkeypatch.setattr(Trainer, "validate", recording)
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


def _tiny_batch(tokenizer_model: Path):
    from searchrl.models import load_policy
    from searchrl.rollout.types import Trajectory
    from searchrl.training.batching import collate

    model, tok = load_policy(tokenizer_model)
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    trajs = []
    for k, (prompt, response) in enumerate([("Question: who wrote it?", " <search>the author</search>"),
                                            ("Q: where?", " <answer>Paris, in France</answer> and more")]):
        r = ids(response)
        mask = [1] * len(r)
        mask[2:4] = [0, 0]  # an observation inside the response
        trajs.append(Trajectory(question=None, group_id=f"g{k}", prompt_ids=ids(prompt), response_ids=r,
                                response_mask=mask, sampling_logprobs=[0.0] * len(r), turns=[], answer=None,
                                num_searches=0, finish_reason="stop"))
    return model, collate(trajs, int(tok.pad_token_id))


def test_lower_block_cache_gives_the_full_forward_values_and_gradients(tiny_model):
    from searchrl.training.batching import LowerBlockCache, frozen_block_count, token_logprobs
    from searchrl.training.policy import prepare_for_training

    model, batch = _tiny_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)  # same math: float64
    assert frozen_block_count(model) == 0 and not LowerBlockCache(model).has([0])  # everything trains: no cache
    model = prepare_for_training(model, gradient_checkpointing=False, train_layers=1, dtype=torch.float64)
    assert frozen_block_count(model) == 1
    rows = [0, 1]

    full_lp, full_ent = token_logprobs(model, batch, with_entropy=True)
    full_lp.sum().backward()
    full_grads = [p.grad.clone() for p in model.parameters() if p.requires_grad]
    model.zero_grad(set_to_none=True)

    cache = LowerBlockCache(model)
    with torch.no_grad():
        first, _ = cache.token_logprobs(rows, batch)  # records the states entering block 1
    assert cache.has(rows) and not cache.has([2])
    assert cache.states[0].shape == (int(batch.attention_mask[0].sum()), model.config.hidden_size)
    calls = []
    handle = model.model.layers[0].register_forward_hook(lambda *a: calls.append(1))
    cached_lp, cached_ent = cache.token_logprobs(rows, batch, with_entropy=True)  # starts at block 1
    handle.remove()
    assert calls == []  # the frozen block did not run
    assert len(model.model.layers) == 2  # the block list is restored
    cached_lp.sum().backward()
    # float64 (conftest.assert_same_math): the cached forward sums other shapes in another order
    assert_same_math(first, full_lp.detach())
    assert_same_math(cached_lp, full_lp)
    assert_same_math(cached_ent, full_ent)
    for got, want in zip([p.grad for p in model.parameters() if p.requires_grad], full_grads):
        assert_same_math(got, want)


@pytest.mark.parametrize("rows_kept", [None, [0, 2, 5]], ids=["repeated prompts", "all prompts distinct"])
def test_lower_block_cache_shares_prompts_with_the_padded_forward_values_and_gradients(tiny_model, rows_kept):
    """With frozen lower blocks and prompts that share a template (and some repeat): the recording forward and the
    cached forwards both run the shared-prompt layout (three body forwards, the cached ones from block 1), with
    the padded full forward's log-probs, entropies and gradients."""
    from searchrl.training.batching import LowerBlockCache, token_logprobs
    from searchrl.training.policy import prepare_for_training

    template = "Answer the question. Search with <search>query</search>, then answer with <answer>answer</answer>.\n"
    model, batch = _grouped_batch(tiny_model, template, rows_kept)
    model = prepare_for_training(model, gradient_checkpointing=False, train_layers=1, dtype=torch.float64)
    rows = list(range(batch.size))

    def grads() -> list[torch.Tensor]:
        out = [p.grad.clone() for p in model.parameters() if p.requires_grad]
        model.zero_grad(set_to_none=True)
        return out

    plain_lp, plain_ent = token_logprobs(model, batch, with_entropy=True, share_prompts=False)
    (plain_lp.sum() + 0.1 * plain_ent.sum()).backward()
    plain_grads = grads()

    cache = LowerBlockCache(model)
    body_calls, lower_calls = [], []
    handles = [model.model.register_forward_hook(lambda *a: body_calls.append(1)),
               model.model.layers[0].register_forward_hook(lambda *a: lower_calls.append(1))]
    first_lp, first_ent = cache.token_logprobs(rows, batch, with_entropy=True)  # records, sharing the template
    (first_lp.sum() + 0.1 * first_ent.sum()).backward()
    first_grads = grads()
    assert len(body_calls) == 3 and len(lower_calls) == 3 and cache.has(rows)
    for r in rows:
        assert cache.states[r].shape == (int(batch.attention_mask[r].sum()), model.config.hidden_size)
    body_calls.clear(), lower_calls.clear()
    cached_lp, cached_ent = cache.token_logprobs(rows, batch, with_entropy=True)  # from block 1, sharing again
    (cached_lp.sum() + 0.1 * cached_ent.sum()).backward()
    cached_grads = grads()
    assert len(body_calls) == 3 and lower_calls == []  # the frozen block did not run
    assert len(model.model.layers) == 2 and [b.self_attn.layer_idx for b in model.model.layers] == [0, 1]
    for lp, ent, got_grads in ((first_lp, first_ent, first_grads), (cached_lp, cached_ent, cached_grads)):
        assert_same_math(lp, plain_lp)  # float64: the same math in other layouts (conftest)
        assert_same_math(ent, plain_ent)
        for got, want in zip(got_grads, plain_grads):
            assert_same_math(got, want)
    for handle in handles:
        handle.remove()


def test_training_with_frozen_lower_blocks_matches_the_uncached_run(tiny_model, tmp_path, monkeypatch):
    from searchrl.training import batching
    from searchrl.training.loop import train

    def run(name: str) -> list[dict]:
        # float64 (FLOAT64_RUN): the cached run starts its forwards at block 1, the same math in other shapes
        cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / name, train__train_layers=1,
                                                 train__steps=2, train__micro_batch_size=2, train__group_size=4,
                                                 train__mini_batch_size=4, **FLOAT64_RUN))
        train(cfg, console=False)
        return rows_without_time(tmp_path / name / "metrics.jsonl")

    starts = []
    real_cache_logprobs = batching.LowerBlockCache.token_logprobs

    def recording(self, rows, *args, **kwargs):
        starts.append(self.has(rows))  # a forward that starts above the frozen block
        return real_cache_logprobs(self, rows, *args, **kwargs)

    monkeypatch.setattr(batching.LowerBlockCache, "token_logprobs", recording)
    cached = run("cached")
    assert any(starts)  # the cache was used
    monkeypatch.setattr(batching, "frozen_block_count", lambda model: 0)
    starts.clear()
    uncached = run("uncached")
    assert not any(starts)
    assert [r["actor/updates"] for r in cached] == [2, 2]
    assert_same_metrics(cached, uncached)


def test_the_paired_gain_is_computed_per_question_and_worded_by_its_interval():
    from searchrl.training.trainer import gain_verdict, paired_gain

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


def _grouped_batch(tokenizer_model: Path, template: str = "", rows_kept: list[int] | None = None):
    """Two groups that each repeat a prompt (of different lengths), one row with a prompt of its own, an empty
    response and observation tokens inside responses; every prompt starts with `template`; `rows_kept` keeps some
    rows only."""
    from searchrl.models import load_policy
    from searchrl.rollout.types import Trajectory
    from searchrl.training.batching import collate

    model, tok = load_policy(tokenizer_model)
    ids = lambda text: tok(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    rows = [("Question: who wrote the book about the whale?", " <search>the author</search> and then"),
            ("Question: who wrote the book about the whale?", " <answer>Melville</answer>"),
            ("Q: where?", " <answer>Paris, in France</answer> and more"),
            ("Question: who wrote the book about the whale?", ""),
            ("Q: where?", " <search>capital</search>"),
            ("Q: when was it built, and by whom?", " <answer>1889</answer>")]
    trajs = []
    rows = [(template + prompt, response) for prompt, response in rows]
    for k, (prompt, response) in enumerate(rows):
        if rows_kept is not None and k not in rows_kept:
            continue
        r = ids(response)
        mask = [1] * len(r)
        mask[2:4] = [0] * len(mask[2:4])  # an observation inside the response
        trajs.append(Trajectory(question=None, group_id=prompt, prompt_ids=ids(prompt), response_ids=r,
                                response_mask=mask, sampling_logprobs=[0.0] * len(r), turns=[], answer=None,
                                num_searches=0, finish_reason="stop"))
    return model, collate(trajs, int(tok.pad_token_id))


def test_shared_prompts_give_the_padded_forward_values_and_gradients(tiny_model):
    """Rows that repeat a prompt compute it once (two body forwards) with the same log-probs, entropies and
    gradients as the padded forward, in float64 (the same math) and under bf16 autocast (float32 weights)."""
    from searchrl.training.batching import prompt_owners, token_logprobs
    from searchrl.training.policy import prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)
    owner, prompts = prompt_owners(batch)
    assert owner.tolist() == [0, 0, 1, 0, 1, 2] and len(prompts) == 3
    calls = []
    handle = model.model.register_forward_hook(lambda module, args, kwargs_out: calls.append(1))

    def run(share: bool, only_masked: bool = True) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        lp, ent = token_logprobs(model, batch, with_entropy=True, share_prompts=share, only_masked=only_masked)
        (lp.sum() + 0.1 * ent.sum()).backward()
        return lp.detach(), ent.detach(), [p.grad.clone() for p in model.parameters()]

    for only_masked in (True, False):
        calls.clear()
        plain = run(False, only_masked)
        assert len(calls) == 1
        calls.clear()
        shared = run(True, only_masked)
        assert len(calls) == 2  # the distinct prompts, then every row's response
        assert_same_math(shared[0], plain[0])  # float64: the same math in another layout (conftest)
        assert_same_math(shared[1], plain[1])
        for got, want in zip(shared[2], plain[2]):
            assert_same_math(got, want)
    assert (plain[0][3] == 0).all()  # the empty response scores nothing
    model = model.to(torch.float32)  # bf16 autocast casts float32 weights (float64 ones it leaves alone)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lp_plain, _ = token_logprobs(model, batch, share_prompts=False)
        lp_shared, _ = token_logprobs(model, batch)
    # bf16 (8 significant bits, EPS_BF16 = 2^-7) rounds the two layouts' activations differently: their logits
    # differ by a few bf16 roundings of numbers of the logits' size, and a log-prob is a difference of logits, so
    # the bound scales with the logits' spread (max - min over the vocabulary, ~1.9 here): 2 · EPS_BF16 · spread
    # ~ 0.03; measured <= 0.07x that (AMX, AVX512-BF16, AVX2, scalar dispatch); a wrong position moves it by more.
    bound = 2 * EPS_BF16 * _logit_spread(model, batch)
    torch.testing.assert_close(lp_shared, lp_plain, rtol=0, atol=bound)
    handle.remove()


def _logit_spread(model: torch.nn.Module, batch) -> float:
    """max − min of the logits over the vocabulary, largest over `batch`'s positions (the float32 forward)."""
    with torch.no_grad():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
    return float((logits.amax(-1) - logits.amin(-1)).max())


@pytest.mark.parametrize("rows_kept", [None, [0, 2, 5]], ids=["repeated prompts", "all prompts distinct"])
def test_a_common_prompt_prefix_runs_once_with_the_padded_forward_values_and_gradients(tiny_model, rows_kept):
    """Prompts that start with the same instruction template: the template runs once in a forward of its own,
    then the prompts' remaining tokens, then the responses (three forwards), also when no row repeats a prompt;
    log-probs, entropies and gradients are the padded forward's."""
    from searchrl.training import batching
    from searchrl.training.batching import prompt_owners, token_logprobs
    from searchrl.training.policy import prepare_for_training

    template = "Answer the question. Search with <search>query</search>, then answer with <answer>answer</answer>.\n"
    model, batch = _grouped_batch(tiny_model, template, rows_kept)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)  # same math: float64
    owner, prompts = prompt_owners(batch)
    assert len(prompts) == 3 and batching.common_prefix_len([p[:-1] for p in prompts]) >= batching.MIN_COMMON_PREFIX
    calls = []
    handle = model.model.register_forward_hook(lambda module, args, out: calls.append(1))

    def run(share: bool) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        lp, ent = token_logprobs(model, batch, with_entropy=True, share_prompts=share)
        (lp.sum() + 0.1 * ent.sum()).backward()
        return lp.detach(), ent.detach(), [p.grad.clone() for p in model.parameters()]

    calls.clear()
    plain = run(False)
    assert len(calls) == 1
    calls.clear()
    shared = run(True)
    assert len(calls) == 3  # the template, the prompts' remaining tokens, every row's response
    assert_same_math(shared[0], plain[0])  # float64: the same math in three forwards instead of one (conftest)
    assert_same_math(shared[1], plain[1])
    for got, want in zip(shared[2], plain[2]):
        assert_same_math(got, want)
    handle.remove()


def test_shared_prompts_fall_back_to_the_padded_forward(tiny_model):
    """No repeated prompt, activation checkpointing (its blocks drop the cache), or a sliding attention window
    shorter than the rows: one padded forward."""
    from searchrl.training.batching import prompt_owners, token_logprobs
    from searchrl.training.loop import _sub_batch
    from searchrl.training.policy import prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    distinct = _sub_batch(batch, [0, 2, 5])
    assert prompt_owners(distinct) is None
    calls = []
    for checkpointing, sub in ((False, distinct), (True, batch)):
        model = prepare_for_training(model, gradient_checkpointing=checkpointing)
        handle = model.model.register_forward_hook(lambda module, args, out: calls.append(1))
        calls.clear()
        lp, _ = token_logprobs(model, sub)
        lp.sum().backward()
        handle.remove()
        assert len(calls) == 1
    model, batch = _grouped_batch(tiny_model)  # a fresh model: no activation checkpointing
    model = prepare_for_training(model, gradient_checkpointing=False)
    handle = model.model.register_forward_hook(lambda module, args, out: calls.append(1))
    for window, forwards in ((batch.input_ids.shape[1] - 1, 1), (batch.input_ids.shape[1], 2)):
        model.config.sliding_window = window  # as Mistral's: a window shorter than the rows is not shared
        calls.clear()
        token_logprobs(model, batch)
        assert len(calls) == forwards
    del model.config.sliding_window
    handle.remove()


def test_weight_cast_cache_casts_each_weight_once_with_the_same_gradients(tiny_model, weight_casts):
    """Two micro-batches' bf16 forwards and backwards (as one optimiser update runs them) cast the weights once
    inside `weight_cast_cache`, and twice without it; the gradients are the same, and the code between forwards
    (loss, backward) runs with autocast off either way."""
    from contextlib import nullcontext

    from searchrl.training.batching import token_logprobs
    from searchrl.training.loop import _sub_batch
    from searchrl.training.policy import autocast, prepare_for_training, weight_cast_cache

    model, batch = _grouped_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False)
    micro_batches = [_sub_batch(batch, [0, 1, 2]), _sub_batch(batch, [3, 4, 5])]

    def update(cached: bool) -> tuple[int, list[torch.Tensor]]:
        model.zero_grad(set_to_none=True)
        with weight_casts(model) as casts, weight_cast_cache(True, "cpu") if cached else nullcontext():
            for sub in micro_batches:
                with autocast(True, "cpu"):
                    log_probs, _ = token_logprobs(model, sub)
                assert not torch.is_autocast_enabled("cpu")
                log_probs.sum().backward()
        assert not torch.is_autocast_enabled("cpu")
        return casts.count, [p.grad.clone() for p in model.parameters()]

    per_forward, plain = update(cached=False)
    once, cached = update(cached=True)
    assert once > 0 and per_forward == 2 * once
    for got, want in zip(cached, plain):
        # Bit for bit: the same bf16 copies through the same kernels on the same shapes, accumulated in the same
        # order (checked under AMX, AVX512-BF16, AVX2 and scalar dispatch)
        assert torch.equal(got, want)
    with weight_casts(model) as casts, weight_cast_cache(False, "cpu"), autocast(False, "cpu"):
        token_logprobs(model, micro_batches[0])
    assert casts.count == 0  # bf16 off: neither casts


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


def test_training_with_groups_together_matches_the_padded_forward(tiny_model, tmp_path, monkeypatch):
    """A run whose micro-batches hold whole groups shares each prompt's forward; in float64 (the same math in
    another layout) it trains as the padded forward does, metric by metric."""
    from searchrl.training import batching
    from searchrl.training.loop import train

    def run(name: str) -> list[dict]:
        cfg = load_config("demo", tiny_overrides(tiny_model, tmp_path / name, train__steps=2, train__group_size=4,
                                                 train__mini_batch_size=4, train__micro_batch_size=4,
                                                 train__keep_groups_together="true", checkpoint__every=0,
                                                 log__samples_every=0, **FLOAT64_RUN))
        train(cfg, console=False)
        return rows_without_time(tmp_path / name / "metrics.jsonl")

    owners = []
    real_owners = batching.prompt_owners
    monkeypatch.setattr(batching, "prompt_owners", lambda batch: owners.append(real_owners(batch)) or owners[-1])
    shared = run("shared")
    assert owners and all(o is not None and len(o[1]) == 1 for o in owners)  # one prompt per micro-batch
    monkeypatch.setattr(batching, "prompt_owners", lambda batch: None)
    padded = run("padded")
    assert_same_metrics(shared, padded)


def test_token_logprobs_equal_the_full_logits_in_one_chunk_or_many(tiny_model):
    """One chunk (logits kept for the backward) and several (each recomputed in the backward) give the log-probs,
    entropies and gradients of the model's full logits.

    In float64: the chunks sum the head's gradient in another order, which in float32 moved elements of the tied
    embedding's gradient (|g| up to 13) by up to 2.6e-5 depending on the CPU kind; float64 keeps that ~1e-15."""
    from searchrl.training.batching import token_logprobs
    from searchrl.training.policy import prepare_for_training

    model, batch = _grouped_batch(tiny_model)
    model = prepare_for_training(model, gradient_checkpointing=False, dtype=torch.float64)
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    assert logits.dtype == torch.float64
    log_probs = logits.log_softmax(-1)
    rows = torch.arange(batch.size)[:, None]
    want = log_probs[rows, batch.predict_pos].gather(-1, batch.response_ids[..., None]).squeeze(-1)
    want_ent = -(log_probs.exp() * log_probs).sum(-1)[rows, batch.predict_pos]
    want, want_ent = want * batch.response_mask, want_ent * batch.response_mask
    (want.sum() + 0.1 * want_ent.sum()).backward()
    want_grads = [p.grad.clone() for p in model.parameters()]
    for chunk_size in (3, 256):
        model.zero_grad(set_to_none=True)
        lp, ent = token_logprobs(model, batch, chunk_size=chunk_size, with_entropy=True, share_prompts=False)
        (lp.sum() + 0.1 * ent.sum()).backward()
        assert_same_math(lp, want)  # float64 (conftest): the same math, summed in another order
        assert_same_math(ent, want_ent)
        for got, expected in zip([p.grad for p in model.parameters()], want_grads):
            assert_same_math(got, expected)
