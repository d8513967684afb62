"""The native trainer on one CUDA GPU: RL steps, CPU/CUDA log-prob agreement, token-exact rollouts, kill and resume,
and checkpoints that move between devices. Run with `pytest -m gpu` on a machine with a GPU; elsewhere every test
here is skipped with the reason. The CPU side of the same code (settings, errors, checkpoint mapping) is tested in
tests/test_device.py on every machine.

Tolerances, stated once (tests/README.md): the same math on two devices or code paths (CPU vs CUDA log-probs,
cached decoding vs a full forward, the CUDA-graph decode vs the eager one) runs the tiny model in float64 and
agrees to conftest's `assert_same_math` / `same_math` (greedy and seeded tokens exactly); bf16 autocast keeps float32
weights, with bounds derived from bf16's resolution (4 · EPS_BF16 · the logits' spread against the fp32 CPU values;
0.25 for sampled log-probs of logits reaching tens, where bf16's spacing is 0.125-0.25). A kill and resume on CUDA
runs the same kernels on the same shapes; it replays the same rows within 1e-4 (deterministic algorithms with
warn_only: a few CUDA kernels without a deterministic form still accumulate atomically).
"""

from __future__ import annotations

import copy
import json
import math
import os
import signal
import subprocess
import sys
import warnings

import pytest
import torch
from conftest import EPS_BF16, assert_same_math, same_math
from safetensors.torch import load_file
from test_rollout_hf import EchoRetriever, _full_logprobs, _prompts, _run_session
from test_forward import _logit_spread, _tiny_batch  # noqa: E402
from test_train import (  # noqa: F401
    REPO,
    _wait_rows,
    rows_without_time,
    same,
    tiny_model,
    tiny_overrides,
)

from searchrl.training.config import load_config
from searchrl.training.logger import read_jsonl

_WHY = (f"needs a CUDA GPU: torch {torch.__version__} " + ("is a CPU-only build" if torch.version.cuda is None
        else "sees none (check nvidia-smi and CUDA_VISIBLE_DEVICES)"))
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=_WHY),
              pytest.mark.usefixtures("float64_norms")]  # conftest: float64 models compute in float64

CUDA = torch.device("cuda")


def _tiny_run(model, run, **extra):
    return load_config("demo", tiny_overrides(model, run, train__device="cuda", log__samples_every=0, **extra))


@pytest.mark.parametrize("variant", ["full", "lora_bf16_base"])
def test_a_tiny_model_trains_rl_steps_on_cuda(tiny_model, tmp_path, monkeypatch, variant):
    from searchrl.models import load_policy, module_device
    from searchrl.training import loop

    seen = []
    real_step = loop.rl_step

    def recording_step(t, step):
        seen.append((module_device(t.model).type, t.engine.backend.pack_weights, t.engine.backend.bf16,
                     t.engine.backend.static_decode))
        return real_step(t, step)

    monkeypatch.setattr(loop, "rl_step", recording_step)
    extra = {"algorithm__kl_coef": 0.01, "train__lr": 1e-3}  # a KL reference on the GPU too
    if variant == "lora_bf16_base":
        extra |= {"model__lora__enabled": "true", "model__lora__r": 4, "model__dtype": "bfloat16"}
    run = tmp_path / "run"
    from searchrl.training.run import train

    summary = train(_tiny_run(tiny_model, run, **extra), console=False)
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3] and summary["steps"] == 3
    # no oneDNN packing off the CPU; rollouts sample in bf16 (rollout.bf16 null, train.bf16 auto on a bf16 GPU)
    # ... and decode with CUDA graphs (rollout.cuda_graphs, on by default), LoRA's adapters included
    assert seen == [("cuda", False, torch.cuda.is_bf16_supported(), True)] * 3
    assert torch.cuda.max_memory_allocated() > 0
    for row in rows:
        for key in ("actor/loss", "actor/grad_norm", "actor/kl_ref", "diag/is_ratio_mean", "diag/sampler_logprob_gap"):
            assert math.isfinite(row[key]), (key, row[key])
        assert row["actor/nonfinite_skips"] == 0
    assert rows[-1]["actor/kl_ref"] > 0
    weights = load_file(str(run / "checkpoints" / "step_000003" / "weights.safetensors"))
    assert all(w.device.type == "cpu" for w in weights.values())  # saved device-agnostic
    load_policy(run / "final_model")


