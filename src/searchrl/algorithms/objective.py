"""The table of named algorithms and :func:`build_objective`, which turns the ``algorithm:`` config into an
:class:`Objective` — the one object the trainer and the verl plugin call for advantages and the loss.

Config shape (plain dict, e.g. from YAML)::

    algorithm:
      name: sapo                    # one of algorithm_names()
      # optional overrides of the algorithm's composition:
      advantage_estimator: grpo     # a registered estimator
      policy_loss: ppo_clip         # a registered base loss
      penalties: [sapo]             # registered penalties (composition: calibadv + [sapo] is valid)
      # optional loss-level settings (see ObjectiveSettings):
      kl_coef: 0.001
      kl_type: low_var_kl
      entropy_coef: 0.001
      loss_agg_mode: token-mean
      loss_norm_constant: null
      # optional knobs of each component in use, under its own name:
      sapo: {gamma: 0.1, tau: 1.0}
      ppo_clip: {clip_low: 0.2, clip_high: 0.2}

Every unknown key or bad value raises ValueError naming the dotted key (``algorithm.sapo.gamma``) and the
allowed names or values, derived from the registries and the params dataclasses.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from searchrl.algorithms.losses import (
    BASE_METRIC_KEYS,
    KL_KINDS,
    LossContext,
    PenaltyTerms,
    attach_gradient,
    dot,
    kl_terms,
)
from searchrl.algorithms.masks import AGGREGATION_MODES
from searchrl.algorithms.params import (
    ParamError,
    check_params,
    field_names,
    knob,
    params_from_mapping,
    params_to_dict,
)
from searchrl.algorithms.registry import (
    AdvantageBatch,
    AdvantageEstimatorEntry,
    PolicyBatch,
    PolicyLossEntry,
    TermOutput,
    advantage_estimator_names,
    get_advantage_estimator,
    get_policy_loss,
    policy_loss_names,
)

_STRUCTURE_KEYS: tuple[str, ...] = ("name", "advantage_estimator", "policy_loss", "penalties")


@dataclass(frozen=True)
class ObjectiveSettings:
    """Loss-level settings shared by every algorithm; defaults are Search-R1's (reference §0)."""

    kl_coef: float = knob(0.001, help="β: weight of the KL-to-reference term (0 = no reference model)", ge=0.0)
    kl_type: str = knob("low_var_kl", help="per-token KL estimator", choices=KL_KINDS)
    entropy_coef: float = knob(0.001, help="weight of the entropy bonus (subtracted from the loss)", ge=0.0)
    loss_agg_mode: str = knob("token-mean", help="how per-token losses are averaged", choices=AGGREGATION_MODES)
    loss_norm_constant: float | None = knob(
        None, help="Dr.GRPO constant C for seq-mean-token-sum-norm (null = padded width T)", gt=0.0
    )

    def __post_init__(self) -> None:
        check_params(self)


@dataclass(frozen=True)
class AlgorithmSpec:
    """One row of the algorithm table: a composition plus the paper's algorithm-level defaults."""

    advantage_estimator: str
    policy_loss: str
    penalties: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    summary: str = ""


_ALGORITHMS: dict[str, AlgorithmSpec] = {
    "grpo": AlgorithmSpec(
        "grpo", "ppo_clip", summary="GRPO as in Search-R1: group z-score advantages, PPO clip 0.2, token-mean"
    ),
    "dr_grpo": AlgorithmSpec(
        "dr_grpo",
        "ppo_clip",
        settings={"loss_agg_mode": "seq-mean-token-sum-norm"},
        summary="Dr.GRPO (arXiv 2503.20783 §3.2): no std normalisation, token sums over a constant",
    ),
    "dapo": AlgorithmSpec(
        "grpo",
        "ppo_clip",
        settings={"loss_agg_mode": "token-mean", "kl_coef": 0.0},
        params={"ppo_clip": {"clip_low": 0.2, "clip_high": 0.28}},
        summary="DAPO (arXiv 2503.14476): clip-higher 0.2/0.28, token-mean, no KL term (§2.3)",
    ),
    "gspo": AlgorithmSpec(
        "grpo",
        "gspo",
        settings={"loss_agg_mode": "seq-mean-token-mean"},
        summary="GSPO (arXiv 2507.18071): sequence-level ratio clipped at 3e-4/4e-4, seq-mean-token-mean",
    ),
    "sapo": AlgorithmSpec(
        "grpo",
        "ppo_clip",
        ("sapo",),
        params={"sapo": {"gamma": 0.1, "tau": 1.0}},
        summary="SAPO (Search Agent PO, arXiv 2603.10069): GRPO + γ·conditional KL on r ≤ τ, A ≥ 0",
    ),
    "llds": AlgorithmSpec(
        "grpo",
        "ppo_clip",
        ("llds",),
        params={"llds": {"lam": 0.2, "gate": "action"}},
        summary="LLDS (arXiv 2512.04220): GRPO + λ·likelihood-decrease penalty, action gate",
    ),
    "calibadv": AlgorithmSpec(
        "calibadv",
        "ppo_clip",
        settings={"kl_coef": 0.0, "entropy_coef": 0.0},
        params={"calibadv": {"rebalance_ratio": 1.0}},
        summary="CalibAdv (arXiv 2604.18235): soft-penalised search turns, rebalanced answer turns; no KL",
    ),
    "calibadv_sapo": AlgorithmSpec(
        "calibadv",
        "ppo_clip",
        ("sapo",),
        settings={"kl_coef": 0.0, "entropy_coef": 0.0},
        params={"calibadv": {"rebalance_ratio": 1.0}, "sapo": {"gamma": 0.1, "tau": 1.0}},
        summary="CalibAdv's advantages + SAPO's penalty: the two compose (a named arm for `searchrl compare`)",
    ),
}


