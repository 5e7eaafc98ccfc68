"""Prefect artifact keys are derived from dataset names and network ids through one helper: any name the dataset
registry or a network id accepts gives a key Prefect accepts (lowercase letters, digits, dashes)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flows.artifact_keys import artifact_key

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("parts", "key"), [
    (("data-prep", "demo"), "data-prep-demo"),
    (("data-prep", "my_kg", "chart"), "data-prep-my-kg-chart"),
    (("intent-self", "My.Net_2"), "intent-self-my-net-2"),
    (("domain-embeddings", "医学", "probes"), "domain-embeddings-probes"),
    (("answers", "demo", "file_q_no_brackets"), "answers-demo-file-q-no-brackets"),
])
def test_keys_are_slugs_prefect_accepts(parts, key) -> None:
    from prefect.types.names import raise_on_name_alphanumeric_dashes_only  # after flows/ set Prefect's env

    assert artifact_key(*parts) == key
    assert raise_on_name_alphanumeric_dashes_only(key, "Artifact key") == key


def test_a_cut_key_ends_without_a_dash() -> None:
    assert artifact_key("answers", "a" * 10, "b_c", max_length=13) == "answers-aaaaa"
    assert artifact_key("answers", "a" * 4, "b_c", max_length=13) == "answers-aaaa"


def test_every_flow_makes_its_keys_through_the_helper() -> None:
    """No ``key=`` argument of a ``create_*_artifact`` call in flows/ is a literal with a name pasted in."""
    pasted = []
    for path in sorted((ROOT / "flows").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "").startswith("create_"):
                pasted += [f"{path.name}:{node.lineno}" for kw in node.keywords
                           if kw.arg == "key" and isinstance(kw.value, ast.JoinedStr)]
    assert pasted == []