def test_cpu_and_cuda_log_probs_of_the_same_model_and_batch_agree(tiny_model):
    from searchrl.training.forward import token_logprobs
    from searchrl.training.policy import autocast

    model32, batch = _tiny_batch(tiny_model)
    model = copy.deepcopy(model32).double()  # the same math on two devices: float64 (the kernels sum differently)
    cpu_lp, cpu_ent = token_logprobs(model, batch, with_entropy=True)
    gpu_model = copy.deepcopy(model).to(CUDA)
    gpu_lp, gpu_ent = token_logprobs(gpu_model, batch.to(CUDA), with_entropy=True)
    assert gpu_lp.device.type == "cuda"
    mask = batch.response_mask > 0
    assert (cpu_lp[mask] != 0).all()
    assert_same_math(gpu_lp.cpu(), cpu_lp)
    assert_same_math(gpu_ent.cpu(), cpu_ent)
    # bf16 autocast casts float32 weights: against the fp32 CPU values, within 4 · EPS_BF16 · the logits' spread
    # (bf16 rounds each logit by ~EPS_BF16/2 of the magnitudes it sums, of the order of that spread: ~0.06 here)
    cpu32_lp, _ = token_logprobs(model32, batch)
    with autocast(True, CUDA):
        bf16_lp, _ = token_logprobs(copy.deepcopy(model32).to(CUDA), batch.to(CUDA))
    torch.testing.assert_close(bf16_lp.cpu(), cpu32_lp, rtol=0, atol=4 * EPS_BF16 * _logit_spread(model32, batch))


@pytest.fixture(scope="module")
def tiny_gpu_path(tmp_path_factory):
    from searchrl.models import build_tiny_random_model

    return build_tiny_random_model(tmp_path_factory.mktemp("tiny_gpu") / "m", initializer_range=0.5, seed=3)


@pytest.fixture(scope="module")
def tiny_on_cuda(tiny_gpu_path):
    """float32 on the GPU: for bf16 sampling (autocast casts float32 weights)."""
    from searchrl.models import load_policy

    return load_policy(tiny_gpu_path, device=CUDA)


@pytest.fixture(scope="module")
def tiny64_on_cuda(tiny_gpu_path):
    """float64 on the GPU: for the cache's and the CUDA graph's logic against a full or eager forward."""
    from searchrl.models import load_policy

    return load_policy(tiny_gpu_path, dtype=torch.float64, device=CUDA)


def test_cached_decoding_on_cuda_equals_a_full_re_encode(tiny64_on_cuda):
    model, tok = tiny64_on_cuda  # float64: the same math, so exact argmax and tight log-probs
    seqs, sampled, gens = _run_session(model, tok, _prompts(tok), greedy=True, prefill_tokens=24, max_batch_size=3)
    assert all(g.finish == "length" for g in gens)
    for row, seq in enumerate(seqs):
        full = _full_logprobs(model, seq)
        assert full.dtype == torch.float64
        for position, token, logprob in sampled[row]:
            assert int(full[position - 1].argmax()) == token
            assert same_math(logprob, float(full[position - 1, token]))
    reference, _, _ = _run_session(model, tok, _prompts(tok), greedy=True)
    assert reference == seqs  # batching and prefill chunking change nothing


def _engine_trajectories(model, tok, **backend_kw) -> list:
    """Two questions x 2 trajectories, up to 2 turns of 10 tokens sampled at T = 0.8 with seed 7, on the echo
    retriever, with `HFBackend(model, tok, **backend_kw)`."""
    from searchrl.data import Question
    from searchrl.protocol import ProtocolConfig
    from searchrl.rollout import HFBackend, RolloutConfig, RolloutEngine

    questions = [Question("1", "who wrote hamlet", ["Shakespeare"], "nq"),
                 Question("2", "capital of peru", ["Lima"], "nq")]
    cfg = RolloutConfig(max_turns=2, max_turn_tokens=10, temperature=0.8, seed=7)
    engine = RolloutEngine(HFBackend(model, tok, **backend_kw), tok, EchoRetriever(), ProtocolConfig(), cfg)
    return engine.run(questions, group_size=2)


