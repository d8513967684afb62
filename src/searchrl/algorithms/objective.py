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

Every unknown key or bad value raises :class:`~searchrl.errors.SettingError` (a ValueError) naming the dotted key
(``algorithm.sapo.gamma``) and the allowed names or values, derived from the registries and the params dataclasses
(declared with :func:`searchrl.settings.setting`, built with :func:`searchrl.settings.build`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from torch import Tensor

from searchrl.algorithms.losses import BASE_METRIC_KEYS, KL_KINDS, compute_dtype, kl_penalty
from searchrl.algorithms.masks import AGGREGATION_MODES, aggregate
from searchrl.algorithms.registry import (
    AdvantageEstimatorEntry,
    PolicyLossEntry,
    advantage_estimator_names,
    get_advantage_estimator,
    get_policy_loss,
    policy_loss_names,
)
from searchrl.algorithms.types import AdvantageBatch, PolicyBatch, Term
from searchrl.settings import SettingError, build, check, known_keys, setting, to_dict, unknown_key

_STRUCTURE_KEYS: tuple[str, ...] = ("name", "advantage_estimator", "policy_loss", "penalties")


@dataclass(frozen=True)
class ObjectiveSettings:
    """Loss-level settings shared by every algorithm; defaults are Search-R1's (reference §0)."""

    kl_coef: float = setting(0.001, help="β: weight of the KL-to-reference term (0 = no reference model)", ge=0.0)
    kl_type: str = setting("low_var_kl", help="per-token KL estimator", choices=KL_KINDS)
    entropy_coef: float = setting(0.001, help="weight of the entropy bonus (subtracted from the loss)", ge=0.0)
    loss_agg_mode: str = setting("token-mean", help="how per-token losses are averaged", choices=AGGREGATION_MODES)
    loss_norm_constant: float | None = setting(
        None, help="Dr.GRPO constant C for seq-mean-token-sum-norm (null = padded width T)", gt=0.0
    )

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class AlgorithmSpec:
    """One row of the algorithm table: a composition, plus what the algorithm sets differently from the defaults
    (loss-level ``settings``, and component ``params`` only where they differ from the defaults each component
    declares beside its function: a default is written once, there)."""

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
        settings={"kl_coef": 0.0},
        params={"ppo_clip": {"clip_high": 0.28}},
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
        summary="SAPO (Search Agent PO, arXiv 2603.10069): GRPO + γ·conditional KL on r ≤ τ, A ≥ 0",
    ),
    "sapo_strict": AlgorithmSpec(
        "grpo",
        "ppo_clip",
        ("sapo",),
        params={"sapo": {"strict_positive": True}},
        summary="SAPO with the paper's condition A > 0 (Eq. 9) instead of the official code's A ≥ 0",
    ),
    "llds": AlgorithmSpec(
        "grpo",
        "ppo_clip",
        ("llds",),
        summary="LLDS (arXiv 2512.04220): GRPO + λ·likelihood-decrease penalty, action gate",
    ),
    "calibadv": AlgorithmSpec(
        "calibadv",
        "ppo_clip",
        settings={"kl_coef": 0.0, "entropy_coef": 0.0},
        summary="CalibAdv (arXiv 2604.18235): soft-penalised search turns, rebalanced answer turns; no KL",
    ),
    "calibadv_sapo": AlgorithmSpec(
        "calibadv",
        "ppo_clip",
        ("sapo",),
        settings={"kl_coef": 0.0, "entropy_coef": 0.0},
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
        out.update(to_dict(self.settings))
        out[self.estimator.name] = to_dict(self.estimator_params)
        out[self.policy_loss.name] = to_dict(self.policy_loss_params)
        for entry, params in self.penalties:
            out[entry.name] = to_dict(params)
        return copy.deepcopy(out)

    # -- computation -----------------------------------------------------------------------------------------

    def advantages(self, batch: AdvantageBatch) -> Tensor:
        """Per-token advantages (B, T), zero outside the response mask."""
        if self.needs_turn_scores and batch.turn_scores is None:
            raise ValueError(
                f"algorithm {self.name!r} (advantage estimator {self.estimator.name!r}) needs "
                "AdvantageBatch.turn_scores; compute them with searchrl.rewards.turn_scores_by_group"
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

    def reduce(self, term: Term) -> Tensor:
        """A term's scalar: ``aggregate(per_token, mask, mode)`` with the term's own mode, or ``loss_agg_mode``."""
        s = self.settings
        mode = term.agg_mode or s.loss_agg_mode
        return aggregate(term.per_token, term.mask, mode, norm_constant=s.loss_norm_constant)

    def penalty_terms(self, batch: PolicyBatch) -> list[tuple[str, float, Term]]:
        """Each penalty as (name, coefficient, :class:`Term`), for callers that reduce the penalties themselves
        (the verl plugin): ``aggregate(term.per_token, term.mask, term.agg_mode)`` is the value :meth:`loss` adds
        for it. Only the penalties' own inputs are required (the KL and entropy terms are the caller's business)."""
        out = []
        for entry, params in self.penalties:
            if "answer_mask" in entry.requires(params) and batch.answer_mask is None:
                raise ValueError(f"penalty {entry.name!r} needs PolicyBatch.answer_mask (LLDS-MA, answer_weight ≠ 1)")
            out.append((entry.name, float(params.coef), entry.fn(batch, params)))
        return out

    def loss(self, batch: PolicyBatch) -> Loss:
        """The total loss (scalar, with graph), its detached scalar metrics with the fixed key set of
        :func:`metric_keys` (NaN where not applicable), and each term by name (the base loss and every penalty:
        where each acted, for the diagnostics).

        loss = agg(base) + Σ_p coef_p·agg_p(penalty_p) + kl_coef·agg(KL(π_θ‖π_ref)) − entropy_coef·agg(H)

        Each term is a per-token :class:`~searchrl.algorithms.types.Term` reduced by :meth:`reduce`. Metrics:
        ``loss`` (total), ``pg_loss`` (base loss), ``penalty`` (Σ coef·penalty), ``penalty/<name>`` (the
        unweighted term) and ``penalty/<name>_active`` (share of masked tokens it acts on) for every registered
        penalty, ``kl_ref`` (aggregated KL to the reference, when ref_log_probs is given), ``entropy``
        (the aggregated entropy term, when its coefficient is > 0) and the base loss's ``ppo_kl``.
        """
        self._check_policy_batch(batch)
        s = self.settings
        nan = torch.full((), float("nan"), device=batch.log_probs.device)
        metrics: dict[str, Tensor] = dict.fromkeys(metric_keys(), nan)
        mask = batch.response_mask.bool()

        base = self.policy_loss.fn(batch, self.policy_loss_params)
        terms = {self.policy_loss.name: base}
        total = self.reduce(base)
        metrics["pg_loss"] = total.detach()
        metrics.update({k: v.detach() for k, v in base.metrics.items() if k in BASE_METRIC_KEYS})

        penalty_sum = torch.zeros((), device=batch.log_probs.device)
        for name, coef, term in self.penalty_terms(batch):
            value = self.reduce(term)
            total = total + coef * value
            penalty_sum = penalty_sum + coef * value.detach()
            metrics[f"penalty/{name}"] = value.detach()
            metrics[f"penalty/{name}_active"] = _active_share(term, mask)
            terms[name] = term
        metrics["penalty"] = penalty_sum

        if batch.ref_log_probs is not None:
            with torch.set_grad_enabled(torch.is_grad_enabled() and s.kl_coef > 0):
                kl = self.reduce(Term(kl_penalty(batch.log_probs, batch.ref_log_probs, s.kl_type) * mask, mask))
            if s.kl_coef > 0:
                total = total + s.kl_coef * kl
            metrics["kl_ref"] = kl.detach()
        if batch.entropy is not None and s.entropy_coef > 0:  # the entropy statistic itself: diagnostics
            per_token = batch.entropy.to(compute_dtype(batch.entropy)) * mask  # graph from the logits
            entropy = self.reduce(Term(per_token, mask))
            total = total - s.entropy_coef * entropy
            metrics["entropy"] = entropy.detach()

        metrics["loss"] = total.detach()
        return Loss(total, metrics, terms)


class Loss(NamedTuple):
    """What :meth:`Objective.loss` returns: ``value`` (scalar, with graph), ``metrics`` (detached 0-d tensors),
    ``terms`` (each term by its component name: the base loss and every penalty)."""

    value: Tensor
    metrics: dict[str, Tensor]
    terms: dict[str, Term]


def _active_share(term: Term, mask: Tensor) -> Tensor:
    """The share of masked tokens a penalty acts on: its ``active`` metric, else the share of its ``acting``
    tokens, else the share of tokens where its per-token value is non-zero (for user terms that give neither)."""
    if "active" in term.metrics:
        return term.metrics["active"].detach()
    acting = term.acting if term.acting is not None else term.per_token.detach() != 0
    return ((acting & mask).sum() / mask.sum().clamp(min=1)).to(torch.float32)


# ---------------------------------------------------------------------------------------------- building


def _component_name(value: Any, key: str, known: list[str], kind: str, where: str) -> str:
    if not isinstance(value, str) or value not in known:
        raise SettingError(key, f"got {value!r}; expected one of the registered {kind}: {known}", where)
    return value


def build_objective(cfg: Mapping[str, Any], *, where: str = "algorithm") -> Objective:
    """Validate the plain-dict ``algorithm:`` config and resolve it into an :class:`Objective`.

    Resolution order: ObjectiveSettings defaults ← the algorithm table's row for ``name`` ← ``cfg``. A
    component's knobs come from its params dataclass defaults ← the table row ← ``cfg[<component name>]``.
    Raises SettingError (a ValueError) naming the dotted key (``<where>.<key>[.<field>]``, ``where`` being where
    the caller's config keeps the section) and the allowed names or values.
    """
    if not isinstance(cfg, Mapping):
        raise SettingError("", f"expected a mapping with at least `name` (one of {algorithm_names()}), "
                           f"got {type(cfg).__name__}", where)
    if "name" not in cfg:
        raise SettingError("name", f"missing; set it to one of {algorithm_names()}", where)
    name = cfg["name"]
    if not isinstance(name, str) or name not in _ALGORITHMS:
        raise SettingError("name", f"got {name!r}; expected one of {algorithm_names()}", where)
    spec = _ALGORITHMS[name]

    setting_keys = known_keys(ObjectiveSettings)
    component_keys = sorted({*policy_loss_names(), *advantage_estimator_names()})
    allowed = [*_STRUCTURE_KEYS, *setting_keys, *component_keys]
    for key in cfg:
        if key not in allowed:
            raise unknown_key(str(key), allowed, where)

    estimator_name = _component_name(
        cfg.get("advantage_estimator", spec.advantage_estimator),
        "advantage_estimator",
        advantage_estimator_names(),
        "advantage estimators",
        where,
    )
    loss_name = _component_name(
        cfg.get("policy_loss", spec.policy_loss), "policy_loss", policy_loss_names("base"), "base losses", where
    )
    raw_penalties = cfg.get("penalties", list(spec.penalties))
    if isinstance(raw_penalties, str) or not isinstance(raw_penalties, Sequence):
        raise SettingError(
            "penalties", f"got {raw_penalties!r}; expected a list of {policy_loss_names('penalty')}", where
        )
    penalty_names: list[str] = []
    for i, item in enumerate(raw_penalties):
        _component_name(item, f"penalties[{i}]", policy_loss_names("penalty"), "penalties", where)
        if item in penalty_names:
            raise SettingError(f"penalties[{i}]", f"{item!r} is listed twice", where)
        penalty_names.append(item)

    merged_settings = {**spec.settings, **{k: cfg[k] for k in setting_keys if k in cfg}}
    settings = build(ObjectiveSettings, merged_settings, where, strict=True)

    in_use = [estimator_name, loss_name, *penalty_names]
    for key in component_keys:
        if key in cfg and key not in in_use:
            raise SettingError(
                key,
                f"section for {key!r}, which this algorithm does not use (advantage_estimator={estimator_name!r}, "
                f"policy_loss={loss_name!r}, penalties={penalty_names}); remove it or add {key!r} to the composition",
                where,
            )

    def build_params(entry_name: str, params_cls: type) -> Any:
        user = cfg.get(entry_name)
        if user is not None and not isinstance(user, Mapping):
            raise SettingError(entry_name, f"expected a mapping of {known_keys(params_cls)}, got {user!r}", where)
        merged = {**spec.params.get(entry_name, {}), **(user or {})}
        return build(params_cls, merged, f"{where}.{entry_name}", strict=True)

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
    "Loss",
    "Objective",
    "ObjectiveSettings",
    "algorithm_names",
    "build_objective",
    "default_algorithm_config",
    "describe_algorithms",
    "metric_keys",
    "register_algorithm",
]
