"""The layer above kgrag — the Prefect flows (``flows/``) and the agent graph (``graphs/``) — as the commands reach
it. Those import kgrag, so no command module may import them (data flows one way): the entry point, this package's
``__init__`` (the one module of the command line that may), hands in a loader when the package is imported, and a
command asks for a module by name when it runs (imported then: Prefect alone costs the CLI ~2 s).

    above("flows.prepare_data").prepare_data(dataset="demo")
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

__all__ = ["above", "provide"]

_loader: Callable[[str], ModuleType] | None = None


def provide(loader: Callable[[str], ModuleType]) -> None:
    """Set the loader of the layer above (called once, by :mod:`kgrag.cli`)."""
    global _loader
    _loader = loader


def above(module: str) -> ModuleType:
    """The module ``module`` of ``flows/`` or ``graphs/``, imported on this call."""
    if _loader is None:  # importing any kgrag.cli module runs the package's __init__ first, which provides it
        raise RuntimeError("the layer above kgrag is provided by kgrag.cli's __init__")
    return _loader(module)
