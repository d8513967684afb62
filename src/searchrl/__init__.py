"""searchrl: train LLM search agents with reinforcement learning, without the collapse.

Data flows one way: data → rollout (policy + retriever) → rewards → advantages → losses → update.
See docs/architecture.md for the records that cross module boundaries.
"""

__version__ = "0.1.0"
