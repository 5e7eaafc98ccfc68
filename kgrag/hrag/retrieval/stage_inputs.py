"""What an H-RAG stage reads from an earlier one: the file when it is there, else one line naming the command that
writes it (the CLI prints a :class:`~kgrag.errors.KgragError` as ``error: …``, without a traceback).

    path = stage_input(g_agent_file, "kgrag retriever-eval --dataset metaqa")   # the path, or MissingStageInput
"""

from __future__ import annotations

from pathlib import Path

from kgrag.errors import KgragError

__all__ = ["MissingStageInput", "stage_input"]


class MissingStageInput(KgragError):
    """A file an earlier H-RAG stage writes is not there (that stage never ran, or was interrupted)."""


def stage_input(path: str | Path, command: str) -> Path:
    """``path`` when it exists; else :class:`MissingStageInput`: ``<path> not found: run `<command>` first``."""
    path = Path(path)
    if not path.exists():
        raise MissingStageInput(f"{path} not found: run `{command}` first")
    return path
