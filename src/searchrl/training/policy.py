"""Getting a loaded causal LM ready to train, and the optimiser pieces shared by `searchrl train` and `sft`.

- `prepare_for_training`: optional LoRA adapters (peft), gradient checkpointing, fp32 master weights, the device.
- `make_optimizer`, `lr_multiplier`, `set_learning_rate`: AdamW and the one learning-rate schedule (warm-up, then
  constant/cosine/linear), set before every update by RL and SFT alike.
- `autocast`: bf16 autocast on the model's device, CPU or CUDA (fp32 weights stay the optimiser's master copy).
- `reference_policy`: the frozen starting policy for the KL term (the adapter-free model under LoRA).
- `export_policy`: an HF folder (LoRA merged) that `searchrl eval` and `load_policy` read.
"""

from __future__ import annotations

import contextlib
import copy
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from searchrl.errors import ConfigError, SearchRLError
from searchrl.fileio import give_umask_permissions, write_failure
from searchrl.models import is_lora, write_agent_settings
from searchrl.settings import to_dict

if TYPE_CHECKING:
    from searchrl.training.config import Config


def prepare_for_training(
    model: torch.nn.Module,
    *,
    lora: Any | None = None,
    gradient_checkpointing: bool = True,
    seed: int = 0,
    train_layers: int | None = None,
    key: str = "train.train_layers",
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.nn.Module:
    """Float32 weights (a LoRA run may keep its frozen base in `dtype` bfloat16; peft keeps the adapters float32),
    gradient checkpointing, LoRA adapters when `lora.enabled` (seeded init), only the top `train_layers` blocks
    trainable when set (see :func:`freeze_below_top_layers`), then the move to `device`.

    The adapters are initialised on the CPU before the move, so a seed gives the same adapters on every device."""
    model = model.to(dtype)
    if train_layers is not None:
        if lora is not None and lora.enabled:
            raise ConfigError(f"{key} and model.lora.enabled are exclusive: LoRA already freezes the base model")
        freeze_below_top_layers(model, train_layers, key)
    if gradient_checkpointing and hasattr(model, "gradient_checkpointing_enable"):
        # Non-reentrant checkpointing also works when only adapters (not the inputs) require grad.
        enable = getattr(model, "activation_checkpointing_enable", None)
        if enable is not None:  # transformers >= 5.x name
            enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if lora is not None and lora.enabled:
        try:
            from peft import LoraConfig, get_peft_model  # local: optional extra [lora], ~7.6 s to import
        except ImportError:
            raise ConfigError("model.lora.enabled: true needs peft; install it with `pip install peft`") from None
        present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
        missing = [m for m in lora.target_modules if m not in present]
        if missing:
            raise ConfigError(
                f"model.lora.target_modules: {missing} not found in the model; linear layers present include: "
                f"{', '.join(sorted(n for n in present if n.endswith('proj'))) or '(none)'}"
            )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = get_peft_model(
                model,
                LoraConfig(
                    r=lora.r,
                    lora_alpha=lora.alpha,
                    lora_dropout=lora.dropout,
                    target_modules=list(lora.target_modules),
                    task_type="CAUSAL_LM",
                ),
            )
    if device is not None:
        model.to(device)
    model.train()
    return model


def freeze_below_top_layers(model: torch.nn.Module, n: int, key: str = "train.train_layers") -> None:
    """Leave only the top `n` transformer blocks, the final norm and an untied LM head trainable.

    Why: on a CPU the backward pass is two thirds of a training step's compute, and it stops at the lowest module
    that needs a gradient; with the embeddings and the lower blocks frozen it covers `n` blocks only. (The LM
    head of SmolLM2 is tied to the embeddings, so it stays frozen with them.)
    """
    config = getattr(model, "config", None)
    depth = getattr(config, "num_hidden_layers", None)
    blocks = next((m for m in model.modules() if isinstance(m, torch.nn.ModuleList) and len(m) == depth), None)
    if blocks is None:
        raise ConfigError(f"{key}: could not find the model's list of transformer blocks "
                          f"(config.num_hidden_layers = {depth}); set {key}=null")
    if n > len(blocks):
        raise ConfigError(f"{key}: {n} is more than the model's {len(blocks)} blocks; set {key}={len(blocks)} or null")
    for param in model.parameters():
        param.requires_grad_(False)
    trainable = list(blocks[len(blocks) - n :].parameters())
    base = getattr(model, "model", None)
    norm = getattr(base, "norm", None)
    if isinstance(norm, torch.nn.Module):
        trainable += list(norm.parameters())
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if head is not None and (embeddings is None or head.weight is not embeddings.weight):
        trainable += list(head.parameters())
    for param in trainable:
        param.requires_grad_(True)


@contextlib.contextmanager
def trainable_layers(model: torch.nn.Module, n: int | None, key: str = "sft.train_layers") -> Iterator[None]:
    """Within the block, only the top `n` blocks train (all parameters when None); the flags are restored after.

    The warm start's SFT and RL may train different parts of the model (`sft.train_layers`, `train.train_layers`).
    Under LoRA (exclusive with both) the flags are left alone.
    """
    flags = [(p, p.requires_grad) for p in model.parameters()]
    if not is_lora(model):
        if n is None:
            for param, _ in flags:
                param.requires_grad_(True)
        else:
            freeze_below_top_layers(model, n, key)
    try:
        yield
    finally:
        for param, flag in flags:
            param.requires_grad_(flag)


def trainable_parameters(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


def make_optimizer(
    model: torch.nn.Module, *, lr: float, weight_decay: float = 0.0, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
) -> torch.optim.AdamW:
    # The fused kernel makes one pass over each tensor: on CPU it is about 7x faster than the per-tensor loop
    # for SmolLM2-135M (0.16 s vs 1.17 s a step, one thread, docs/bench_train.md); the foreach variant is
    # slower still. TRL (transformers' Trainer) defaults to the fused one too.
    params = trainable_parameters(model)
    try:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas, eps=eps, fused=True)
    except RuntimeError:  # a device or dtype without the fused kernel
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas, eps=eps, foreach=False)


