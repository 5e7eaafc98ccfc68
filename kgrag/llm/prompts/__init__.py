"""Prompt templates for the LLM steps, and :func:`load_prompt`, the one way to read them.

Prompts live in this package as ``<name>.txt`` templates (``str.format`` placeholders) or as small ``.py``
modules when a prompt needs code to assemble (few-shot examples, schema snippets). Each spec's LLM step adds
its own prompt here and reads a text template with ``load_prompt("<name>")``.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["load_prompt"]


@cache
def load_prompt(name: str) -> str:
    """The text of ``<name>.txt`` in this package (read once per process)."""
    return (resources.files(__name__) / f"{name}.txt").read_text(encoding="utf-8")
