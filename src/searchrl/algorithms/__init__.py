"""searchrl.algorithms — the policy-optimisation math: advantages, policy losses, penalties, KL, entropy.

Pure functions over torch tensors (no model, no I/O), two registries (policy-loss terms and advantage
estimators) and the table of named algorithms (``grpo``, ``dr_grpo``, ``dapo``, ``gspo``, ``sapo``, ``llds``,
``calibadv``). The trainer and the verl plugin use :func:`build_objective` and the :class:`Objective` it returns;
no module outside this package compares an algorithm's name.

Masks: 1 = model-generated token, 0 = retrieved observation or padding.
"""

from __future__ import annotations

from searchrl.algorithms import builtin as _builtin  # registers the built-in components
from searchrl.algorithms.advantages import (
    calibadv_advantages,
    grpo_advantages,
    silver_turn_scores,
    word_edit_similarity,
    word_levenshtein,
)
from searchrl.algorithms.builtin import (
    CalibAdvParams,
    GRPOParams,
    GSPOParams,
    LLDSParams,
    PPOClipParams,
    SAPOParams,
)
from searchrl.algorithms.losses import (
    BASE_METRIC_KEYS,
    KL_KINDS,
    LLDS_GATES,
    PENALTY_NORMALIZATIONS,
    Term,
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
    AdvantageBatch,
    AdvantageEstimatorEntry,
    NoParams,
    PolicyBatch,
    PolicyLossEntry,
    UnknownNameError,
    advantage_estimator_names,
    get_advantage_estimator,
    get_policy_loss,
    policy_loss_names,
    register_advantage_estimator,
    register_policy_loss,
    unregister,
)

# The names earlier docs gave `searchrl.settings.setting` and `check`, kept for params classes written with them.
from searchrl.settings import check as check_params
from searchrl.settings import setting as knob

del _builtin

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
    "calibadv_advantages",
    "check_params",
    "default_algorithm_config",
    "describe_algorithms",
    "entropy_from_logits",
    "get_advantage_estimator",
    "get_policy_loss",
    "grpo_advantages",
    "gspo",
    "group_index",
    "importance_ratio",
    "kl_penalty",
    "knob",
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
    "silver_turn_scores",
    "turn_ids",
    "unregister",
    "word_edit_similarity",
    "word_levenshtein",
]
