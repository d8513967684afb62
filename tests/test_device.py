"""Where models run (`train.device`, `--device`), on any machine: the CPU side of the one-GPU path.

The GPU itself is exercised by tests/test_gpu.py (`pytest -m gpu`, skipped without CUDA). Here: the setting's
validation, `auto`, the error for a GPU that is not there (before anything loads, without a traceback), the
`--device` flags, device-agnostic checkpoint loading, CPU-only optimisations staying on the CPU, bf16 base
weights under LoRA, and the engine named in each packaged config's header.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from test_train import tiny_model, tiny_overrides  # noqa: F401 - tiny_model is a fixture

from searchrl.errors import ConfigError
from searchrl.models import module_device, resolve_device
from searchrl.training.config import load_config, packaged_config_names, resolve_config_path

pytestmark = pytest.mark.usefixtures("one_thread")  # conftest.py

ALLOWED = r"allowed values: auto, cpu, cuda, cuda:N"


@pytest.fixture
def no_cuda(monkeypatch):
    """This machine as one without a GPU, whatever it has."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("value", ["gpu", "cuda:x", "cuda:-1", "cuda:1.5", "CUDA", "cpu:0", "3"])
def test_train_device_values_are_validated_with_the_key_and_the_allowed_values(value):
    with pytest.raises(ConfigError, match=rf"^train.device: .* is not allowed; {ALLOWED}"):
        load_config("demo", [f"train.device={value}"])


def test_a_gpu_config_loads_anywhere_the_gpu_is_looked_for_when_a_run_starts(no_cuda):
    for value in ("auto", "cpu", "cuda", "cuda:1"):
        assert load_config("demo", [f"train.device={value}"]).train.device == value
    assert load_config("demo").train.device == "auto"


def test_auto_is_the_gpu_when_torch_sees_one_else_the_cpu(monkeypatch):
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ConfigError, match=r"^--device: 'cuda:2' names GPU 2, but torch sees 2 \(cuda:0 to cuda:1\)"):
        resolve_device("cuda:2", key="--device")


def test_cuda_without_a_gpu_is_a_config_error_naming_the_key(no_cuda):
    with pytest.raises(ConfigError, match=r"^train.device: 'cuda' was asked for, but torch .* sees no CUDA device: "
                                          r".*; set train.device to cpu or auto"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match=rf"^--device: 'gpu' is not allowed; {ALLOWED}"):
        resolve_device("gpu", key="--device")


def test_train_asks_for_a_missing_gpu_before_anything_loads_and_prints_no_traceback(tiny_model, tmp_path, capsys,
                                                                                   monkeypatch, no_cuda):
    from searchrl import models
    from searchrl.cli import main as cli_main

    def must_not_load(*a, **k):
        raise AssertionError("the model was loaded before the device was checked")

    monkeypatch.setattr(models, "load_policy", must_not_load)
    run = tmp_path / "run"
    assert cli_main(["train", *tiny_overrides(tiny_model, run), "train.device=cuda"]) == 2
    err = capsys.readouterr().err
    assert "train.device: 'cuda' was asked for" in err and "Traceback" not in err
    assert not run.exists()  # nothing was written


