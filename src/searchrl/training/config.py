"""The training config: plain YAML plus dotted overrides, loaded by ONE function into a validated, frozen tree.

    cfg = load_config("demo", ["algorithm.name=grpo", "train.lr=2e-5"])

- Every field has a help string (`searchrl train --show-config` prints them all).
- Unknown keys fail with the closest known key; bad values fail naming the dotted key and the allowed values.
- A bare name (`demo`, `sapo_qwen3b`) or a path that does not exist but whose file name is packaged
  (`configs/demo.yaml`) resolves to the file shipped in `searchrl/configs/`.
- Derived values (updates per rollout, gradient accumulation, ...) are computed once, here, into `cfg.derived`.
- The `algorithm:` section is handed as a plain dict to `searchrl.algorithms.build_objective`, which owns its
  validation; its ValueError becomes a ConfigError. The saved config holds the resolved (all-explicit) dict.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.resources
import math
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from searchrl.errors import ConfigError
from searchrl.protocol import ProtocolConfig
from searchrl.rewards import RewardConfig
from searchrl.rollout.engine import RolloutConfig
from searchrl.training.monitor import MonitorConfig

# ============================================================================ generic typed-tree machinery

_MISSING = dataclasses.MISSING


def option(
    default: Any = _MISSING,
    help: str = "",
    *,
    choices: tuple | None = None,
    min: float | None = None,
    max: float | None = None,
    factory: Any = _MISSING,
) -> Any:
    """A dataclass field carrying its help text, allowed values and bounds."""
    metadata = {"help": help, "choices": choices, "min": min, "max": max}
    if factory is not _MISSING:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def section(cls: type, help: str = "") -> Any:
    """A nested config section that defaults to its class's defaults."""
    return dataclasses.field(default_factory=cls, metadata={"help": help or (cls.__doc__ or "").strip()})