@pytest.mark.parametrize("bf16", [False, True])
def test_the_engine_on_cuda_is_token_exact_and_seeded(tiny_on_cuda, tiny64_on_cuda, bf16):
    # bf16: float32 weights under autocast, the cache rounds keys and values (tests/test_rollout_hf.py): 0.25 for
    # logits reaching tens (bf16's spacing there is 0.125-0.25). Otherwise float64: the same math as a full forward.
    model, tok = tiny_on_cuda if bf16 else tiny64_on_cuda
    trajs = _engine_trajectories(model, tok, bf16=bf16)

    def close(got: float, want: float) -> bool:
        return abs(got - want) < 0.25 if bf16 else same_math(got, want)

    for traj in trajs:
        assert tok.decode(traj.response_ids) == "".join(
            t.text + o for t, o in zip(traj.turns, traj.extras["observations"]))
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            full = _full_logprobs(model, traj.prompt_ids + traj.response_ids, temperature=0.8)
        for k, (mask, logprob) in enumerate(zip(traj.response_mask, traj.sampling_logprobs)):
            if mask:
                assert close(logprob, float(full[len(traj.prompt_ids) + k - 1, traj.response_ids[k]]))
    again = _engine_trajectories(model, tok, bf16=bf16)
    assert [t.response_ids for t in again] == [t.response_ids for t in trajs]


def test_cuda_graph_decode_matches_the_eager_engine_on_cuda(tiny64_on_cuda):
    # HFBackend(static_decode=True) on CUDA captures each batch's decode step once and replays it; it must sample
    # what the eager, shrinking batch samples (same seed), with the same log-probs. In float64: the graph attends
    # over the whole capacity, the eager batch over fewer columns (the same math summed in other orders), so float32
    # could move a draw across a CDF boundary.
    model, tok = tiny64_on_cuda
    eager = _engine_trajectories(model, tok)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graphed = _engine_trajectories(model, tok, static_decode=True)
    assert not [w for w in caught if "capturing the decode step failed" in str(w.message)]  # the graph ran
    assert [t.response_ids for t in graphed] == [t.response_ids for t in eager]
    assert all(same_math(g_lp, e_lp) for e, g in zip(eager, graphed)
               for e_lp, g_lp in zip(e.sampling_logprobs, g.sampling_logprobs))


def test_cuda_graph_decode_in_bf16_is_consistent_and_seeded(tiny_on_cuda):
    # In bf16 the graph (attention over the whole capacity) and the eager batch round differently, so a sampled token
    # may differ; what must hold: each sampled log-prob is the model's (a full forward, bf16 tolerance as in
    # test_the_engine_on_cuda_is_token_exact_and_seeded) and the same seed replays the same tokens.
    model, tok = tiny_on_cuda
    graphed = _engine_trajectories(model, tok, bf16=True, static_decode=True)
    for traj in graphed:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            full = _full_logprobs(model, traj.prompt_ids + traj.response_ids, temperature=0.8)
        for k, (mask, logprob) in enumerate(zip(traj.response_mask, traj.sampling_logprobs)):
            if mask:
                assert abs(float(full[len(traj.prompt_ids) + k - 1, traj.response_ids[k]]) - logprob) < 0.25
    again = _engine_trajectories(model, tok, bf16=True, static_decode=True)
    assert [t.response_ids for t in again] == [t.response_ids for t in graphed]


_DETERMINISTIC_TRAIN = (
    "import sys, torch; torch.use_deterministic_algorithms(True, warn_only=True); "
    "from searchrl.cli import main; sys.exit(main(['train', '--quiet', *sys.argv[1:]]))"
)


