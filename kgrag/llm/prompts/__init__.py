"""Prompt templates for the LLM steps.

Prompts live in this package as ``<name>.txt`` templates (``str.format`` placeholders) or as small ``.py``
modules when a prompt needs code to assemble (few-shot examples, schema snippets). Each spec's LLM step adds
its own prompt here; load text templates with ``importlib.resources.files(__package__) / "<name>.txt"``.
"""
