"""The two registries: policy-loss terms and advantage estimators, one signature each.

A policy-loss term is registered with a role: ``"base"`` (the surrogate, exactly one per objective: ``ppo_clip``,
``gspo``) or ``"penalty"`` (added with a coefficient, any number: ``sapo``, ``llds``). Every term is the math
function itself, ``fn(batch: PolicyBatch, params: <its params dataclass>) -> Term``, registered where it is
defined, with its params dataclass declared beside it (each default written once, there). Every advantage
estimator is ``fn(batch: AdvantageBatch, params) -> Tensor (B, T)``. A user adds an algorithm by registering a
term or an estimator in their own module and naming it in the ``algorithm:`` config; nothing here changes.

Example::

    @dataclass(frozen=True)
    class MyParams:
        coef: float = setting(0.05, help="weight of my penalty", ge=0.0)   # searchrl.settings.setting

    @register_policy_loss("my_penalty", params=MyParams, role="penalty")
    def my_penalty(batch: PolicyBatch, params: MyParams) -> Term:
        mask = batch.response_mask.bool()
        per_token = -log_ratio(batch.log_probs, batch.old_log_probs) * mask
        return Term(per_token, mask, "token-mean", {"active": mask.float().mean()}, acting=mask)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from searchrl.algorithms.types import AdvantageBatch, NoParams, PolicyBatch, Term

ROLES: tuple[str, ...] = ("base", "penalty")
# Optional inputs a component may declare it needs; Objective checks them before calling it.
REQUIREMENTS: tuple[str, ...] = ("ref_log_probs", "entropy", "answer_mask", "turn_scores")
# Keys of the ``algorithm:`` config that are not component names; no component may take these names.
RESERVED_NAMES: tuple[str, ...] = (
    "name",
    "advantage_estimator",
    "policy_loss",
    "penalties",
    "kl_coef",
    "kl_type",
    "entropy_coef",
    "loss_agg_mode",
    "loss_norm_constant",
)


class UnknownNameError(KeyError, ValueError):
    """A registry lookup missed; the message lists the known names. Catchable as KeyError or ValueError."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _requirement_fn(requires: Iterable[str] | Callable[[Any], Iterable[str]]) -> Callable[[Any], frozenset[str]]:
    if callable(requires):
        fn = requires

        def checked(params: Any) -> frozenset[str]:
            needs = frozenset(fn(params))
            unknown = needs - set(REQUIREMENTS)
            if unknown:
                raise ValueError(f"unknown requirement(s) {sorted(unknown)}; allowed: {list(REQUIREMENTS)}")
            return needs

        return checked
    fixed = frozenset(requires)
    unknown = fixed - set(REQUIREMENTS)
    if unknown:
        raise ValueError(f"unknown requirement(s) {sorted(unknown)}; allowed: {list(REQUIREMENTS)}")
    return lambda params: fixed


@dataclass(frozen=True)
class PolicyLossEntry:
    """A registered policy-loss term: call it as ``entry(batch, params=None) -> Term``."""

    name: str
    fn: Callable[[PolicyBatch, Any], Term]
    params: type
    role: str
    requires: Callable[[Any], frozenset[str]]

    def __call__(self, batch: PolicyBatch, params: Any = None) -> Term:
        return self.fn(batch, self.params() if params is None else params)


@dataclass(frozen=True)
class AdvantageEstimatorEntry:
    """A registered advantage estimator: call it as ``entry(batch, params=None) -> Tensor (B, T)``."""

    name: str
    fn: Callable[[AdvantageBatch, Any], Tensor]
    params: type
    requires: Callable[[Any], frozenset[str]]
    group_baseline: bool  # its baseline is the mean reward of the question's group (needs G >= 2)

    def __call__(self, batch: AdvantageBatch, params: Any = None) -> Tensor:
        return self.fn(batch, self.params() if params is None else params)


_POLICY_LOSSES: dict[str, PolicyLossEntry] = {}
_ADVANTAGE_ESTIMATORS: dict[str, AdvantageEstimatorEntry] = {}