def build(cls: type, raw: Mapping[str, Any] | None, prefix: str = "", root: type | None = None) -> Any:
    """Instantiate dataclass `cls` from a nested mapping, validating every key and value."""
    raw = {} if raw is None else raw
    root = root or cls
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: expected a mapping of keys, got {_show(raw)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in raw:
        if key not in fields:
            raise ConfigError(_unknown_key_message(root, cls, prefix, str(key)))
    kwargs = {}
    for name, f in fields.items():
        if name in raw:
            dotted = f"{prefix}{name}"
            value = _coerce(raw[name], hints[name], dotted, root)
            _check_bounds(value, f.metadata, dotted)
            kwargs[name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:  # a section's own __post_init__ check
        raise ConfigError(f"{prefix.rstrip('.') or 'config'}: {exc}") from None


def _coerce(value: Any, tp: Any, key: str, root: type) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None:
            if type(None) in args:
                return None
            raise ConfigError(f"{key}: may not be null; expected {_type_name(tp)}")
        errors = []
        for inner in (a for a in args if a is not type(None)):
            try:
                return _coerce(value, inner, key, root)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if len(errors) == 1 else f"{key}: expected {_type_name(tp)}, got {_show(value)}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{key}: {_show(value)} is not allowed; allowed values: {', '.join(map(str, args))}")
        return value
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if hasattr(tp, "from_dict"):  # a section owned by another module validates itself (protocol, monitor)
            if not isinstance(value, Mapping):
                raise ConfigError(f"{key}: expected a mapping of keys, got {_show(value)}")
            try:
                return tp.from_dict(value, where=key)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{key}: {exc}") from None
        return build(tp, value, prefix=f"{key}.", root=root)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {_show(value)}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        number = _as_float(value)
        if number is not None and number.is_integer():
            return int(number)
        raise ConfigError(f"{key}: expected an integer, got {_show(value)}")
    if tp is float:
        number = _as_float(value)
        if number is not None:
            return number
        raise ConfigError(f"{key}: expected a number, got {_show(value)}")
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"{key}: expected a string, got {_show(value)}")
    if origin in (tuple, list):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"{key}: expected a list, got {_show(value)} (write it as [a, b])")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise ConfigError(f"{key}: expected a list of {len(args)} values, got {len(value)}")
            return tuple(_coerce(v, a, f"{key}[{i}]", root) for i, (v, a) in enumerate(zip(value, args)))
        items = [_coerce(v, args[0] if args else Any, f"{key}[{i}]", root) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key}: expected a mapping, got {_show(value)}")
        return dict(value)
    raise TypeError(f"{key}: unsupported config type {tp!r}")  # a schema bug, not user input


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):  # YAML 1.1 reads `1e-6` as a string
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _check_bounds(value: Any, metadata: Mapping, key: str) -> None:
    choices = metadata.get("choices")
    if choices is not None and value is not None:
        for v in value if isinstance(value, (tuple, list)) else (value,):
            if v not in choices:
                near = difflib.get_close_matches(str(v), [str(c) for c in choices], n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ConfigError(f"{key}: {_show(v)} is not allowed; allowed values: {', '.join(map(str, choices))}{hint}")
    lo, hi = metadata.get("min"), metadata.get("max")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{key}: must be a finite number, got {value}")
        if lo is not None and value < lo:
            raise ConfigError(f"{key}: must be >= {lo}, got {value}")
        if hi is not None and value > hi:
            raise ConfigError(f"{key}: must be <= {hi}, got {value}")


def known_keys(cls: type, prefix: str = "") -> list[str]:
    """Every dotted leaf key of a config tree."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if f.init:
            tp = hints[f.name]
            out.extend(known_keys(tp, f"{prefix}{f.name}.") if dataclasses.is_dataclass(tp) else [f"{prefix}{f.name}"])
    return out


def _unknown_key_message(root: type, cls: type, prefix: str, key: str) -> str:
    here = [f.name for f in dataclasses.fields(cls) if f.init]
    near = difflib.get_close_matches(key, here, n=1, cutoff=0.6)
    if near:
        hint = f"did you mean '{prefix}{near[0]}'?"
    else:
        # The key may belong to another section (`lr` meant as `train.lr`): match leaf names, then whole keys.
        every = known_keys(root)
        same_leaf = [k for k in every if k.rsplit(".", 1)[-1] == key]
        best = same_leaf[:1] or difflib.get_close_matches(f"{prefix}{key}", every, n=1, cutoff=0.6)
        hint = f"did you mean '{best[0]}'?" if best else f"known keys in this section: {', '.join(here)}"
    return f"unknown config key '{prefix}{key}'; {hint} (`searchrl train --show-config` lists every key)"


def to_dict(obj: Any) -> Any:
    """A config object as plain YAML-safe data (tuples become lists); init=False fields are left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict"):
            return to_dict(obj.to_dict())
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


def describe(cls: type, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) for every leaf key: the table `--show-config` prints."""
    hints = typing.get_type_hints(cls)
    defaults = cls()
    rows = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            rows.extend(describe(tp, f"{prefix}{f.name}."))
            continue
        help_text = f.metadata.get("help") or _docstring_help(cls).get(f.name, "")
        if f.metadata.get("choices"):
            help_text += f" [allowed: {', '.join(map(str, f.metadata['choices']))}]"
        rows.append((f"{prefix}{f.name}", _type_name(tp), _show(to_dict(getattr(defaults, f.name))), help_text))
    return rows


def _docstring_help(cls: type) -> dict[str, str]:
    """Per-field help from a class docstring's bullets (`- `name`: text` or `name: text`), for sections owned by
    other modules that document their fields there."""
    out: dict[str, str] = {}
    current: list[str] | None = None
    for line in (cls.__doc__ or "").splitlines():
        m = re.match(r"\s*(?:- )?`?([a-z_]+(?:`, `[a-z_]+)*)`?: (.*)", line)
        if m:
            names = m.group(1).split("`, `")
            current = [m.group(2).strip()]
            for name in names:
                out[name] = current  # type: ignore[assignment]
        elif current is not None and line.strip() and line.startswith("      "):
            current.append(line.strip())
        else:
            current = None
    return {k: " ".join(v) for k, v in out.items()}  # type: ignore[arg-type]


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is Literal:
        return "|".join(map(str, typing.get_args(tp)))
    if origin in (tuple, list):
        return "list"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def set_dotted(tree: dict, dotted: str, value: Any) -> None:
    """Set `a.b.c` in a nested dict, creating intermediate mappings."""
    parts = dotted.split(".")
    node = tree
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise ConfigError(f"override {dotted}=...: '{'.'.join(parts[: i + 1])}' is a value, not a section")
        node = child
    node[parts[-1]] = value


# ============================================================================ the training config tree


@dataclass(frozen=True)
class LoraConfig:
    """LoRA adapters through `peft` (the base weights stay frozen; the reference policy is the adapter-free model)."""

    enabled: bool = option(False, "train LoRA adapters instead of all weights")
    r: int = option(16, "adapter rank", min=1)
    alpha: float = option(32.0, "adapter scaling numerator (scale = alpha / r)", min=0)
    dropout: float = option(0.0, "dropout on the adapter input", min=0, max=1)
    target_modules: tuple[str, ...] = option(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        "names of the linear layers that get adapters",
    )


@dataclass(frozen=True)
class ModelConfig:
    """The policy being trained."""

    name: str = option(
        "default",
        "policy to train: 'default' (the embedded SmolLM2-135M-Instruct), an HF model folder, or a .gguf file",
    )
    gradient_checkpointing: bool = option(
        True, "recompute activations in the backward pass (halves training memory at almost no cost on CPU)"
    )
    dtype: str = option(
        "float32",
        "dtype of the loaded weights: float32 (master weights; bf16 compute is train.bf16's autocast) or bfloat16, "
        "LoRA runs only (the frozen base in bf16 halves its memory; the adapters stay float32)",
        choices=("float32", "bfloat16"),
    )
    lora: LoraConfig = section(LoraConfig)


@dataclass(frozen=True)
class DataConfig:
    """Questions to train and validate on (specs as for `searchrl.data.load_source`)."""

    train: str = option("world", "training source: 'world', 'world:SEED', a benchmark name or a questions file")
    train_split: str = option("train", "split of the training source to sample from")
    val: tuple[str, ...] = option((), "validation sources; empty: the training source (each at `val_split`)")
    val_split: str = option(
        "dev", "split validated on during RL: every decision (checkpoints/best, the collapse monitor) uses it"
    )
    test_split: str | None = option(
        "test", "split evaluated at the start and the end of RL only, for the reported gain, never for a decision "
        "(null: report on `val_split`)"
    )
    max_train_questions: int | None = option(None, "use only the first N training questions (null: all)", min=1)


@dataclass(frozen=True)
class RetrievalConfig:
    """The search engine the agent calls."""

    index: str | None = option(
        None, "index folder or http(s):// URL; null: BM25 over the training source's corpus (built once, cached)"
    )
    cache: bool = option(True, "memoise identical queries (GRPO groups repeat them)")


@dataclass(frozen=True)
class TrainConfig:
    """The RL loop: sizes, optimiser and fault handling."""

    steps: int = option(100, "RL steps (one rollout batch each)", min=0)
    time_budget_min: float | None = option(
        None,
        "stop RL early, after a completed step, when the next step and the final evaluation would end later than "
        "this many minutes after the run started (the number of steps then depends on the machine); null: no limit",
        min=0,
    )
    batch_size: int = option(8, "questions sampled per step (B)", min=1)
    group_size: int = option(5, "rollouts per question (G); one GRPO group per question", min=1)
    mini_batch_size: int = option(
        8, "trajectories per optimiser update; B*G/mini_batch_size updates per rollout and epoch", min=1
    )
    micro_batch_size: int = option(4, "trajectories per forward/backward (gradient accumulation inside a mini-batch)", min=1)
    ppo_epochs: int = option(1, "passes over each rollout batch", min=1)
    shuffle_mini_batches: bool = option(True, "shuffle trajectories before splitting them into mini-batches")
    lr: float = option(1e-6, "AdamW learning rate", min=0)
    weight_decay: float = option(0.0, "AdamW weight decay", min=0)
    adam_betas: tuple[float, float] = option((0.9, 0.999), "AdamW betas")
    adam_eps: float = option(1e-8, "AdamW epsilon", min=0)
    warmup_ratio: float = option(0.0, "fraction of the RL steps with linear warm-up (verl `lr_warmup_steps_ratio`)", min=0, max=1)
    lr_schedule: str = option("constant", "learning-rate schedule after warm-up", choices=("constant", "cosine", "linear"))
    max_grad_norm: float = option(1.0, "clip the global gradient norm to this (0: no clipping)", min=0)
    device: str = option(
        "auto",
        "where the policy, reference, batches, KV cache and losses live: auto (the first CUDA GPU when torch sees "
        "one, else the CPU), cpu, cuda or cuda:N; an explicit cuda without a GPU is an error, not a CPU run",
    )
    bf16: bool | Literal["auto"] = option(
        "auto",
        "bf16 autocast over fp32 master weights; 'auto': on where bf16 is native on train.device (a CUDA GPU with "
        "bf16, CPUs with avx512_bf16 or AMX: about 1.7x faster), off elsewhere (an AVX2-only CPU computes bf16 about "
        "8x slower than fp32)",
    )
    logprob_chunk_size: int = option(256, "positions per chunk when computing token log-probs (bounds the logits' memory)", min=1)
    train_layers: int | None = option(
        None,
        "RL updates only the top N transformer blocks (and the final norm; an untied LM head too); the embeddings and "
        "the blocks below stay frozen, so the backward pass stops N blocks from the top. null: train everything",
        min=1,
    )
    warm_start: str | None = option(
        None, "before RL: null (none), 'sft' (run `searchrl sft` with the `sft:` section first) or a model folder"
    )
    nonfinite_rollback_after: int = option(
        3, "consecutive skipped (non-finite) updates before rolling back to the last checkpoint", min=1
    )
    nonfinite_max_rollbacks: int = option(2, "non-finite rollbacks before the run stops (checkpoints intact)", min=0)
    nonfinite_lr_factor: float = option(0.5, "multiply the learning rate by this after a non-finite rollback", min=0, max=1)
    debug_inject_nan_step: int | None = option(None, "testing hook: make the loss NaN in every update of this RL step", min=0)


@dataclass(frozen=True)
class SFTConfig:
    """Supervised warm start on oracle or collected trajectories (loss on model tokens only)."""

    data: str = option("oracle", "'oracle': the training source's oracle trajectories; or a samples.jsonl of trajectories")
    min_reward: float | None = option(None, "keep only trajectories with reward >= this (rejection-sampling fine-tuning)")
    oracle_think: bool = option(True, "keep the oracle's <think>…</think> texts (false: actions only, ~3x fewer tokens)")
    epochs: float = option(2.0, "passes over the SFT data (fractions allowed)", min=0)
    batch_size: int = option(16, "trajectories per optimiser update", min=1)
    micro_batch_size: int = option(8, "trajectories per forward/backward", min=1)
    lr: float = option(5e-5, "AdamW learning rate (cosine decay after warm-up)", min=0)
    train_layers: int | None = option(
        None, "fine-tune only the top N transformer blocks, as train.train_layers (null: everything)", min=1
    )
    warmup_ratio: float = option(0.1, "fraction of the updates with linear warm-up", min=0, max=1)
    max_examples: int | None = option(None, "use at most this many trajectories (null: all)", min=1)
    holdout: int = option(64, "trajectories held out to report the validation loss", min=0)


@dataclass(frozen=True)
class ValConfig:
    """Greedy validation with the evaluation harness."""

    every: int = option(10, "validate every N RL steps (0: only before and after training)", min=0)
    at_start: bool = option(True, "validate the starting point of RL (after any warm start)")
    untrained: bool = option(False, "also evaluate the model as loaded, before any warm start (on the test split)")
    max_questions: int | None = option(200, "validate on at most this many questions per source (null: all)", min=1)
    test_max_questions: int | None = option(
        None, "evaluate at most this many test-split questions per source at the start and end (null: all)", min=1
    )
    untrained_max_questions: int | None = option(
        None, "evaluate the untrained model on at most this many test-split questions (null: as the test)", min=1
    )
    batch_size: int = option(64, "questions per greedy generation batch", min=1)


@dataclass(frozen=True)
class CheckpointConfig:
    """Checkpoints: weights (safetensors), optimiser, scheduler, RNG states and the data cursor."""

    every: int = option(10, "save every N RL steps (0: only at the end and on Ctrl-C)", min=0)
    keep_last: int = option(2, "keep the last K checkpoints", min=1)
    keep_best: bool = option(True, "also keep the checkpoint with the best validation EM")
    export_final: bool = option(True, "write final_model/ (an HF folder loadable by `searchrl eval`) at the end")


@dataclass(frozen=True)
class LogConfig:
    """Where metrics go."""

    tensorboard: bool = option(True, "write TensorBoard event files under tb/")
    wandb: bool = option(False, "log to Weights & Biases (needs `pip install wandb`)")
    wandb_project: str = option("searchrl", "wandb project name")
    samples_every: int = option(5, "save decoded trajectories to samples/step_XXXX.jsonl every N steps (0: never)", min=0)
    console: bool = option(True, "rich progress bar and a one-line summary per step")


@dataclass(frozen=True)
class RunConfig:
    """The run folder."""

    dir: str | None = option(None, "run folder; null: runs/<name>-<algorithm>-<seed>")
    name: str = option("run", "run name (used in the default folder name)")
    overwrite: bool = option(
        False, "replace an existing run folder instead of refusing to start (only a searchrl run folder, never one "
        "holding data this run reads; replaced once the data and model have loaded)"
    )


@dataclass(frozen=True)
class Derived:
    """Values computed once from the config at load time (never read from YAML)."""

    trajectories_per_step: int
    updates_per_epoch: int
    updates_per_step: int
    grad_accum_steps: int
    warmup_steps: int
    total_updates: int


@dataclass(frozen=True)
class Config:
    """Everything a training run needs. Build it with `load_config`, never by hand from YAML."""

    seed: int = option(0, "seed of the data order, sampling, initialisation of adapters and mini-batch shuffles")
    model: ModelConfig = section(ModelConfig)
    data: DataConfig = section(DataConfig)
    retrieval: RetrievalConfig = section(RetrievalConfig)
    protocol: ProtocolConfig = section(ProtocolConfig, "prompt template and assistant prefix (searchrl.protocol)")
    rollout: RolloutConfig = section(RolloutConfig, "multi-turn rollout: turns, token budgets, top-k, sampling")
    reward: RewardConfig = section(RewardConfig, "reward: metric (em|f1) and Search-R1 v0.3 format terms")
    algorithm: dict = option(
        factory=lambda: {"name": "sapo"},
        help="`name` (see `searchrl.algorithms.algorithm_names()`) and that algorithm's hyperparameters",
    )
    train: TrainConfig = section(TrainConfig)
    sft: SFTConfig = section(SFTConfig)
    val: ValConfig = section(ValConfig)
    checkpoint: CheckpointConfig = section(CheckpointConfig)
    log: LogConfig = section(LogConfig)
    monitor: MonitorConfig = section(MonitorConfig, "collapse monitor rules and what to do on collapse")
    run: RunConfig = section(RunConfig)
    derived: Derived | None = dataclasses.field(default=None, init=False, compare=False)
    source: str = dataclasses.field(default="", init=False, compare=False)  # the YAML file it came from


# ============================================================================ loading

PACKAGED_CONFIGS = "searchrl.configs"


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, plus YAML 1.2 floats: `1e-6` is a number, not the string '1e-6'."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def yaml_load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass


def packaged_config_names() -> list[str]:
    """Names of the YAML configs shipped in `searchrl/configs/` (without `.yaml`)."""
    root = importlib.resources.files(PACKAGED_CONFIGS)
    return sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml"))


def resolve_config_path(path_or_name: str | None) -> Path:
    """A config file path: an existing file as given, else a packaged config by bare name or file name."""
    if path_or_name is None:
        path_or_name = "demo"
    given = Path(path_or_name).expanduser()
    if given.is_file():
        return given
    stem = given.name[: -len(".yaml")] if given.name.endswith(".yaml") else given.name
    if stem.endswith(".yml"):
        stem = stem[: -len(".yml")]
    packaged = importlib.resources.files(PACKAGED_CONFIGS) / f"{stem}.yaml"
    if packaged.is_file():
        return Path(str(packaged))
    names = packaged_config_names()
    near = difflib.get_close_matches(stem, names, n=1)
    hint = f"did you mean '{near[0]}'? " if near else ""
    raise ConfigError(
        f"config file '{path_or_name}' not found; {hint}give a YAML path or a packaged config name: {', '.join(names)}"
    )


def read_yaml(path: Path) -> dict:
    """Parse a YAML mapping; syntax errors name the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8 ({exc.reason}); save the file as UTF-8") from None
    try:
        data = yaml_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML: {exc.problem or exc}; fix the file's syntax") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections (model:, train:, ...), got {type(data).__name__}")
    return data


def parse_override(text: str) -> tuple[str, Any]:
    """`a.b=value` -> ("a.b", value parsed as a YAML scalar or list)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"override '{text}' is not of the form dotted.key=value (e.g. train.lr=1e-6)")
    try:
        value = yaml_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw  # an unparsable value stays a string; the schema then says what it expected
    return key, value


def load_config(
    path_or_name: str | Path | None = None,
    overrides: Sequence[str] = (),
    *,
    validate_algorithm: bool = True,
) -> Config:
    """THE config loader: YAML file (or packaged name) + dotted overrides -> validated `Config` with `derived`."""
    path = resolve_config_path(None if path_or_name is None else str(path_or_name))
    raw = read_yaml(path)
    parsed = [parse_override(text) for text in overrides]
    _follow_algorithm_name(raw, parsed)
    for key, value in parsed:
        set_dotted(raw, key, value)
    return config_from_dict(raw, source=str(path), validate_algorithm=validate_algorithm)


_ALGORITHM_STRUCTURE = ("advantage_estimator", "policy_loss", "penalties")


def _follow_algorithm_name(raw: dict, overrides: Sequence[tuple[str, Any]]) -> None:
    """`algorithm.name=X` on the command line means algorithm X as registered: the file's estimator, base loss and
    penalties (e.g. the demo's `penalties: [sapo, llds]`, or a saved run's resolved section) give way to X's
    defaults, unless the same command line sets them too. So `searchrl compare` and `searchrl train
    algorithm.name=grpo` on any config compare or train the named algorithms."""
    keys = {key for key, _ in overrides}
    new_name = next((value for key, value in overrides if key == "algorithm.name"), None)
    section = raw.get("algorithm")
    if new_name is None or not isinstance(section, dict):
        return
    for field_name in _ALGORITHM_STRUCTURE:
        if f"algorithm.{field_name}" not in keys:
            section.pop(field_name, None)


def config_from_dict(raw: Mapping[str, Any], *, source: str = "", validate_algorithm: bool = True) -> Config:
    """Validate a nested dict (e.g. a run folder's saved config.yaml) into a `Config`."""
    cfg = build(Config, raw)
    if validate_algorithm:
        cfg = dataclasses.replace(cfg, algorithm=resolve_algorithm(cfg.algorithm))
    _check_consistency(cfg)
    object.__setattr__(cfg, "derived", _derive(cfg))
    object.__setattr__(cfg, "source", source)
    return cfg


def resolve_algorithm(section_dict: Mapping[str, Any]) -> dict:
    """Validate the `algorithm:` section through the registry; returns its resolved, all-explicit form."""
    from searchrl.algorithms import build_objective

    try:
        objective = build_objective(dict(section_dict))
    except (ValueError, KeyError, TypeError) as exc:
        message = str(exc).strip("'\"")
        if not message.startswith("algorithm"):
            message = f"algorithm: {message}"
        raise ConfigError(message) from None
    resolved = getattr(objective, "resolved", None)
    return dict(resolved) if isinstance(resolved, Mapping) else dict(section_dict)


def build_objective_from(cfg: Config) -> Any:
    """The `Objective` for a loaded config (the section was validated at load)."""
    from searchrl.algorithms import build_objective

    return build_objective(dict(cfg.algorithm))


# The built-in estimators whose baseline is the mean reward of the question's group of rollouts.
_GROUP_BASELINE_ESTIMATORS = ("grpo", "dr_grpo", "calibadv")


def _check_consistency(cfg: Config) -> None:
    from searchrl.models import check_device_spec

    t = cfg.train
    check_device_spec(t.device, "train.device")  # the form only: the GPU itself is looked for when a run starts
    if cfg.model.dtype != "float32" and not cfg.model.lora.enabled:
        raise ConfigError(
            f"model.dtype: {cfg.model.dtype} weights need model.lora.enabled=true (only a frozen base may be stored "
            "in bf16: AdamW's updates at RL learning rates are below bf16's resolution and would be lost); for bf16 "
            "compute over float32 weights use train.bf16"
        )
    estimator = cfg.algorithm.get("advantage_estimator")
    if t.group_size < 2 and estimator in _GROUP_BASELINE_ESTIMATORS:
        raise ConfigError(
            f"train.group_size: 1 rollout per question leaves the {estimator} advantages of algorithm "
            f"'{cfg.algorithm.get('name')}' without a group baseline (each advantage is the raw reward); "
            "set train.group_size to 2 or more (Search-R1 uses 5)"
        )
    per_step = t.batch_size * t.group_size
    if t.mini_batch_size > per_step or per_step % t.mini_batch_size:
        raise ConfigError(
            f"train.mini_batch_size ({t.mini_batch_size}) must divide train.batch_size*train.group_size "
            f"({t.batch_size}*{t.group_size}={per_step}); allowed values: {', '.join(map(str, _divisors(per_step)))}"
        )
    if t.micro_batch_size > t.mini_batch_size or t.mini_batch_size % t.micro_batch_size:
        raise ConfigError(
            f"train.micro_batch_size ({t.micro_batch_size}) must divide train.mini_batch_size ({t.mini_batch_size}); "
            f"allowed values: {', '.join(map(str, _divisors(t.mini_batch_size)))}"
        )
    s = cfg.sft
    if s.micro_batch_size > s.batch_size or s.batch_size % s.micro_batch_size:
        raise ConfigError(
            f"sft.micro_batch_size ({s.micro_batch_size}) must divide sft.batch_size ({s.batch_size}); "
            f"allowed values: {', '.join(map(str, _divisors(s.batch_size)))}"
        )
    if t.warm_start is not None and t.warm_start != "sft" and not Path(t.warm_start).expanduser().exists():
        raise ConfigError(f"train.warm_start: '{t.warm_start}' is neither 'sft' nor an existing model folder")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _derive(cfg: Config) -> Derived:
    t = cfg.train
    per_step = t.batch_size * t.group_size
    updates_per_epoch = per_step // t.mini_batch_size
    return Derived(
        trajectories_per_step=per_step,
        updates_per_epoch=updates_per_epoch,
        updates_per_step=updates_per_epoch * t.ppo_epochs,
        grad_accum_steps=t.mini_batch_size // t.micro_batch_size,
        warmup_steps=int(round(t.warmup_ratio * t.steps)),
        total_updates=updates_per_epoch * t.ppo_epochs * t.steps,
    )


def save_config(cfg: Config, path: Path) -> None:
    """Write the resolved config as YAML, atomically (it reloads with `load_config(path)`)."""
    from searchrl.training.checkpoint import atomic_write_text

    header = f"# Resolved searchrl config (from {cfg.source or 'defaults'}). Reload: searchrl train --config {path}\n"
    atomic_write_text(path, header + yaml.safe_dump(to_dict(cfg), sort_keys=False, allow_unicode=True))


def show_config() -> str:
    """Every key with its type, default and help (the text of `searchrl train --show-config`)."""
    rows = describe(Config)
    width = max(len(r[0]) for r in rows)
    lines = []
    for key, tp, default, help_text in rows:
        lines.append(f"{key:<{width}}  {tp:<10} default {default}")
        lines.append(f"{'':<{width}}  {help_text}")
    return "\n".join(lines)