def _cuda_train_process(args: list[str]) -> subprocess.Popen:
    """`searchrl train` in a subprocess with deterministic CUDA kernels (cuBLAS needs its workspace setting)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", CUBLAS_WORKSPACE_CONFIG=":4096:8")
    return subprocess.Popen([sys.executable, "-c", _DETERMINISTIC_TRAIN, *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_kill_and_resume_on_cuda_replays_the_same_steps(tiny_model, tmp_path):
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    # Steps of the tiny model take well under a second on a GPU: 8 of them, so that the kill lands mid-run.
    base = dict(train__steps=8, checkpoint__every=2, log__samples_every=0, log__tensorboard="false",
                train__device="cuda")
    ref = _cuda_train_process(tiny_overrides(tiny_model, straight, **base))
    assert ref.wait(timeout=600) == 0, ref.stderr.read()
    victim = _cuda_train_process(tiny_overrides(tiny_model, killed, **base))
    _wait_rows(killed / "metrics.jsonl", 3, victim)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    from searchrl.training.checkpoint import latest_checkpoint

    assert not (killed / "summary.json").exists(), "the run finished before the kill: nothing was resumed"
    assert latest_checkpoint(killed) is not None
    resumed = _cuda_train_process(["--resume", str(killed)])
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    a, b = rows_without_time(straight / "metrics.jsonl"), rows_without_time(killed / "metrics.jsonl")
    assert [r["step"] for r in b] == list(range(1, 9))
    # The same kernels on the same shapes (bit-identity's condition); 1e-4 only for the CUDA kernels that
    # use_deterministic_algorithms(warn_only=True) leaves nondeterministic (atomic accumulation).
    for row_a, row_b in zip(a, b, strict=True):
        assert row_a.keys() == row_b.keys()
        for key in row_a:
            if not same(row_a[key], row_b[key]):
                assert row_a[key] == pytest.approx(row_b[key], rel=1e-4, abs=1e-4), (row_a["step"], key)
    wa = load_file(str(straight / "checkpoints" / "step_000008" / "weights.safetensors"))
    wb = load_file(str(killed / "checkpoints" / "step_000008" / "weights.safetensors"))
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], rtol=0, atol=1e-4)


@pytest.mark.parametrize(("first", "then"), [("cuda", "cpu"), ("cpu", "cuda")])
def test_a_run_saved_on_one_device_resumes_on_the_other(tiny_model, tmp_path, first, then):
    from searchrl.cli import main as cli_main

    run = tmp_path / "run"
    args = tiny_overrides(tiny_model, run, train__steps=2, log__samples_every=0, train__device=first)
    assert cli_main(["train", "--quiet", *args]) == 0
    assert cli_main(["train", "--quiet", "--resume", str(run), "train.steps=3", f"train.device={then}"]) == 0
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3] and math.isfinite(rows[-1]["actor/loss"])
    state = load_file(str(run / "checkpoints" / "step_000003" / "weights.safetensors"))
    before = load_file(str(run / "checkpoints" / "step_000002" / "weights.safetensors"))
    assert state.keys() == before.keys()


def test_eval_on_cuda_gives_the_cpu_greedy_answers(tiny_model, tmp_path, capsys):
    """`searchrl eval --model` on CUDA (CUDA-graph decoding) against the CPU, the same fixed 24 test questions: the
    greedy answers agree where neither device's rounding decides a near-tie. Each disagreement is counted and
    printed, not hidden; at most an eighth may differ (fp32 on both; a tiny random model has many near-ties)."""
    from searchrl.cli import main

    answers = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / f"{device}.json"
        samples = tmp_path / f"{device}.jsonl"
        assert main(["eval", "--model", str(tiny_model), "--data", "world@test", "--limit", "24", "--device", device,
                     "--out", str(out), "--samples", str(samples)]) == 0
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        answers[device] = {r["uid"]: r.get("answer") for r in rows}
    assert answers["cpu"].keys() == answers["cuda"].keys() and len(answers["cpu"]) == 24
    differ = [uid for uid in answers["cpu"] if answers["cpu"][uid] != answers["cuda"][uid]]
    print(f"eval on CUDA vs CPU: {len(differ)} of 24 greedy answers differ: {differ}")
    assert len(differ) <= 3
