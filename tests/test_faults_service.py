"""Faults, each a test, through the real service paths:

- the LLM endpoint (the scripted OpenAI-compatible server, tests/fixtures/llm_server.py) slow beyond the client's
  timeout, answering 500, or dropping the connection: the agent's ask route (``POST /agent/ask``, the app the
  LangGraph server mounts) answers LLM-free and says so in ``errors``, then with the LLM again once it is back;
  ``POST /api/query`` answers 200 with the retrieved context and a response saying the LLM call failed; both
  answer afterwards;
- the disk full while a checkpoint or an artifact is written (a real ``RLIMIT_FSIZE`` in a subprocess: the write
  fails with EFBIG, as on a full disk, without root or a tmpfs): a clear error, the previous file intact and no
  temp file left, and the HTTP app still answering.

    .venv/bin/python -m pytest -q tests/test_faults_service.py --durations=5
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from fixtures.llm_server import Delay, Drop, Error, Reply, ScriptedLLMServer, use_llm_server

from graphs.agent.context import AgentContext
from graphs.agent.graph import graph
from kgrag.api.agent_routes import make_app
from kgrag.api.app import create_app
from kgrag.config import Settings, get_settings
from kgrag.prep import steps

FAILURES = {"slow": Delay(3.0), "500": Error(500, "upstream exploded"), "dropped": Drop()}
QUESTION = {"question": "百日咳怎么治疗", "kn_id": "medical"}


@pytest.fixture
def failing_llm(medical_settings: Settings, llm_server: ScriptedLLMServer,
                monkeypatch: pytest.MonkeyPatch) -> ScriptedLLMServer:
    """The medical network with the LLM settings on the scripted server (1 s timeout, no retries)."""
    use_llm_server(llm_server, monkeypatch, retries=0, timeout=1.0)
    return llm_server


@pytest.mark.parametrize("kind", list(FAILURES))
def test_llm_fault_on_the_ask_route_falls_back_and_the_service_answers_after(
        failing_llm: ScriptedLLMServer, kind: str) -> None:
    failing_llm.default = FAILURES[kind]  # every LLM call fails this way
    with TestClient(make_app(graph, AgentContext)) as client:
        resp = client.post("/agent/ask", json=QUESTION, timeout=60)
        assert resp.status_code == 200, resp.text
        state = resp.json()
        assert state["planner"] == "rules" and state["answers"], state["errors"]
        assert any("LLM-free plan was used" in e for e in state["errors"]), state["errors"]
        assert failing_llm.chat_requests  # the LLM was really tried
        # the endpoint comes back: the same service answers with the LLM's plan again
        failing_llm.default = None
        failing_llm.script(*[lambda body: Reply('{"entities": [{"text": "百日咳", "confidence": 0.9}]}')
                             if "tools" not in body else Reply("百日咳的治疗方式：药物治疗。")] * 10)
        after = client.post("/agent/ask", json=QUESTION, timeout=60)
        assert after.status_code == 200 and after.json()["planner"] == "llm", after.text
        assert after.json()["answer"].startswith("百日咳的治疗方式")


@pytest.mark.parametrize("kind", list(FAILURES))
def test_llm_fault_on_the_query_route_is_a_clear_message(failing_llm: ScriptedLLMServer, kind: str) -> None:
    failing_llm.default = FAILURES[kind]
    with TestClient(create_app(get_settings())) as client:
        body = {"query": "百日咳有哪些症状", "kn_id": "medical", "param": {"mode": "local"}}
        resp = client.post("/api/query", json=body, timeout=60)
        # the retrieval still answers; the response says the LLM failed (spec query-modes: no answer, context kept)
        assert resp.status_code == 200, resp.text
        assert "LLM 调用失败" in resp.json()["response"] and resp.json()["context"], resp.text
        # the service answers afterwards: context only (no LLM needed) and health
        only = client.post("/api/query", json={**body, "param": {"mode": "local", "only_need_context": True}})
        assert only.status_code == 200 and only.json()["context"], only.text
        assert client.get("/healthz").status_code == 200
    print(f"\n/api/query with the LLM {kind}: {resp.status_code} {resp.text[:200]}")


# -- disk full ---------------------------------------------------------------------------------------------------

FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal, as a full disk gives ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
try:
{body}
except OSError as exc:
    print(f"write failed: {{type(exc).__name__}}: {{exc}}")
    sys.exit(3)
print("write succeeded")
"""


