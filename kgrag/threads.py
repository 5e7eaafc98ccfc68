"""Conversation threads for in-process runs (``kgrag ask --thread ID``): a thread's ``history`` kept as JSON under
``<work_dir>/agent/threads/<id>.json``, read and written by ``kgrag ask`` and the MCP ``ask`` tool alike. (Under the
LangGraph server the server's checkpointer keeps threads.)

    from kgrag.threads import load_history, save_history
    history = load_history(settings, "t1"); …; save_history(settings, "t1", state["history"])
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kgrag.config import Settings
from kgrag.fileio import write_json

__all__ = ["load_history", "save_history", "thread_file"]

_THREAD_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def thread_file(settings: Settings, thread_id: str) -> Path:
    """The thread's file; ``ValueError`` for an id that is not 1-64 letters, digits, ``_ . -``."""
    if not _THREAD_ID.fullmatch(thread_id) or thread_id in (".", ".."):
        raise ValueError(f"invalid thread id {thread_id!r}: use 1-64 letters, digits, '_', '.' or '-'")
    return settings.work_dir / "agent" / "threads" / f"{thread_id}.json"


def load_history(settings: Settings, thread_id: str) -> list[dict[str, Any]]:
    path = thread_file(settings, thread_id)
    if not path.is_file():
        return []
    return list(json.loads(path.read_text(encoding="utf-8")).get("history", []))


def save_history(settings: Settings, thread_id: str, history: list[dict[str, Any]]) -> None:
    """Write atomically (a reader never sees half a file)."""
    write_json(thread_file(settings, thread_id), {"history": history})