def _check_new_name(name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"component name must be an identifier-like string, got {name!r}")
    if name in RESERVED_NAMES:
        raise ValueError(f"{name!r} is a reserved algorithm config key; reserved: {list(RESERVED_NAMES)}")
    if name in _POLICY_LOSSES or name in _ADVANTAGE_ESTIMATORS:
        raise ValueError(
            f"{name!r} is already registered; names are shared by policy losses {sorted(_POLICY_LOSSES)} "
            f"and advantage estimators {sorted(_ADVANTAGE_ESTIMATORS)}"
        )


def register_policy_loss(
    name: str,
    *,
    params: type = NoParams,
    role: str = "base",
    requires: Iterable[str] | Callable[[Any], Iterable[str]] = (),
) -> Callable[[Callable[..., Term]], Callable[..., Term]]:
    """Decorator: register ``fn(batch, params) -> Term`` as policy-loss term ``name``.

    ``params`` is a frozen dataclass of the term's knobs (defaults = the paper's values); a ``"penalty"``'s params
    must expose ``coef``, the weight the objective multiplies it by. ``requires`` lists the optional batch inputs
    it needs (or a function of its params giving them), among ``REQUIREMENTS``. Raises ValueError on a duplicate
    name.
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; allowed: {list(ROLES)}")
    if role == "penalty" and not hasattr(params, "coef"):
        raise ValueError(f"penalty {name!r}: its params class {params.__name__} must define `coef`")
    requirement = _requirement_fn(requires)

    def decorator(fn: Callable[..., Term]) -> Callable[..., Term]:
        _check_new_name(name)
        _POLICY_LOSSES[name] = PolicyLossEntry(name=name, fn=fn, params=params, role=role, requires=requirement)
        return fn

    return decorator


def register_advantage_estimator(
    name: str,
    *,
    params: type = NoParams,
    requires: Iterable[str] | Callable[[Any], Iterable[str]] = (),
    group_baseline: bool = True,
) -> Callable[[Callable[..., Tensor]], Callable[..., Tensor]]:
    """Decorator: register ``fn(batch: AdvantageBatch, params) -> Tensor (B, T)`` as estimator ``name``.

    ``group_baseline``: its baseline is the mean reward of the question's group, so a config with one rollout per
    question is refused (each advantage would be the raw reward)."""
    requirement = _requirement_fn(requires)

    def decorator(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
        _check_new_name(name)
        _ADVANTAGE_ESTIMATORS[name] = AdvantageEstimatorEntry(
            name=name, fn=fn, params=params, requires=requirement, group_baseline=group_baseline
        )
        return fn

    return decorator


def policy_loss_names(role: str | None = None) -> list[str]:
    """Registered policy-loss term names, optionally only those of one role, sorted."""
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown role {role!r}; allowed: {list(ROLES)}")
    return sorted(n for n, e in _POLICY_LOSSES.items() if role is None or e.role == role)


def advantage_estimator_names() -> list[str]:
    return sorted(_ADVANTAGE_ESTIMATORS)


def get_policy_loss(name: str) -> PolicyLossEntry:
    """The registered term ``name``; an unknown name raises UnknownNameError listing the known ones."""
    try:
        return _POLICY_LOSSES[name]
    except (KeyError, TypeError):
        raise UnknownNameError(f"unknown policy loss {name!r}; known: {policy_loss_names()}") from None


def get_advantage_estimator(name: str) -> AdvantageEstimatorEntry:
    """The registered estimator ``name``; an unknown name raises UnknownNameError listing the known ones."""
    try:
        return _ADVANTAGE_ESTIMATORS[name]
    except (KeyError, TypeError):
        raise UnknownNameError(f"unknown advantage estimator {name!r}; known: {advantage_estimator_names()}") from None


_BUILTIN_NAMES: set[str] = set()


def mark_builtins() -> None:
    """Record every component registered so far as built in (called once, when the package has loaded)."""
    _BUILTIN_NAMES.update(_POLICY_LOSSES, _ADVANTAGE_ESTIMATORS)


def unregister(name: str) -> None:
    """Remove a user-registered component (for tests and notebooks); built-ins cannot be removed."""
    if name in _BUILTIN_NAMES:
        raise ValueError(f"{name!r} is built in and cannot be unregistered")
    if _POLICY_LOSSES.pop(name, None) is None and _ADVANTAGE_ESTIMATORS.pop(name, None) is None:
        raise UnknownNameError(
            f"{name!r} is not registered; known: {sorted([*_POLICY_LOSSES, *_ADVANTAGE_ESTIMATORS])}"
        )