def algorithm_names() -> list[str]:
    """The named algorithms of the table, sorted."""
    return sorted(_ALGORITHMS)


def register_algorithm(
    name: str,
    *,
    advantage_estimator: str,
    policy_loss: str,
    penalties: Sequence[str] = (),
    settings: Mapping[str, Any] | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    summary: str = "",
) -> None:
    """Add a named algorithm (a composition of registered components); validated like a config."""
    if name in _ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is already defined; defined: {algorithm_names()}")
    spec = AlgorithmSpec(
        advantage_estimator, policy_loss, tuple(penalties), dict(settings or {}), dict(params or {}), summary
    )
    _ALGORITHMS[name] = spec
    try:
        build_objective({"name": name})
    except ValueError:
        del _ALGORITHMS[name]
        raise


def default_algorithm_config(name: str) -> dict[str, Any]:
    """The fully resolved ``algorithm:`` section of a named algorithm, every default written out."""
    return build_objective({"name": name}).resolved


def metric_keys() -> list[str]:
    """The fixed key set of :meth:`Objective.loss` metrics (depends only on the registered penalties)."""
    keys = ["loss", "pg_loss", "penalty"]
    for name in policy_loss_names("penalty"):
        keys += [f"penalty/{name}", f"penalty/{name}_active"]
    return keys + ["kl_ref", "entropy", *BASE_METRIC_KEYS]


