"""SAPO and LLDS as verl policy losses: verl's vanilla PPO plus searchrl's penalties, each normalised as its
official code does.

Registered with verl's ``register_policy_loss`` (select with ``actor_rollout_ref.actor.policy_loss.loss_mode``):

- ``searchrl_sapo``: vanilla + γ·SAPO (Search Agent Policy Optimization, arXiv 2603.10069; not Qwen's "Soft
  Adaptive PO", which verl ships as ``sapo``);
- ``searchrl_llds``: vanilla + λ·LLDS (arXiv 2512.04220);
- ``searchrl_sapo_llds``: vanilla + γ·SAPO + λ·LLDS.

Each has verl's v0.7+ signature ``(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config,
rollout_is_weights) -> (loss, metrics)``:

    loss = vanilla(...) + s · Σ_p coef_p · aggregate(w ⊙ P_p, M_p, mode_p)

- ``vanilla`` is verl's own ``compute_policy_loss_vanilla`` (clip_ratio_low/high, dual clip clip_ratio_c,
  rollout-correction weights, agg_loss with the global batch info): the clipped surrogate is verl's, unchanged,
  and follows ``loss_agg_mode``.
- ``P_p`` is the penalty's per-token matrix (B, T) from ``searchrl.algorithms`` (one formula, one place);
  ``coef_p`` its coefficient (γ, λ); ``w`` the rollout-correction weights when verl passes them (the penalty is an
  expectation under π_old too, so it is re-weighted exactly like the surrogate), else 1.
- ``(mode_p, M_p)`` is the penalty's own normalisation, the ``agg_mode`` and ``mask`` of the
  :class:`~searchrl.algorithms.Term` its function in ``searchrl.algorithms.losses`` returns (the same one the
  native trainer reduces), independent of ``loss_agg_mode``, as in the official code: SAPO divides by the masked
  tokens of the A ≥ 0 rows, LLDS by every masked token (``normalization: paper`` gives each paper's
  per-sequence form). With ``loss_agg_mode=token-mean`` and one micro-batch the loss is the official one exactly
  (tested against the native trainer's objective).
- ``s`` is this micro-batch's share of verl's global batch (its masked tokens × dp_size / batch_num_tokens, or
  its rows × dp_size / global_batch_size for a per-sequence normalisation; 1 without global batch info), so the
  summed micro-batch losses weigh each micro-batch's penalty as the official code's gradient accumulation does
  (exactly so when micro-batches hold equal token counts): the official code normalises each micro-batch on its
  own, and so do we.

Knobs (defaults: the papers'): ``actor_rollout_ref.actor.policy_loss.searchrl.sapo.{gamma, tau,
strict_positive, normalization}`` and ``....searchrl.llds.{lam, gate, normalization}`` (see ``config.py`` for
enabling the section).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch
from verl.trainer.ppo.core_algos import compute_policy_loss_vanilla

from searchrl.algorithms import PolicyBatch, build_objective, importance_ratio
from searchrl.algorithms.masks import aggregate
from searchrl.errors import ConfigError
from searchrl.integrations.verl.config import POLICY_LOSS_KEY, POLICY_LOSS_TARGET, plain, section

# verl loss name -> the searchrl algorithm composition whose penalties are added to verl's vanilla loss.
LOSS_COMPOSITIONS: dict[str, dict[str, Any]] = {
    "searchrl_sapo": {"name": "sapo"},
    "searchrl_llds": {"name": "llds"},
    "searchrl_sapo_llds": {"name": "sapo", "penalties": ["sapo", "llds"]},
}

_OBJECTIVES: dict[tuple[str, str], Any] = {}


def penalty_names(loss_name: str) -> list[str]:
    """The searchrl penalties a registered verl loss adds, in order (their names key the knobs and metrics)."""
    return [entry.name for entry, _ in build_objective(LOSS_COMPOSITIONS[loss_name]).penalties]


def metric_keys(loss_name: str) -> list[str]:
    """The fixed metric keys a registered verl loss returns (verl's vanilla ones, then ours)."""
    keys = ["actor/pg_clipfrac", "actor/ppo_kl", "actor/pg_clipfrac_lower"]
    keys += ["actor/searchrl_penalty", "actor/searchrl_penalty_active"]
    for name in penalty_names(loss_name):
        keys += [f"actor/searchrl_{name}_penalty", f"actor/searchrl_{name}_active", f"actor/searchrl_{name}_selected"]
    return keys + ["actor/is_ratio_mean", "actor/is_ratio_min", "actor/is_ratio_max"]


def loss_objective(loss_name: str, config: Any) -> Any:
    """The validated searchrl ``Objective`` holding the penalties (with their knobs) of verl loss ``loss_name``.

    Knobs come from ``config.policy_loss.searchrl`` (absent: the papers' defaults). Cached per distinct knobs.
    """
    where = f"{POLICY_LOSS_KEY}.searchrl"
    knobs = section(section(config, "policy_loss", "actor_rollout_ref.actor"), "searchrl", POLICY_LOSS_KEY)
    key = (loss_name, json.dumps(knobs, sort_keys=True, default=str))
    if key in _OBJECTIVES:
        return _OBJECTIVES[key]
    allowed = penalty_names(loss_name)
    for name, values in knobs.items():
        if name not in allowed:
            raise ConfigError(
                f"{where}.{name}: loss_mode {loss_name!r} has no {name!r} term; its knobs are under {allowed}"
            )
        if not isinstance(values, dict):
            raise ConfigError(f"{where}.{name}: expected a mapping of knobs, got {values!r}")
    objective = build_objective({**LOSS_COMPOSITIONS[loss_name], **knobs}, where=where)
    if objective.needs_answer_mask:
        raise ConfigError(
            f"{where}.llds.answer_weight: LLDS-MA needs the answer-span mask, which verl does not pass to a policy "
            "loss; keep answer_weight at 1.0"
        )
    _OBJECTIVES[key] = objective
    return objective


def ratio_stats(ratio: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """Masked mean, min and max of the token importance ratio r = π_θ/π_old (SAPO Fig. 1a), which verl's vanilla
    loss does not log; NaN when nothing is masked in."""
    values = ratio.detach()[mask]
    if values.numel() == 0:
        return dict.fromkeys(("is_ratio_mean", "is_ratio_min", "is_ratio_max"), float("nan"))
    low, high = torch.aminmax(values)
    return {"is_ratio_mean": values.mean().item(), "is_ratio_min": low.item(), "is_ratio_max": high.item()}


def _global_batch_info(config: Any) -> dict[str, Any]:
    info = config.get("global_batch_info", None) if hasattr(config, "get") else None
    return dict(plain(info) or {})


def _share(mask: torch.Tensor, n_tokens: torch.Tensor) -> float:
    return (mask.sum() / n_tokens).item()


def micro_batch_share(response_mask: torch.Tensor, mode: str, info: dict[str, Any]) -> float:
    """This micro-batch's share of verl's global batch, in the unit of ``mode``'s denominator: masked tokens ×
    dp_size / batch_num_tokens (token-mean) or rows with tokens × dp_size / global_batch_size (per-sequence
    modes); 1.0 when verl gives no global count (one micro-batch on one rank)."""
    dp_size = int(info.get("dp_size") or 1)
    if mode == "token-mean":
        total, local = info.get("batch_num_tokens"), response_mask.sum()
    else:
        total, local = info.get("global_batch_size"), (response_mask.sum(dim=-1) > 0).sum()
    return 1.0 if total is None else float(local) * dp_size / float(total)


def penalised_policy_loss(
    loss_name: str,
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    loss_agg_mode: str,
    config: Any,
    rollout_is_weights: torch.Tensor | None,
) -> tuple[torch.Tensor, dict[str, Any]]:
    """verl's vanilla loss plus the penalties of ``loss_name``, each with its own normalisation (module docstring).

    Metrics, besides vanilla's ``actor/pg_clipfrac``, ``actor/ppo_kl``, ``actor/pg_clipfrac_lower``:
    ``actor/searchrl_penalty`` (Σ coef·penalty of this micro-batch, re-weighted: the value the native trainer logs
    as ``penalty``), ``actor/searchrl_penalty_active`` (share of masked tokens where any penalty acts) and per
    penalty ``actor/searchrl_<name>_penalty`` (its unweighted value, the native ``penalty/<name>``), ``_active``
    and ``_selected`` (share of masked tokens in the rows it may act on); ``actor/is_ratio_mean``, ``_min``,
    ``_max``: the token importance ratio π_θ/π_old over masked tokens (SAPO Fig. 1a).
    """
    if config is None:
        raise ConfigError(f"loss_mode {loss_name!r} needs the actor config (verl passes it as `config`)")
    objective = loss_objective(loss_name, config)
    pg_loss, metrics = compute_policy_loss_vanilla(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=response_mask,
        loss_agg_mode=loss_agg_mode,
        config=config,
        rollout_is_weights=rollout_is_weights,
    )
    batch = PolicyBatch(
        log_probs=log_prob, old_log_probs=old_log_prob, advantages=advantages, response_mask=response_mask
    )
    mask = response_mask.bool()  # (B, T)
    n_tokens = mask.sum().clamp(min=1)
    info = _global_batch_info(config)
    penalty = log_prob.new_zeros(())
    logged = 0.0
    active_any = torch.zeros_like(mask)
    for name, coef, term in objective.penalty_terms(batch):
        per_token = term.per_token if rollout_is_weights is None else term.per_token * rollout_is_weights
        value = aggregate(per_token, term.mask, term.agg_mode)  # this micro-batch's official value
        penalty = penalty + coef * micro_batch_share(mask, term.agg_mode, info) * value
        logged += coef * value.item()
        if term.acting is not None:
            active_any = active_any | term.acting
        metrics[f"actor/searchrl_{name}_penalty"] = value.item()
        metrics[f"actor/searchrl_{name}_active"] = term.metrics["active"].item()
        metrics[f"actor/searchrl_{name}_selected"] = term.metrics["selected"].item()
    with torch.no_grad():
        metrics["actor/searchrl_penalty"] = logged
        metrics["actor/searchrl_penalty_active"] = _share(active_any & mask, n_tokens)
        stats = ratio_stats(importance_ratio(log_prob, old_log_prob), mask)
        for key, value in stats.items():
            metrics[f"actor/{key}"] = value
    return pg_loss + penalty, metrics


def _loss_fn(loss_name: str) -> Callable[..., tuple[torch.Tensor, dict[str, Any]]]:
    def loss_fn(
        old_log_prob: torch.Tensor,
        log_prob: torch.Tensor,
        advantages: torch.Tensor,
        response_mask: torch.Tensor,
        loss_agg_mode: str = "token-mean",
        config: Any = None,
        rollout_is_weights: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        return penalised_policy_loss(
            loss_name, old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights
        )

    penalties = " + ".join(penalty_names(loss_name))
    loss_fn.__name__ = loss_fn.__qualname__ = f"compute_policy_loss_{loss_name}"
    loss_fn.__module__ = __name__
    loss_fn.__doc__ = (
        f"verl policy loss {loss_name!r}: verl's vanilla PPO + {penalties} from searchrl.algorithms, each with "
        f"its official normalisation. Knobs: {POLICY_LOSS_KEY}.searchrl.<term>.* (needs {POLICY_LOSS_KEY}._target_="
        f"{POLICY_LOSS_TARGET}). See searchrl.integrations.verl.losses."
    )
    return loss_fn


POLICY_LOSSES: dict[str, Callable[..., tuple[torch.Tensor, dict[str, Any]]]] = {
    name: _loss_fn(name) for name in LOSS_COMPOSITIONS
}


def register() -> None:
    """Register the losses with verl (idempotent: verl's registry overwrites an entry of the same name)."""
    from verl.trainer.ppo.core_algos import register_policy_loss

    for name, fn in POLICY_LOSSES.items():
        register_policy_loss(name)(fn)