def write_with_full_disk(body: str, limit: int = 64 * 1024) -> subprocess.CompletedProcess[str]:
    """Run ``body`` (python) in a subprocess whose files cannot grow beyond ``limit`` bytes."""
    code = FULL_DISK.format(limit=limit, body=textwrap.indent(textwrap.dedent(body), "    "))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parent.parent)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


def test_disk_full_while_saving_a_checkpoint_keeps_the_previous_one(tmp_path: Path) -> None:
    from kgrag.hrag.train import save_checkpoint

    path = tmp_path / "checkpoints" / "best.pt"
    path.parent.mkdir()
    save_checkpoint({"model": {"w": torch.ones(8)}, "epoch": 1}, path)
    before = path.read_bytes()
    result = write_with_full_disk(f"""
        import torch
        from pathlib import Path
        from kgrag.hrag.train import save_checkpoint
        save_checkpoint({{"model": {{"w": torch.zeros(200_000)}}, "epoch": 2}}, Path({str(path)!r}))
    """)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "File too large" in result.stdout  # the clear error the caller gets
    assert path.read_bytes() == before and leftovers(path.parent) == []
    assert torch.load(path, weights_only=True)["epoch"] == 1


GRAPH = {"entities": 1, "named_entities": 1, "relations": 1, "triples": 754, "duplicates_dropped": 0,
         "malformed_lines": 0, "rdf_triples": 754}
QUESTIONS = {"questions": 18, "per_split_hop": {"test": {"1hop": 18}}, "unreachable_within_3": 0,
             "unresolved_topic": 0, "unresolved_answers": 0, "malformed_lines": 0}


def test_disk_full_while_writing_artifacts_keeps_the_previous_ones_and_the_app_answers(
        work_settings: Settings) -> None:
    """The data-prep summary (markdown + JSON artifacts) and an answers report: previous versions intact."""
    out = work_settings.dataset_dir("demo")
    fingerprint = steps.input_fingerprint("demo", work_settings.data_dir)
    steps.build_graph("demo", work_settings.data_dir, out, fingerprint)
    steps.load_store(out, fingerprint)
    from kgrag.prep.summary import write_summary

    write_summary(out, "demo", GRAPH, {"store_triples": 754}, QUESTIONS)
    summary = {name: (out / name).read_bytes() for name in ("summary.md", "summary.json")}
    report = work_settings.artifact_dir / "answers_demo.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text('{"report": "previous"}')
    result = write_with_full_disk(f"""
        from pathlib import Path
        from kgrag.hrag.gflownet.evaluate import write_answers_report
        from kgrag.prep.summary import write_summary
        failures = []
        for write in (lambda: write_summary(Path({str(out)!r}), "demo", {GRAPH!r}, {{"store_triples": 754}},
                                            {{**{QUESTIONS!r}, "blob": "x" * 200_000}}),
                      lambda: write_answers_report(Path({str(report.parent)!r}), "demo",
                                                   {{"all": {{"n": 1}}}}, {{"blob": "y" * 200_000}})):
            try:
                write()
            except OSError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]
    """)
    assert result.returncode == 3 and "File too large" in result.stdout, result.stdout + result.stderr
    assert {name: (out / name).read_bytes() for name in summary} == summary
    assert report.read_text() == '{"report": "previous"}'
    assert leftovers(out) == [] and leftovers(report.parent) == []
    with TestClient(create_app(work_settings)) as client:  # the service still answers on that work dir
        assert client.get("/healthz").json()["datasets"] == ["demo"]
        assert client.get("/api/datasets").json()["demo"]["triples"] == 754