@dataclass(frozen=True)
class Objective:
    """A resolved algorithm: computes advantages and the total loss; built by :func:`build_objective`.

    loss = base + Σ_p coef_p·penalty_p + kl_coef·agg(KL(π_θ‖π_ref)) − entropy_coef·agg(H)
    """

    name: str
    estimator: AdvantageEstimatorEntry
    estimator_params: Any
    policy_loss: PolicyLossEntry
    policy_loss_params: Any
    penalties: tuple[tuple[PolicyLossEntry, Any], ...]
    settings: ObjectiveSettings

    # -- what the caller must provide ------------------------------------------------------------------------

    @property
    def requirements(self) -> frozenset[str]:
        """The optional batch inputs this objective needs, among ``REQUIREMENTS``."""
        needs = set(self.estimator.requires(self.estimator_params))
        needs |= self.policy_loss.requires(self.policy_loss_params)
        for entry, params in self.penalties:
            needs |= entry.requires(params)
        if self.settings.kl_coef > 0:
            needs.add("ref_log_probs")
        if self.settings.entropy_coef > 0:
            needs.add("entropy")
        return frozenset(needs)

    @property
    def needs_ref(self) -> bool:
        """True when ref_log_probs must be given (KL coefficient > 0)."""
        return "ref_log_probs" in self.requirements

    @property
    def needs_entropy(self) -> bool:
        """True when the per-token entropy (with gradient) must be given (entropy coefficient > 0)."""
        return "entropy" in self.requirements

    @property
    def needs_turn_scores(self) -> bool:
        """True when AdvantageBatch.turn_scores must be given (the CalibAdv estimator)."""
        return "turn_scores" in self.requirements

    @property
    def needs_answer_mask(self) -> bool:
        """True when PolicyBatch.answer_mask must be given (LLDS-MA with answer_weight ≠ 1)."""
        return "answer_mask" in self.requirements

    @property
    def resolved(self) -> dict[str, Any]:
        """The full configuration with every default, loadable again by :func:`build_objective`."""
        out: dict[str, Any] = {
            "name": self.name,
            "advantage_estimator": self.estimator.name,
            "policy_loss": self.policy_loss.name,
            "penalties": [entry.name for entry, _ in self.penalties],
        }
        out.update(params_to_dict(self.settings))
        out[self.estimator.name] = params_to_dict(self.estimator_params)
        out[self.policy_loss.name] = params_to_dict(self.policy_loss_params)
        for entry, params in self.penalties:
            out[entry.name] = params_to_dict(params)
        return copy.deepcopy(out)

    # -- computation -----------------------------------------------------------------------------------------

    def advantages(self, batch: AdvantageBatch) -> Tensor:
        """Per-token advantages (B, T), zero outside the response mask."""
        if self.needs_turn_scores and batch.turn_scores is None:
            raise ValueError(
                f"algorithm {self.name!r} (advantage estimator {self.estimator.name!r}) needs "
                "AdvantageBatch.turn_scores; compute them with silver_turn_scores per group"
            )
        adv = self.estimator.fn(batch, self.estimator_params)
        if adv.shape != batch.response_mask.shape:
            raise ValueError(
                f"advantage estimator {self.estimator.name!r} returned shape {tuple(adv.shape)}; "
                f"expected {tuple(batch.response_mask.shape)}"
            )
        return adv

    def _check_policy_batch(self, batch: PolicyBatch) -> None:
        why = {
            "ref_log_probs": f"kl_coef = {self.settings.kl_coef} > 0; give the reference model's log-probs or set "
            "algorithm.kl_coef: 0",
            "entropy": f"entropy_coef = {self.settings.entropy_coef} > 0; give the per-token entropy or set "
            "algorithm.entropy_coef: 0",
            "answer_mask": "LLDS-MA (answer_weight ≠ 1) weights the answer span; give PolicyBatch.answer_mask",
        }
        for need in ("ref_log_probs", "entropy", "answer_mask"):
            if need in self.requirements and getattr(batch, need) is None:
                raise ValueError(f"algorithm {self.name!r} needs PolicyBatch.{need}: {why[need]}")

    def penalty_terms(self, batch: PolicyBatch) -> list[tuple[str, float, PenaltyTerms, tuple[str, str]]]:
        """Each penalty as (name, coefficient, per-token :class:`PenaltyTerms`, (aggregation mode, mask)), for
        callers that aggregate the penalties themselves (the verl plugin): ``aggregate_penalty(terms, mask, *agg)``
        is the value :meth:`loss` adds for it. Only the penalties' own inputs are required (the KL and entropy
        terms are the caller's business here)."""
        ctx = LossContext(batch.log_probs, batch.old_log_probs, batch.advantages, batch.response_mask)
        out = []
        for entry, params in self.penalties:
            if "answer_mask" in entry.requires(params) and batch.answer_mask is None:
                raise ValueError(f"penalty {entry.name!r} needs PolicyBatch.answer_mask (LLDS-MA, answer_weight ≠ 1)")
            if entry.per_token is None:
                raise ValueError(f"penalty {entry.name!r} was registered without a per-token form (per_token=...)")
            # a user-registered penalty's params may say how it aggregates (``aggregation``); else token-mean
            aggregation = getattr(params, "aggregation", ("token-mean", "response"))
            out.append((entry.name, float(params.coef), entry.per_token(batch, params, ctx), aggregation))
        return out

    def loss(self, batch: PolicyBatch) -> tuple[Tensor, dict[str, Tensor]]:
        """Total loss (scalar, with graph) and detached scalar metrics with the fixed key set of
        :func:`metric_keys` (NaN where not applicable).

        Metrics: ``loss`` (total), ``pg_loss`` (base loss), ``penalty`` (Σ coef·penalty), ``penalty/<name>``
        (the unweighted term) and ``penalty/<name>_active`` (share of masked tokens it acts on) for every
        registered penalty, ``kl_ref`` (aggregated KL to the reference, when ref_log_probs is given),
        ``entropy`` (aggregated entropy, when given), and the base loss's ``clip_frac``, ``clip_frac_low``,
        ``clip_frac_high``, ``ppo_kl``, ``is_ratio_mean``, ``is_ratio_min``, ``is_ratio_max``.

        Fused path: one :class:`LossContext` is shared by every term (log-ratio, ratio, masks and turn layout
        are computed once), and the terms that supply ∂loss/∂log_probs (all built-ins) are summed into a single
        (B, T) gradient attached to autograd once; the entropy term keeps its own graph from the logits.
        """
        self._check_policy_batch(batch)
        s = self.settings
        log_probs = batch.log_probs
        ctx = LossContext(
            log_probs,
            batch.old_log_probs,
            batch.advantages,
            batch.response_mask,
            loss_agg_mode=s.loss_agg_mode,
            norm_constant=s.loss_norm_constant,
        )
        nan = torch.full((), float("nan"), dtype=ctx.dtype, device=log_probs.device)
        metrics: dict[str, Tensor] = dict.fromkeys(metric_keys(), nan)
        # Fused path: terms that supply ∂loss/∂log_probs are summed into one (B, T) gradient and one value,
        # attached to autograd once; terms with their own graph are added as they are.
        fused_value = torch.zeros((), dtype=ctx.dtype, device=log_probs.device)
        fused_grad: Tensor | None = None
        graph_part: Tensor | None = None

        def add(term: TermOutput, coef: float) -> None:
            nonlocal fused_value, fused_grad, graph_part
            if term.grad is None or not ctx.needs_grad:
                part = coef * term.loss
                graph_part = part if graph_part is None else graph_part + part
                return
            fused_value = fused_value + coef * term.loss.detach()
            factor = coef if term.grad_scale is None else term.grad_scale * coef
            if fused_grad is None:
                if not term.owns_grad:
                    fused_grad = term.grad * factor
                else:  # take the fresh tensor over instead of copying it
                    fused_grad = term.grad if (term.grad_scale is None and coef == 1.0) else term.grad.mul_(factor)
            elif term.grad_scale is None:
                fused_grad.add_(term.grad, alpha=coef)
            else:
                fused_grad.addcmul_(term.grad, term.grad_scale, value=coef)

        base = self.policy_loss.fn(batch, self.policy_loss_params, ctx)
        add(base, 1.0)
        metrics["pg_loss"] = base.loss.detach()
        for key in BASE_METRIC_KEYS:
            if key in base.metrics:
                metrics[key] = base.metrics[key].detach()

        penalty_sum = torch.zeros((), dtype=ctx.dtype, device=log_probs.device)
        for entry, params in self.penalties:
            out = entry.fn(batch, params, ctx)
            add(out, params.coef)
            penalty_sum = penalty_sum + params.coef * out.loss.detach()
            metrics[f"penalty/{entry.name}"] = out.loss.detach()
            if "active" in out.metrics:
                metrics[f"penalty/{entry.name}_active"] = out.metrics["active"].detach()
        metrics["penalty"] = penalty_sum

        if batch.ref_log_probs is not None:
            use_kl = s.kl_coef > 0 and ctx.needs_grad
            values, derivative = kl_terms(log_probs, batch.ref_log_probs, s.kl_type, with_derivative=use_kl)
            kl_value = dot(values, ctx.weights)
            metrics["kl_ref"] = kl_value
            if s.kl_coef > 0:
                grad = None if derivative is None else derivative.mul_(ctx.weights)
                add(TermOutput(kl_value, grad=grad, owns_grad=True), s.kl_coef)
        if batch.entropy is not None:
            with torch.set_grad_enabled(torch.is_grad_enabled() and s.entropy_coef > 0):
                entropy = dot(batch.entropy, ctx.weights.to(batch.entropy.dtype))  # graph from the logits
            if s.entropy_coef > 0:
                add(TermOutput(entropy), -s.entropy_coef)
            metrics["entropy"] = entropy.detach()

        total = attach_gradient(log_probs, fused_value, fused_grad) if fused_grad is not None else fused_value
        if graph_part is not None:
            total = total + graph_part
        metrics["loss"] = total.detach()
        return total, metrics


