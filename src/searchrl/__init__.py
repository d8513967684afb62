"""searchrl: train LLM search agents with reinforcement learning, without the collapse.

Data flows one way: data → rollout (policy + retriever) → rewards → advantages → losses → update.
See docs/architecture.md for the records that cross module boundaries.
"""

__version__ = "0.1.0"


def lazy_exports(package: str, names: dict[str, str]):  # noqa: ANN201 - a module-level __getattr__
    """A module `__getattr__` for a package whose `names` (name -> module) load from their modules on first use, so
    importing the package does not pull in torch and transformers."""
    import importlib
    import sys

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