def lr_multiplier(step: int, *, warmup_steps: int, total_steps: int, schedule: str) -> float:
    """Learning-rate factor at scheduler step `step` (0-based): linear warm-up, then constant/cosine/linear decay.

    Warm-up: (step + 1) / warmup_steps while step < warmup_steps (verl's `get_constant_schedule_with_warmup`).
    Cosine: 0.5·(1 + cos(π·progress)); linear: 1 − progress, progress = (step − warmup)/(total − warmup).
    """
    if warmup_steps > 0 and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant" or total_steps <= warmup_steps:
        return 1.0
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "linear":
        return max(0.0, 1.0 - progress)
    raise ValueError(f"unknown lr schedule {schedule!r}")


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    """The one way RL and SFT set the learning rate: before each optimiser update, base lr × `lr_multiplier`."""
    for group in optimizer.param_groups:
        group["lr"] = lr


def bf16_native(device: torch.device | str = "cpu") -> bool:
    """Whether bf16 matmuls are native on `device`: a CUDA GPU that has them (Ampere and later), or a CPU with
    avx512_bf16 or AMX tiles.

    Measured on this project's 2-core machines: with avx512_bf16, bf16 autocast trains about 1.7x faster than fp32;
    on an AVX2-only CPU a bf16 linear layer took 121 ms against 16 ms in fp32 (oneDNN has no native kernel there).
    Asked per device, because a run on the CPU of a GPU machine must not take the GPU's answer.
    """
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    cpu = torch.cpu
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(cpu, name, lambda: False)() for name in checks)


def use_bf16(setting: bool | str, device: torch.device | str = "cpu") -> bool:
    """Resolve `train.bf16` (true, false or 'auto') to on/off for `device`."""
    return bf16_native(device) if setting == "auto" else bool(setting)


def rollout_bf16(cfg: Config, device: torch.device | str) -> bool:
    """Resolve `rollout.bf16`: as set, or when null, `train.bf16` on a CUDA GPU and float32 on the CPU (where the
    oneDNN-packed float32 kernels decode faster than bf16 autocast)."""
    if cfg.rollout.bf16 is not None:
        return bool(cfg.rollout.bf16)
    device = torch.device(device)
    return device.type == "cuda" and use_bf16(cfg.train.bf16, device)


@contextlib.contextmanager
def autocast(setting: bool | str, device: torch.device | str) -> Iterator[None]:
    """bf16 autocast on `device` (the model's) when `setting` (true, false or 'auto', see :func:`use_bf16`) says
    so; a no-op otherwise."""
    device = torch.device(device)
    if not use_bf16(setting, device):
        yield
        return
    with torch.autocast(device.type, dtype=torch.bfloat16):
        yield


def reference_policy(model: torch.nn.Module) -> Any:
    """A context-manager factory giving the frozen reference policy (the model as trained from).

    Under LoRA it is the same module with adapters disabled (no copy); otherwise a frozen deep copy made now.
    """
    if is_lora(model):
        return lambda: model.disable_adapter()
    frozen = copy.deepcopy(model).eval()
    for p in frozen.parameters():
        p.requires_grad_(False)

    @contextlib.contextmanager
    def use_copy() -> Iterator[torch.nn.Module]:
        yield frozen

    return use_copy


class ExportWriteError(SearchRLError):
    """A model folder could not be written (full disk, no permission); no half-written folder is left."""


def export_policy(model: torch.nn.Module, tokenizer: Any, out_dir: Path, *, protocol: Any = None,
                  rollout: Any = None) -> Path:
    """Save an HF folder (LoRA merged into a copy) atomically: `load_policy(out_dir)` and `searchrl eval` read it.

    With `protocol` and `rollout` (the run's config sections), the folder also carries them
    (`models.AGENT_SETTINGS_FILE`), and `searchrl eval --model out_dir` prompts the agent as it was trained.
    A failed write (full disk, no permission) raises `ExportWriteError`; an earlier folder at `out_dir` stays."""
    out_dir = Path(out_dir)
    tmp = out_dir.parent / f".tmp-{out_dir.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    to_save = model
    if is_lora(model):
        to_save = copy.deepcopy(model).merge_and_unload()
    try:
        to_save.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if protocol is not None and rollout is not None:
            write_agent_settings(tmp, to_dict(protocol), to_dict(rollout))
        give_umask_permissions(tmp)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)  # a failed export (full disk) leaves no half-written folder
        reason = write_failure(exc)
        if reason is not None:
            raise ExportWriteError(f"cannot write {out_dir} ({reason})") from exc
        raise
    if out_dir.exists():
        old = out_dir.parent / f".old-{out_dir.name}"
        shutil.rmtree(old, ignore_errors=True)
        out_dir.rename(old)
        tmp.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out_dir)
    return out_dir