# ---------------------------------------------------------------------------------------------- building


def _fail(key: str, reason: str) -> ValueError:
    return ValueError(f"algorithm.{key}: {reason}")


def _component_name(value: Any, key: str, known: list[str], kind: str) -> str:
    if not isinstance(value, str) or value not in known:
        raise _fail(key, f"got {value!r}; expected one of the registered {kind}: {known}")
    return value


def build_objective(cfg: Mapping[str, Any]) -> Objective:
    """Validate the plain-dict ``algorithm:`` config and resolve it into an :class:`Objective`.

    Resolution order: ObjectiveSettings defaults ← the algorithm table's row for ``name`` ← ``cfg``. A
    component's knobs come from its params dataclass defaults ← the table row ← ``cfg[<component name>]``.
    Raises ValueError naming the dotted key (``algorithm.<key>[.<field>]``) and the allowed names or values.
    """
    if not isinstance(cfg, Mapping):
        raise ValueError(f"algorithm: expected a mapping with at least `name` (one of {algorithm_names()}), "
                         f"got {type(cfg).__name__}")
    if "name" not in cfg:
        raise _fail("name", f"missing; set it to one of {algorithm_names()}")
    name = cfg["name"]
    if not isinstance(name, str) or name not in _ALGORITHMS:
        raise _fail("name", f"got {name!r}; expected one of {algorithm_names()}")
    spec = _ALGORITHMS[name]

    setting_keys = field_names(ObjectiveSettings)
    component_keys = sorted({*policy_loss_names(), *advantage_estimator_names()})
    allowed = [*_STRUCTURE_KEYS, *setting_keys, *component_keys]
    for key in cfg:
        if key not in allowed:
            raise _fail(str(key), f"unknown key; allowed: {allowed}")

    estimator_name = _component_name(
        cfg.get("advantage_estimator", spec.advantage_estimator),
        "advantage_estimator",
        advantage_estimator_names(),
        "advantage estimators",
    )
    loss_name = _component_name(
        cfg.get("policy_loss", spec.policy_loss), "policy_loss", policy_loss_names("base"), "base losses"
    )
    raw_penalties = cfg.get("penalties", list(spec.penalties))
    if isinstance(raw_penalties, str) or not isinstance(raw_penalties, Sequence):
        raise _fail("penalties", f"got {raw_penalties!r}; expected a list of {policy_loss_names('penalty')}")
    penalty_names: list[str] = []
    for i, item in enumerate(raw_penalties):
        _component_name(item, f"penalties[{i}]", policy_loss_names("penalty"), "penalties")
        if item in penalty_names:
            raise _fail(f"penalties[{i}]", f"{item!r} is listed twice")
        penalty_names.append(item)

    merged_settings = {**spec.settings, **{k: cfg[k] for k in setting_keys if k in cfg}}
    try:
        settings = ObjectiveSettings(**merged_settings)
    except ParamError as err:
        raise _fail(err.field, err.reason) from None

    in_use = [estimator_name, loss_name, *penalty_names]
    for key in component_keys:
        if key in cfg and key not in in_use:
            raise _fail(
                key,
                f"section for {key!r}, which this algorithm does not use (advantage_estimator={estimator_name!r}, "
                f"policy_loss={loss_name!r}, penalties={penalty_names}); remove it or add {key!r} to the composition",
            )

    def build_params(entry_name: str, params_cls: type) -> Any:
        user = cfg.get(entry_name, {})
        if user is None:
            user = {}
        if not isinstance(user, Mapping):
            raise _fail(entry_name, f"expected a mapping of {field_names(params_cls)}, got {user!r}")
        merged = {**spec.params.get(entry_name, {}), **user} if entry_name in spec.params else dict(user)
        try:
            return params_from_mapping(params_cls, merged)
        except ParamError as err:
            raise _fail(f"{entry_name}.{err.field}", err.reason) from None

    estimator = get_advantage_estimator(estimator_name)
    base = get_policy_loss(loss_name)
    penalties = tuple((get_policy_loss(n), build_params(n, get_policy_loss(n).params)) for n in penalty_names)
    return Objective(
        name=name,
        estimator=estimator,
        estimator_params=build_params(estimator_name, estimator.params),
        policy_loss=base,
        policy_loss_params=build_params(loss_name, base.params),
        penalties=penalties,
        settings=settings,
    )


def describe_algorithms() -> list[dict[str, Any]]:
    """One row per named algorithm: name, composition and summary (for CLI listings and docs)."""
    return [
        {
            "name": n,
            "advantage_estimator": s.advantage_estimator,
            "policy_loss": s.policy_loss,
            "penalties": list(s.penalties),
            "summary": s.summary,
        }
        for n, s in sorted(_ALGORITHMS.items())
    ]


__all__ = [
    "AlgorithmSpec",
    "Objective",
    "ObjectiveSettings",
    "algorithm_names",
    "build_objective",
    "default_algorithm_config",
    "describe_algorithms",
    "metric_keys",
    "register_algorithm",
]
