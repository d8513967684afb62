"""Where the plugin's knobs live in a verl config, and how they are read and validated.

verl hands a policy loss the actor config (``ActorConfig``, a dataclass built by hydra from
``actor_rollout_ref.actor``) and an advantage estimator the ``algorithm`` config (an OmegaConf node). The plugin's
knobs go under a ``searchrl`` key of each:

- ``actor_rollout_ref.actor.policy_loss.searchrl.{sapo,llds}.*``: penalty knobs. verl's ``PolicyLossConfig``
  dataclass rejects unknown keys, so setting any of them needs the policy-loss target switched to
  :class:`SearchRLPolicyLossConfig` (a subclass with one extra mapping field)::

      actor_rollout_ref.actor.policy_loss._target_=searchrl.integrations.verl.config.SearchRLPolicyLossConfig
      +actor_rollout_ref.actor.policy_loss.searchrl.sapo.gamma=0.1

  Without knobs, the papers' defaults apply and nothing but ``loss_mode`` changes.
- ``algorithm.searchrl.calibadv.*``: CalibAdv knobs (the algorithm node is not converted to a dataclass, so a
  ``+`` override is enough).
- ``searchrl.agent_loop.*`` (a top-level section): the agent loop's retriever, budgets and protocol.

Values are validated by the same params records ``searchrl.algorithms`` uses (``build_objective``), so the
allowed values in an error message are derived from one declaration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from verl.workers.config import PolicyLossConfig

from searchrl.errors import ConfigError

POLICY_LOSS_KEY = "actor_rollout_ref.actor.policy_loss"
POLICY_LOSS_TARGET = "searchrl.integrations.verl.config.SearchRLPolicyLossConfig"
ALGORITHM_KEY = "algorithm"


@dataclass
class SearchRLPolicyLossConfig(PolicyLossConfig):
    """verl's ``PolicyLossConfig`` plus ``searchrl``: the penalty knobs, e.g. ``{"sapo": {"gamma": 0.1}}``.

    Select it with ``actor_rollout_ref.actor.policy_loss._target_=`` this class's dotted path; the knobs are
    validated when the loss first runs (``searchrl.integrations.verl.losses``).
    """

    searchrl: dict[str, Any] = field(default_factory=dict)


def plain(value: Any) -> Any:
    """A plain Python container from an OmegaConf node, a verl ``BaseConfig`` mapping, or a plain value."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
    except ImportError:  # omegaconf ships with verl; keep this module importable without it
        DictConfig = ListConfig = ()  # type: ignore[assignment,misc]
    if DictConfig and isinstance(value, (DictConfig, ListConfig)):
        return OmegaConf.to_container(value, resolve=True)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def section(config: Any, key: str, where: str) -> dict[str, Any]:
    """``config[key]`` as a plain dict ({} when absent or null); a non-mapping value is a ConfigError."""
    if config is None:
        return {}
    getter = getattr(config, "get", None)
    raw = getter(key, None) if callable(getter) else getattr(config, key, None)
    raw = plain(raw)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where + '.' if where else ''}{key}: expected a mapping, got {raw!r}")
    return raw
