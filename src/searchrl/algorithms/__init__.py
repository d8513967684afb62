"""searchrl.algorithms — the policy-optimisation math: advantages, policy losses, penalties, KL, entropy.

Pure functions over torch tensors (no model, no I/O), each registered where it is written with its params
dataclass beside it: policy-loss terms in ``losses.py``, advantage estimators in ``advantages.py``; the table of
named algorithms (``grpo``, ``dr_grpo``, ``dapo``, ``gspo``, ``sapo``, ``llds``, ``calibadv``, ...) in
``objective.py``. The trainer and the verl plugin use :func:`build_objective` and the :class:`Objective` it returns;
no module outside this package compares an algorithm's name.

Masks: 1 = model-generated token, 0 = retrieved observation or padding.
"""

from __future__ import annotations

from searchrl.algorithms.advantages import (
    CalibAdvParams,
    GRPOParams,
    calibadv,
    dr_grpo,
    grpo,
    grpo_advantages,
)
from searchrl.algorithms.losses import (
    BASE_METRIC_KEYS,
    KL_KINDS,
    LLDS_GATES,
    PENALTY_NORMALIZATIONS,
    GSPOParams,
    LLDSParams,
    PPOClipParams,
    SAPOParams,
    entropy_from_logits,
    gspo,
    importance_ratio,
    kl_penalty,
    likelihood_decrease_gate,
    llds,
    log_ratio,
    ppo_clip,
    sapo,
)
from searchrl.algorithms.masks import AGGREGATION_MODES, aggregate, group_index, turn_ids
from searchrl.algorithms.objective import (
    AlgorithmSpec,
    Loss,
    Objective,
    ObjectiveSettings,
    algorithm_names,
    build_objective,
    default_algorithm_config,
    describe_algorithms,
    metric_keys,
    register_algorithm,
)
from searchrl.algorithms.registry import (
    REQUIREMENTS,
    ROLES,
    AdvantageEstimatorEntry,
    PolicyLossEntry,
    UnknownNameError,
    advantage_estimator_names,
    get_advantage_estimator,
    get_policy_loss,
    mark_builtins,
    policy_loss_names,
    register_advantage_estimator,
    register_policy_loss,
    unregister,
)
from searchrl.algorithms.types import AdvantageBatch, NoParams, PolicyBatch, Term

mark_builtins()  # everything registered by the imports above is built in (cannot be unregistered)

__all__ = [
    "AGGREGATION_MODES",
    "BASE_METRIC_KEYS",
    "KL_KINDS",
    "LLDS_GATES",
    "PENALTY_NORMALIZATIONS",
    "REQUIREMENTS",
    "ROLES",
    "AdvantageBatch",
    "AdvantageEstimatorEntry",
    "AlgorithmSpec",
    "CalibAdvParams",
    "GRPOParams",
    "GSPOParams",
    "LLDSParams",
    "Loss",
    "NoParams",
    "Objective",
    "ObjectiveSettings",
    "PPOClipParams",
    "PolicyBatch",
    "PolicyLossEntry",
    "SAPOParams",
    "Term",
    "UnknownNameError",
    "advantage_estimator_names",
    "aggregate",
    "algorithm_names",
    "build_objective",
    "calibadv",
    "default_algorithm_config",
    "describe_algorithms",
    "dr_grpo",
    "entropy_from_logits",
    "get_advantage_estimator",
    "get_policy_loss",
    "group_index",
    "grpo",
    "grpo_advantages",
    "gspo",
    "importance_ratio",
    "kl_penalty",
    "likelihood_decrease_gate",
    "llds",
    "log_ratio",
    "metric_keys",
    "policy_loss_names",
    "ppo_clip",
    "register_advantage_estimator",
    "register_algorithm",
    "register_policy_loss",
    "sapo",
    "turn_ids",
    "unregister",
]
