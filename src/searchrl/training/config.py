"""The training config: plain YAML plus dotted overrides, loaded by ONE function into a validated, frozen tree.

    cfg = load_config("demo", ["algorithm.name=grpo", "train.lr=2e-5"])

- Every section is declared, built and validated with `searchrl.settings` (as the sections other modules own:
  protocol, rollout, reward, monitor); every field has a help string (`searchrl train --show-config`).
- Unknown keys fail with the closest known key; bad values fail naming the dotted key and the allowed values.
- A bare name (`demo`, `sapo_qwen3b`) or a path that does not exist but whose file name is packaged
  (`configs/demo.yaml`) resolves to the file shipped in `searchrl/configs/`.
- Derived values (updates per rollout, gradient accumulation, ...) are computed once, here, into `cfg.derived`.
- The `algorithm:` section is handed as a plain dict to `searchrl.algorithms.build_objective`, which owns its
  validation. The saved config holds the resolved (all-explicit) dict.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.resources
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from searchrl.errors import ConfigError, SettingError
from searchrl.protocol import ProtocolConfig
from searchrl.rewards import RewardConfig
from searchrl.rollout.engine import RolloutConfig
from searchrl.settings import build, describe, setting, to_dict
from searchrl.analysis.monitor import MonitorConfig


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

    enabled: bool = setting(False, "train LoRA adapters instead of all weights")
    r: int = setting(16, "adapter rank", ge=1)
    alpha: float = setting(32.0, "adapter scaling numerator (scale = alpha / r)", ge=0)
    dropout: float = setting(0.0, "dropout on the adapter input", ge=0, le=1)
    target_modules: tuple[str, ...] = setting(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        "names of the linear layers that get adapters",
    )


@dataclass(frozen=True)
class ModelConfig:
    """The policy being trained."""

    name: str = setting(
        "default",
        "policy to train: 'default' (the embedded SmolLM2-135M-Instruct), an HF model folder, or a .gguf file",
    )
    gradient_checkpointing: bool = setting(
        True, "recompute activations in the backward pass (halves training memory at almost no cost on CPU)"
    )
    dtype: str = setting(
        "float32",
        "dtype of the loaded weights: float32 (master weights; bf16 compute is train.bf16's autocast); bfloat16, "
        "LoRA runs only (the frozen base in bf16 halves its memory; the adapters stay float32); float64 for "
        "exact-math checks (needs train.bf16=false; several times slower)",
        choices=("float32", "bfloat16", "float64"),
    )
    lora: LoraConfig = setting(factory=LoraConfig)


@dataclass(frozen=True)
class DataConfig:
    """Questions to train and validate on (specs as for `searchrl.data.load_source`)."""

    train: str = setting("world", "training source: 'world', 'world:SEED', a benchmark name or a questions file")
    train_split: str = setting("train", "split of the training source to sample from")
    val: tuple[str, ...] = setting((), "validation sources; empty: the training source (each at `val_split`)")
    val_split: str = setting(
        "dev", "split validated on during RL: every decision (checkpoints/best, the collapse monitor) uses it"
    )
    test_split: str | None = setting(
        "test", "split evaluated at the start and the end of RL only, for the reported gain, never for a decision "
        "(null: report on `val_split`)"
    )
    max_train_questions: int | None = setting(None, "use only the first N training questions (null: all)", ge=1)
    train_types: tuple[str, ...] = setting(
        (), "train only on questions whose metadata.type is one of these (the world's single-hop, bridge, "
        "comparison; HotpotQA's bridge, comparison): a curriculum; validation and test keep every type. Empty: all",
    )
    train_types_steps: int | None = setting(
        None, "RL steps that sample only data.train_types; the steps after them sample every type (a two-phase "
        "curriculum). null: data.train_types for every step", ge=1,
    )


@dataclass(frozen=True)
class RetrievalConfig:
    """The search engine the agent calls."""

    index: str | None = setting(
        None, "index folder or http(s):// URL; null: BM25 over the training source's corpus (built once, cached)"
    )
    cache: bool = setting(True, "memoise identical queries (GRPO groups repeat them)")


@dataclass(frozen=True)
class TrainConfig:
    """The RL loop: sizes, optimiser and fault handling."""

    steps: int = setting(100, "RL steps (one rollout batch each)", ge=0)
    time_budget_min: float | None = setting(
        None,
        "stop RL early, after a completed step, when the next step and the final evaluation would end later than "
        "this many minutes after the run started (the number of steps then depends on the machine); null: no limit",
        ge=0,
    )
    batch_size: int = setting(8, "questions sampled per step (B)", ge=1)
    group_size: int = setting(5, "rollouts per question (G); one GRPO group per question", ge=1)
    mini_batch_size: int = setting(
        8, "trajectories per optimiser update; B*G/mini_batch_size updates per rollout and epoch", ge=1
    )
    micro_batch_size: int = setting(4, "trajectories per forward/backward (gradient accumulation inside a mini-batch)", ge=1)
    ppo_epochs: int = setting(1, "passes over each rollout batch", ge=1)
    shuffle_mini_batches: bool = setting(True, "shuffle trajectories before splitting them into mini-batches")
    fast_forward: bool = setting(
        True,
        "compute the training forwards the fast way (training/forward.py): each distinct prompt and the shared "
        "instruction template once, the frozen lower blocks (train.train_layers) once per step, bf16 weight casts "
        "once per update, and the first update's forward as its rows' π_old; false: the plain padded forward only "
        "(the same values up to float rounding)",
    )
    keep_groups_together: bool = setting(
        True,
        "shuffle whole GRPO groups instead of single trajectories, so a question's G trajectories sit next to each "
        "other in the mini- and micro-batches (verl's and TRL's layout); each forward then computes their shared "
        "prompt once. false: shuffle single trajectories",
    )
    step_without_advantage: bool = setting(
        True,
        "an optimiser update on a mini-batch whose loss tokens all have zero advantage (every group in it "
        "all-equal): true steps on what the penalties (SAPO, LLDS) and the KL term give alone; false skips it, so "
        "every algorithm steps where plain GRPO (no KL term), whose gradient there is zero, would (the Adam-steps "
        "control of docs/experiments.md)",
    )
    lr: float = setting(1e-6, "AdamW learning rate", ge=0)
    weight_decay: float = setting(0.0, "AdamW weight decay", ge=0)
    adam_betas: tuple[float, float] = setting((0.9, 0.999), "AdamW betas")
    adam_eps: float = setting(1e-8, "AdamW epsilon", ge=0)
    warmup_ratio: float = setting(0.0, "fraction of the RL steps with linear warm-up (verl `lr_warmup_steps_ratio`)", ge=0, le=1)
    lr_schedule: str = setting("constant", "learning-rate schedule after warm-up", choices=("constant", "cosine", "linear"))
    max_grad_norm: float = setting(1.0, "clip the global gradient norm to this (0: no clipping)", ge=0)
    device: str = setting(
        "auto",
        "where the policy, reference, batches, KV cache and losses live: auto (the first CUDA GPU when torch sees "
        "one, else the CPU), cpu, cuda or cuda:N; an explicit cuda without a GPU is an error, not a CPU run",
    )
    bf16: bool | Literal["auto"] = setting(
        "auto",
        "bf16 autocast over fp32 master weights; 'auto': on where bf16 is native on train.device (a CUDA GPU with "
        "bf16, CPUs with avx512_bf16 or AMX: about 1.7x faster), off elsewhere (an AVX2-only CPU computes bf16 about "
        "8x slower than fp32)",
    )
    logprob_chunk_size: int = setting(256, "positions per chunk when computing token log-probs (bounds the logits' memory)", ge=1)
    train_layers: int | None = setting(
        None,
        "RL updates only the top N transformer blocks (and the final norm; an untied LM head too); the embeddings and "
        "the blocks below stay frozen, so the backward pass stops N blocks from the top. null: train everything",
        ge=1,
    )
    warm_start: str | None = setting(
        None, "before RL: null (none), 'sft' (run `searchrl sft` with the `sft:` section first) or a model folder"
    )
    nonfinite_rollback_after: int = setting(
        3, "consecutive skipped (non-finite) updates before rolling back to the last checkpoint", ge=1
    )
    nonfinite_max_rollbacks: int = setting(2, "non-finite rollbacks before the run stops (checkpoints intact)", ge=0)
    nonfinite_lr_factor: float = setting(0.5, "multiply the learning rate by this after a non-finite rollback", ge=0, le=1)


@dataclass(frozen=True)
class SFTConfig:
    """Supervised warm start on oracle or collected trajectories (loss on model tokens only)."""

    data: str = setting("oracle", "'oracle': the training source's oracle trajectories; or a samples.jsonl of trajectories")
    min_reward: float | None = setting(None, "keep only trajectories with reward >= this (rejection-sampling fine-tuning)")
    oracle_think: bool = setting(True, "keep the oracle's <think>…</think> texts (false: actions only, ~3x fewer tokens)")
    epochs: float = setting(2.0, "passes over the SFT data (fractions allowed)", ge=0)
    batch_size: int = setting(16, "trajectories per optimiser update", ge=1)
    micro_batch_size: int = setting(8, "trajectories per forward/backward", ge=1)
    lr: float = setting(5e-5, "AdamW learning rate (cosine decay after warm-up)", ge=0)
    train_layers: int | None = setting(
        None, "fine-tune only the top N transformer blocks, as train.train_layers (null: everything)", ge=1
    )
    warmup_ratio: float = setting(0.1, "fraction of the updates with linear warm-up", ge=0, le=1)
    max_examples: int | None = setting(
        None, "train on at most this many trajectories (null: all but the hold-out); the hold-out is drawn first", ge=1
    )
    holdout: int = setting(
        64, "trajectories held out, apart from the training examples, to report the validation loss (data with no "
        "more trajectories than this hold out a fifth; the summary records how many)", ge=0
    )


@dataclass(frozen=True)
class ValConfig:
    """Greedy validation with the evaluation harness."""

    every: int = setting(10, "validate every N RL steps (0: only before and after training)", ge=0)
    at_start: bool = setting(True, "validate the starting point of RL (after any warm start)")
    untrained: bool = setting(False, "also evaluate the model as loaded, before any warm start (on the test split)")
    max_questions: int | None = setting(200, "validate on at most this many questions per source (null: all)", ge=1)
    test_max_questions: int | None = setting(
        None, "evaluate at most this many test-split questions per source at the start and end (null: all)", ge=1
    )
    untrained_max_questions: int | None = setting(
        None, "evaluate the untrained model on at most this many test-split questions (null: as the test)", ge=1
    )
    batch_size: int = setting(64, "questions per greedy generation batch", ge=1)
    sample_seed: int = setting(
        0, "seed of the evaluation's question sample (when max_questions is below the split's size): independent "
        "of the run's seed, so every seed and algorithm that shares a config is scored on the same questions",
    )


@dataclass(frozen=True)
class CheckpointConfig:
    """Checkpoints: weights (safetensors), optimiser, scheduler, RNG states and the data cursor."""

    every: int = setting(10, "save every N RL steps (0: only at the end and on Ctrl-C)", ge=0)
    keep_last: int = setting(2, "keep the last K checkpoints", ge=1)
    keep_best: bool = setting(True, "also keep the checkpoint with the best validation EM")
    export_final: bool = setting(True, "write start_model/ (the start of RL) and final_model/ (the end): HF folders `searchrl eval` loads, with the protocol they were trained with")


@dataclass(frozen=True)
class LogConfig:
    """Where metrics go."""

    tensorboard: bool = setting(True, "write TensorBoard event files under tb/")
    wandb: bool = setting(False, "log to Weights & Biases (needs `pip install wandb`)")
    wandb_project: str = setting("searchrl", "wandb project name")
    samples_every: int = setting(5, "save decoded trajectories to samples/step_XXXX.jsonl every N steps (0: never)", ge=0)
    console: bool = setting(True, "rich progress bar and a one-line summary per step")
    probe_trajectories: int = setting(
        0, "LLD on a fixed set: this many oracle trajectories of validation-split questions, the same every step, "
        "whose mean token log-likelihood under the policy after each step is logged as diag/probe_ll (0: off, NaN)",
        ge=0,
    )


@dataclass(frozen=True)
class RunConfig:
    """The run folder."""

    dir: str | None = setting(None, "run folder; null: runs/<name>-<algorithm>-<seed>")
    name: str = setting("run", "run name (used in the default folder name)")
    overwrite: bool = setting(
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

    seed: int = setting(0, "seed of the data order, sampling, initialisation of adapters and mini-batch shuffles")
    model: ModelConfig = setting(factory=ModelConfig)
    data: DataConfig = setting(factory=DataConfig)
    retrieval: RetrievalConfig = setting(factory=RetrievalConfig)
    protocol: ProtocolConfig = setting(factory=ProtocolConfig)
    rollout: RolloutConfig = setting(factory=RolloutConfig)
    reward: RewardConfig = setting(factory=RewardConfig)
    algorithm: dict = setting(
        factory=lambda: {"name": "sapo"},
        help="`name` (see `searchrl.algorithms.algorithm_names()`) and that algorithm's hyperparameters",
    )
    train: TrainConfig = setting(factory=TrainConfig)
    sft: SFTConfig = setting(factory=SFTConfig)
    val: ValConfig = setting(factory=ValConfig)
    checkpoint: CheckpointConfig = setting(factory=CheckpointConfig)
    log: LogConfig = setting(factory=LogConfig)
    monitor: MonitorConfig = setting(factory=MonitorConfig)
    run: RunConfig = setting(factory=RunConfig)
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
    """Parse YAML with `_Loader`, refusing a key given twice and runaway alias expansion (`fileio.load_yaml`)."""
    from searchrl.fileio import load_yaml

    return load_yaml(text, _Loader)


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
    from searchrl.fileio import yaml_input_error

    try:
        data = yaml_load(text)
    except yaml_input_error() as exc:  # parses, but refused: a key given twice, an alias bomb
        raise ConfigError(f"{path}:{exc.problem_mark.line + 1}: {exc.problem}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nests too deeply to read; flatten the file") from None
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
    from searchrl.fileio import yaml_input_error

    try:
        value = yaml_load(raw) if raw.strip() else None
    except yaml_input_error() as exc:
        raise ConfigError(f"override '{text}': {exc.problem}") from None
    except (yaml.YAMLError, RecursionError):
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


# Keys that earlier versions wrote into every run's config.yaml and that no longer exist: dropped on load when
# they hold their old default, so runs saved before their removal still resume; any other value is an error.
RETIRED_KEYS: dict[tuple[str, str], object] = {("train", "debug_inject_nan_step"): None}


def _drop_retired(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    out = dict(raw)
    for (section, key), default in RETIRED_KEYS.items():
        values = out.get(section)
        if isinstance(values, Mapping) and key in values and values[key] == default:
            out[section] = {k: v for k, v in values.items() if k != key}
    return out


def config_from_dict(raw: Mapping[str, Any], *, source: str = "", validate_algorithm: bool = True) -> Config:
    """Validate a nested dict (e.g. a run folder's saved config.yaml) into a `Config`."""
    try:
        cfg = build(Config, _drop_retired(raw))
    except SettingError as err:
        if err.reason.startswith("unknown key"):  # the whole tree is one command away
            hint = f"{err.reason} (`searchrl train --show-config` lists every key)"
            raise SettingError(err.key, hint, err.where) from None
        raise
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
    except ConfigError:
        raise
    except (ValueError, KeyError, TypeError) as exc:  # e.g. a user-registered component's own check
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


def _group_baseline(estimator: object) -> bool:
    """Whether the advantage estimator's baseline is its group's mean reward (the registry says, per estimator)."""
    from searchrl.algorithms import UnknownNameError, get_advantage_estimator

    try:
        return get_advantage_estimator(estimator).group_baseline
    except UnknownNameError:  # validated with the algorithm section (an unvalidated load may hold any name)
        return False


def _check_consistency(cfg: Config) -> None:
    from searchrl.models import check_device_spec

    t = cfg.train
    check_device_spec(t.device, "train.device")  # the form only: the GPU itself is looked for when a run starts
    if cfg.model.dtype == "float64" and (t.bf16 is not False or cfg.rollout.bf16):
        raise ConfigError("model.dtype: float64 computes in float64 throughout; set train.bf16=false (and leave "
                          "rollout.bf16 null or false)")
    if cfg.model.dtype == "bfloat16" and not cfg.model.lora.enabled:
        raise ConfigError(
            f"model.dtype: {cfg.model.dtype} weights need model.lora.enabled=true (only a frozen base may be stored "
            "in bf16: AdamW's updates at RL learning rates are below bf16's resolution and would be lost); for bf16 "
            "compute over float32 weights use train.bf16"
        )
    estimator = cfg.algorithm.get("advantage_estimator")
    if t.group_size < 2 and _group_baseline(estimator):
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
    if cfg.data.train_types_steps is not None and not cfg.data.train_types:
        raise ConfigError(f"data.train_types_steps: {cfg.data.train_types_steps} steps of a curriculum needs the "
                          "types those steps sample: set data.train_types (e.g. [bridge]) or leave it null")
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
    from searchrl.fileio import atomic_write_text

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
