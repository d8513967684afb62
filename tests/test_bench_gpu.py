"""benchmarks/bench_gpu.py's workers, run on the CPU: a GPU loan is short and rare, so what the benchmark records
(step times, the rollout breakdown, GC time, fixed completion lengths) is checked here, with a narrow model of the
SmolLM2 architecture and CUDA's synchronisation and memory counters stubbed out."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_gpu  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py


@pytest.fixture(scope="module")
def narrow_model(tmp_path_factory) -> Path:
    kind, dims = bench_gpu.ARCHITECTURES["smollm2-135m"]
    narrow = {**dims, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
              "num_key_value_heads": 2}
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(bench_gpu.ARCHITECTURES, "narrow", (kind, narrow))
        return bench_gpu.build_random_model("narrow", tmp_path_factory.mktemp("bench_gpu") / "m", seed=0)


@pytest.fixture
def on_cpu(monkeypatch):
    monkeypatch.setattr(bench_gpu, "_sync", lambda: None)
    for name in ("max_memory_allocated", "max_memory_reserved", "reset_peak_memory_stats"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, **k: 0)


def _args(model: Path, **extra) -> argparse.Namespace:
    settings = dict(model_dir=str(model), seed=0, device="cpu", steps=2, batch_size=2, group_size=4,
                    mini_batch_size=4, micro_batch_size=4, lr=1e-6, bf16=0, gradient_checkpointing=1, max_tokens=12,
                    profile=None, breakdown=False, cuda_graphs=0, lora=0)
    return argparse.Namespace(**{**settings, **extra})


def test_the_searchrl_worker_records_the_breakdown_gc_and_profile(narrow_model, on_cpu, tmp_path):
    args = _args(narrow_model)
    args.breakdown, args.profile = True, str(tmp_path / "profile.txt")
    result = bench_gpu.worker_searchrl(args)
    assert len(result["steps"]) == 2
    for step in result["steps"]:
        assert step["completion_tokens_mean"] == 12  # fix_lengths: every completion runs to its budget
        assert 0 < step["rollout_forward_s"] + step["rollout_sample_s"] <= step["rollout_wall"]
        assert step["rollout_wall"] + step["update_wall"] == pytest.approx(step["wall"])
        assert step["gc_s"] >= 0 and step["gc_collections"] >= 0
        assert "forward" in bench_gpu._step_line(step)
    assert "searchrl rollout call 1" in (tmp_path / "profile.txt").read_text()
    # The worker put back what it patched: the plain rollout runs again (its synchronising timers would fail here).
    from searchrl.rollout.hf import HFSession
    assert not hasattr(HFSession._forward, "__wrapped__") and not hasattr(HFSession._choose, "__wrapped__")


def test_the_trl_worker_times_the_same_work(narrow_model, on_cpu):
    pytest.importorskip("trl", reason="TRL comes with searchrl[bench]; CI installs it")
    result = bench_gpu.worker_trl(_args(narrow_model))
    assert len(result["steps"]) == 2
    for step in result["steps"]:
        assert step["completion_tokens_mean"] == 12
        assert step["rollout_wall"] < step["wall"]
        assert step["gc_s"] >= 0 and step["gc_collections"] >= 0


def test_both_workers_train_the_same_lora_adapters_over_a_bf16_base(narrow_model, on_cpu, monkeypatch):
    # --lora (the 3B LoRA comparison): each side trains rank-r adapters on all seven linear layers of a frozen bf16
    # base, and nothing else. The adapters' shapes and the trainable count are compared, side by side.
    pytest.importorskip("trl", reason="TRL comes with searchrl[bench]; CI installs it")
    import trl
    from searchrl.training import loop

    seen: dict[str, tuple[int, set[str], torch.dtype]] = {}

    def trainable(model) -> tuple[int, set[str], torch.dtype]:
        names = {n for n, p in model.named_parameters() if p.requires_grad}
        assert names and all("lora_" in n for n in names), sorted(names)[:5]
        base = next(p for n, p in model.named_parameters() if not p.requires_grad and "layers" in n)
        kinds = {n.split(".lora_")[0].rsplit(".", 1)[-1] for n in names}
        return sum(p.numel() for p in model.parameters() if p.requires_grad), kinds, base.dtype

    rl_step = loop.rl_step

    def spy_step(t, step):
        seen.setdefault("searchrl", trainable(t.model))
        return rl_step(t, step)

    monkeypatch.setattr(loop, "rl_step", spy_step)
    result = bench_gpu.worker_searchrl(_args(narrow_model, lora=4))
    assert len(result["steps"]) == 2 and all(s["completion_tokens_mean"] == 12 for s in result["steps"])

    train = trl.GRPOTrainer.train

    def spy_train(self, *a, **k):
        seen["trl"] = trainable(self.model)
        return train(self, *a, **k)

    monkeypatch.setattr(trl.GRPOTrainer, "train", spy_train)
    result = bench_gpu.worker_trl(_args(narrow_model, lora=4))
    assert len(result["steps"]) == 2 and all(s["completion_tokens_mean"] == 12 for s in result["steps"])
    assert seen["searchrl"] == seen["trl"]
    count, kinds, dtype = seen["trl"]
    assert kinds == set(bench_gpu.LORA_TARGETS) and dtype == torch.bfloat16 and count > 0


def test_bench_decode_graph_runs_its_eager_side_on_the_cpu(narrow_model, tmp_path):
    # The CUDA-graph side needs a GPU; on the CPU the script still loads, decodes greedily and writes its JSON.
    import json

    import bench_decode_graph

    out = tmp_path / "decode.json"
    assert bench_decode_graph.main(["--model", str(narrow_model), "--random-weights", "--rows", "3", "--prompt", "5",
                                    "--steps", "4", "--rounds", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result["ms_per_step"]) == ["eager"] and len(result["ms_per_step"]["eager"]) == 2
    assert all(ms > 0 for ms in result["ms_per_step"]["eager"]) and result["graph_error"] is None
    assert result["rows"] == 3 and result["steps"] == 4
    assert set(result["sdpa_backend_searchrl_decode"]) == {"with_mask", "without_mask"}