@pytest.mark.parametrize("command", [
    ["eval", "--data", "world", "--limit", "1"],
    ["sft", "--out", "{tmp}/sft"],
    ["decisions", "--model", "default"],
])
def test_eval_sft_and_decisions_take_device_and_refuse_a_missing_gpu(command, tmp_path, capsys, no_cuda):
    from searchrl.cli import main as cli_main

    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    assert cli_main([*args, "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "--device: 'cuda' was asked for" in err and "Traceback" not in err
    assert cli_main([*args, "--device", "tpu"]) == 2
    assert f"--device: 'tpu' is not allowed; {ALLOWED}" in capsys.readouterr().err
    assert not (tmp_path / "sft").exists()


def test_eval_runs_on_the_device_it_is_given(tiny_model, tmp_path, monkeypatch):
    from searchrl.cli import main as cli_main
    from searchrl.rollout.hf import HFBackend

    devices = []
    init = HFBackend.__init__

    def recording(self, model, *a, **k):
        devices.append(module_device(model))
        init(self, model, *a, **k)

    monkeypatch.setattr(HFBackend, "__init__", recording)
    assert cli_main(["eval", "--model", str(tiny_model), "--data", "world", "--limit", "2", "--max-turns", "1",
                     "--max-turn-tokens", "4", "--no-progress", "--resamples", "20", "--device", "cpu"]) == 0
    assert devices == [torch.device("cpu")]


def test_loaded_models_use_pytorch_sdpa_attention(tiny_model):
    from searchrl.models import load_policy

    model, _ = load_policy(tiny_model, device="cpu")
    assert model.config._attn_implementation == "sdpa"
    assert module_device(model) == torch.device("cpu")


# ------------------------------------------------------------------------------------------------ checkpoints


def test_checkpoints_load_onto_the_models_device_whatever_saved_them(tmp_path, monkeypatch):
    """Optimiser state is mapped to the parameters' device and RNG states to the CPU (a GPU run's rng.pt holds its
    GPU states too; a CPU machine keeps its own), so a checkpoint written on CUDA loads on a CPU-only machine."""
    from searchrl.training import checkpoint

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()
    folder = checkpoint.save_checkpoint(tmp_path, 1, model=model, optimizer=optimizer, scheduler=None,
                                        trainer_state={"data_cursor": 2})
    rng = torch.load(folder / "rng.pt", weights_only=False)
    rng["cuda"] = [torch.get_rng_state()]  # as a one-GPU run writes it: one state per GPU
    torch.save(rng, folder / "rng.pt")
    checkpoint.atomic_write_json(folder / checkpoint.MANIFEST_FILE, checkpoint._manifest(folder))  # as it saved it
    mapped = []
    real_load = torch.load

    def recording_load(path, *a, **k):
        mapped.append((Path(path).name, k.get("map_location")))
        return real_load(path, *a, **k)

    monkeypatch.setattr(checkpoint.torch, "load", recording_load)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    other = torch.nn.Linear(4, 2)
    other_opt = torch.optim.AdamW(other.parameters(), lr=1e-2)
    state = checkpoint.load_checkpoint(folder, model=other, optimizer=other_opt)
    assert state["step"] == 1
    assert mapped == [("optimizer.pt", torch.device("cpu")), ("rng.pt", "cpu")]
    assert torch.equal(other.weight, model.weight)
    moments = other_opt.state[other.weight]
    assert moments["exp_avg"].device == other.weight.device
    assert torch.equal(moments["exp_avg"], optimizer.state[model.weight]["exp_avg"])


# ------------------------------------------------------------------------------------ CPU-only optimisations


def test_onednn_packing_and_bf16_detection_are_decided_per_device(tiny_model, monkeypatch):
    from transformers import AutoConfig, AutoModelForCausalLM

    from searchrl.models import load_policy
    from searchrl.rollout.hf import HFBackend, _PackedLinears
    from searchrl.training.policy import autocast, bf16_native, use_bf16

    model, tok = load_policy(tiny_model)
    assert HFBackend(model, tok).pack_weights == _PackedLinears.usable()
    with torch.device("meta"):  # any device that is not the CPU: nothing is packed for it
        elsewhere = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(tiny_model))
    assert HFBackend(elsewhere, tok).pack_weights is False
    cpu_answer = bf16_native("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU in the machine does not change the CPU's
    assert bf16_native("cpu") == cpu_answer and use_bf16("auto", "cpu") == cpu_answer
    assert use_bf16(True, "cuda") and not use_bf16(False, "cuda")
    with autocast(True, torch.device("cpu")):
        assert torch.is_autocast_enabled("cpu") and not torch.is_autocast_enabled("cuda")
    with autocast(False, "cpu"):
        assert not torch.is_autocast_enabled("cpu")


def test_rollouts_sample_in_bf16_on_a_gpu_under_train_bf16_and_in_float32_on_the_cpu(monkeypatch):
    from searchrl.training import policy
    from searchrl.training.policy import rollout_bf16

    monkeypatch.setattr(policy, "bf16_native", lambda device: True)  # the same answer on any machine
    cfg = load_config("demo")
    assert cfg.rollout.bf16 is None
    assert rollout_bf16(cfg, "cuda") and not rollout_bf16(cfg, "cpu")  # float32 on the CPU: packed kernels
    assert not rollout_bf16(load_config("demo", ["train.bf16=false"]), "cuda")
    assert rollout_bf16(load_config("demo", ["rollout.bf16=true"]), "cpu")
    assert not rollout_bf16(load_config("demo", ["rollout.bf16=false", "train.bf16=true"]), "cuda")
    with pytest.raises(ConfigError, match=r"rollout.bf16"):
        load_config("demo", ["rollout.bf16=maybe"])


def test_token_batches_move_as_a_whole():
    from searchrl.rollout.types import Trajectory
    from searchrl.training.forward import collate

    traj = Trajectory(question=None, group_id="g", prompt_ids=[1, 2], response_ids=[3, 4], response_mask=[1, 0],
                      sampling_logprobs=[0.0, 0.0], turns=[], answer=None, num_searches=0, finish_reason="stop")
    batch = collate([traj], pad_id=0)
    same = batch.to("cpu")
    assert all(getattr(same, f) is getattr(batch, f) for f in vars(batch))  # no copy on the same device
    assert batch.to("meta").input_ids.device.type == "meta"


# ------------------------------------------------------------------------------------ bf16 weights (LoRA)


def test_bf16_weights_are_for_a_lora_base_only():
    with pytest.raises(ConfigError, match=r"^model.dtype: bfloat16 weights need model.lora.enabled=true"):
        load_config("demo", ["model.dtype=bfloat16"])
    with pytest.raises(ConfigError, match=r"^model.dtype: 'float16' is not allowed; allowed values: float32, bfloat16"):
        load_config("demo", ["model.dtype=float16", "model.lora.enabled=true"])


def test_a_lora_run_keeps_its_base_in_bf16_and_its_adapters_in_float32(tiny_model, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from searchrl.models import load_policy
    from searchrl.training import loop
    from searchrl.training.logger import read_jsonl

    dtypes = {}
    real_step = loop.rl_step

    def recording_step(t, step):
        for name, p in t.model.named_parameters():
            dtypes.setdefault("adapter" if p.requires_grad else "base", set()).add(p.dtype)
        return real_step(t, step)

    monkeypatch.setattr(loop, "rl_step", recording_step)
    run = tmp_path / "run"
    cfg = load_config("demo", tiny_overrides(tiny_model, run, train__steps=2, model__lora__enabled="true",
                                             model__lora__r=4, model__dtype="bfloat16", train__lr=1e-3,
                                             train__bf16="false", log__samples_every=0, train__device="cpu"))
    from searchrl.training.run import train

    train(cfg, console=False)
    assert dtypes == {"base": {torch.bfloat16}, "adapter": {torch.float32}}
    rows = read_jsonl(run / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["actor/loss"]) for r in rows)
    weights = load_file(str(run / "checkpoints" / "step_000002" / "weights.safetensors"))
    assert weights and all("lora_" in n and w.dtype == torch.float32 for n, w in weights.items())
    load_policy(run / "final_model")  # the adapters merged into an ordinary HF folder


# ------------------------------------------------------------------------------------ packaged configs


@pytest.mark.parametrize("name", packaged_config_names())
def test_every_packaged_config_says_which_engine_runs_it(name):
    """Each config's header names its engine: the native trainer (CPU, or one GPU) or verl (examples/verl)."""
    header = []
    for line in resolve_config_path(name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    engine = [line for line in header if line.startswith("# Engine:")]
    assert len(engine) == 1, f"{name}.yaml: its header comment needs one '# Engine: ...' line"
    assert ("native trainer" in engine[0]) or ("verl" in engine[0])
    from conftest import REQUIRED_OVERRIDES

    cfg = load_config(name, REQUIRED_OVERRIDES.get(name, []))
    if name.endswith("_1gpu"):  # a one-GPU config says what it measured, and on which card
        text = "\n".join(header)
        assert cfg.train.device == "cuda" and "Measured" in text and "NVIDIA" in text and "GB" in text, name
