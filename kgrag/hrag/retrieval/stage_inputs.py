"""What an H-RAG stage reads from an earlier one: the file when it is there, else one line naming the command that
writes it (the CLI prints a :class:`~kgrag.errors.KgragError` as ``error: …``, without a traceback).

    path = stage_input(g_agent_file, "kgrag retriever-eval --dataset metaqa")   # the path, or MissingStageInput

Torch-free on purpose: the online agent asks here whether a KG has a trained reasoner (and reads its prepared graph)
before anything imports torch.
"""

from __future__ import annotations

import json
from pathlib import Path

from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph

__all__ = ["MissingStageInput", "latest_checkpoint", "load_graph", "stage_input"]


class MissingStageInput(KgragError):
    """A file an earlier H-RAG stage writes is not there (that stage never ran, or was interrupted)."""


def stage_input(path: str | Path, command: str) -> Path:
    """``path`` when it exists; else :class:`MissingStageInput`: ``<path> not found: run `<command>` first``."""
    path = Path(path)
    if not path.exists():
        raise MissingStageInput(f"{path} not found: run `{command}` first")
    return path


def load_graph(settings: Settings, dataset: str) -> CSRGraph:
    """The prepared graph of ``dataset`` (memory-mapped), or one line naming `kgrag prepare`."""
    from kgrag.graph.versions.version_file import graph_file  # the current version's (kgrag kg update)

    return CSRGraph.load(stage_input(graph_file(settings.dataset_dir(dataset)), f"kgrag prepare --dataset {dataset}"))


def latest_checkpoint(settings: Settings, dataset: str, kind: str = "retriever") -> Path:
    """``best.pt`` of the ``kind`` run that trained last for ``dataset``; a clear error when there is none."""
    pointer = settings.checkpoint_dir / kind / f"{dataset}-latest.json"
    if pointer.is_file():
        best = Path(json.loads(pointer.read_text())["run_dir"]) / "best.pt"
        if best.is_file():
            return best
    what = "retriever" if kind == "retriever" else f"{kind} policy"
    raise KgragError(f"no trained {what} for {dataset} under {settings.checkpoint_dir / kind}: "
                     f"run `kgrag train-{kind} --dataset {dataset}` first")
