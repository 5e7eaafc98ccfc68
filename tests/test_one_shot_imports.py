"""A one-shot `kgrag ask` on a KG with no trained reasoner, and on a network, loads neither torch nor
sentence-transformers once the question encoder's ONNX export exists (what keeps the first answer in seconds):
the answer is unchanged."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fixtures.library_kn import load_library

from kgrag.rank.onnx_encoder import load_onnx_encoder
from kgrag.rank.sentence_embedder import DEFAULT_MODEL, load_model

SCRIPT = """import sys
from typer.testing import CliRunner
from kgrag.cli import app
result = CliRunner().invoke(app, ["ask", *sys.argv[1:]])
print(result.exit_code, sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules))
print(result.output)
"""


def _ask(args: list[str], env: dict[str, str]) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": "200", **env}, check=True).stdout
    first, _, rest = out.partition("\n")
    return first, rest


@pytest.fixture
def exported(demo_untrained_settings):
    """The ONNX export in place (a first use on a machine exports it, loading torch once)."""
    assert load_onnx_encoder(load_model(DEFAULT_MODEL), DEFAULT_MODEL, demo_untrained_settings.onnx_dir) is not None
    return demo_untrained_settings


def test_ask_on_an_untrained_kg_imports_no_torch(exported):
    status, output = _ask(["who directed Carnival Lights?", "--kg", "demo"], {})
    assert status == "0 []", status + output
    assert "answer: Uma Halvorsen" in output


def test_ask_on_a_network_imports_no_torch(exported, tmp_path):
    db, _ = load_library(tmp_path)
    status, output = _ask(["Who wrote 1984?", "--kn", "library"], {"KGRAG_DATABASE_URL": db})
    assert status == "0 []", status + output
    assert "George Orwell" in output
