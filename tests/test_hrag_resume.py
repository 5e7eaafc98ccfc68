"""A stage killed midway (SIGKILL) continues from its last completed part: the G_retrieval sample build and the
relation-chain labels are killed by a real SIGKILL in a child process after a few parts, then run again here; the
parts on disk are read back (said on stderr), the rest built, and the result is exactly an uninterrupted build's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.chain_labels import best_chains, cached_chains
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.pipeline import question_samples
from kgrag.hrag.retrieval.questions import HragQuestion
from kgrag.hrag.retrieval.resumable import Parts
from kgrag.hrag.retrieval.samples import build_samples

ROOT = Path(__file__).resolve().parent.parent

#: a seeded random graph and 260 questions (answers: what a topic reaches in 1–2 steps), built the same way here
#: and in the child process
WORLD = textwrap.dedent("""
    import numpy as np
    from kgrag.graph.csr import CSRGraph
    from kgrag.hrag.retrieval.questions import HragQuestion

    def world():
        rng = np.random.default_rng(7)
        n, m = 400, 2000
        head, tail = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = head != tail
        rel = rng.integers(0, 6, m)
        graph = CSRGraph(name="w", iri_base="http://w/", entity_keys=[f"e{i}" for i in range(n)],
                         entity_ids=[f"e{i}" for i in range(n)], entity_names=[f"e {i}" for i in range(n)],
                         relations=[f"r{i}" for i in range(6)], head=head[keep].astype(np.int32),
                         rel=rel[keep].astype(np.int32), tail=tail[keep].astype(np.int32))
        questions = []
        for topic in range(260):  # 260 topic sets: whole PPR batches of 64 make 5 parts
            ends = graph.tail[graph.head == topic][:3].tolist()
            questions.append(HragQuestion(f"q{topic}", f"what about [e {topic}]", [topic], [int(e) for e in ends],
                                          1, "train"))
        return graph, questions
""")


#: what a child process uses to die midway: ``kill_when(module, name, folder, pattern, parts)`` wraps
#: ``module.<name>`` so that the call made once ``parts`` files match ``folder/pattern`` SIGKILLs the process
KILLER = textwrap.dedent("""
    import os, signal
    from pathlib import Path

    def kill_when(module, name, folder, pattern, parts):
        inner = getattr(module, name)

        def killing(*args, **kwargs):
            if len(list(Path(folder).glob(pattern))) >= parts:
                os.kill(os.getpid(), signal.SIGKILL)
            return inner(*args, **kwargs)

        setattr(module, name, killing)
""")


def _world() -> tuple[CSRGraph, list[HragQuestion]]:
    scope: dict = {}
    exec(WORLD, scope)  # noqa: S102 - the one definition both processes use
    return scope["world"]()


def _killed_child(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-c", WORLD + KILLER + textwrap.dedent(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, **(env or {})})
    assert proc.returncode == -9, f"the child was not killed: rc {proc.returncode}\n{proc.stderr[-2000:]}"
    return proc


def test_parts_are_read_back_by_the_next_run_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    save = lambda value, path: np.save(path, value)  # noqa: E731
    first = Parts(tmp_path / "job.parts", 3, save, np.load, suffix=".npy", label="job")
    assert [int(first.get(k, lambda k=k: np.array(k * 10))) for k in range(2)] == [0, 10]
    again = Parts(tmp_path / "job.parts", 3, save, np.load, suffix=".npy", label="job")
    built = []
    values = [int(again.get(k, lambda k=k: built.append(k) or np.array(k * 10))) for k in range(3)]
    assert values == [0, 10, 20] and built == [2] and (again.resumed, again.built) == (2, 1)
    err = capsys.readouterr().err
    assert "resumed: job: part 1 of 3 read back" in err and "part 2 of 3" in err and "part 3 of 3" not in err
    again.clear()
    assert not (tmp_path / "job.parts").exists()


def test_a_sample_build_killed_midway_continues_from_its_last_part(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cfg = RetrieverConfig(top_n=50, max_triples=200)
    folder = tmp_path / "hrag"
    _killed_child(f"""
        from kgrag.hrag.retrieval.config import RetrieverConfig
        from kgrag.hrag.retrieval.pipeline import question_samples
        graph, questions = world()
        folder = Path({str(folder)!r})

        def progress(done, total):
            parts = list(folder.glob("*.parts/*of*.npz"))
            if len(parts) >= 3:
                os.kill(os.getpid(), signal.SIGKILL)

        question_samples(graph, questions, RetrieverConfig(top_n=50, max_triples=200), folder, "kill",
                         progress=progress, part_questions=64)
    """)
    left = sorted(p.name for p in folder.glob("*.parts/*.npz"))
    assert len(left) == 3 and not list(folder.glob("samples_kill_*.npz")), left

    graph, questions = _world()
    samples = question_samples(graph, questions, cfg, folder, "kill", part_questions=64)
    err = capsys.readouterr().err
    assert err.count("resumed: G_retrieval (kill): part") == 3 and "of 5 read back" in err
    whole = build_samples(graph, questions, cfg.top_n, cfg.max_triples)
    for name in ("triples", "group_ptr", "head_dist", "tail_dist", "positives", "pos_ptr", "answers", "group_of"):
        assert np.array_equal(getattr(samples, name), getattr(whole, name)), name
    assert samples.qids == whole.qids and not list(folder.glob("*.parts"))  # parts dropped once merged


def test_chain_labels_killed_midway_continue_from_their_last_part(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "hrag"
    _killed_child(f"""
        import kgrag.hrag.retrieval.chain_labels as labels
        graph, questions = world()
        folder = Path({str(folder)!r})
        kill_when(labels, "best_chains", folder, "*.parts/*of*.npz", 2)  # as the third part starts
        labels.cached_chains(folder, graph, [q.topics for q in questions], [q.answers for q in questions],
                             [q.hop for q in questions], 2, part_questions=10)
    """)
    assert len(list(folder.glob("*.parts/*.npz"))) == 2
    graph, questions = _world()
    args = ([q.topics for q in questions], [q.answers for q in questions], [q.hop for q in questions], 2)
    chains = cached_chains(folder, graph, *args, part_questions=10)
    assert capsys.readouterr().err.count("resumed: relation chains: part") == 2
    whole = best_chains(graph, *args)
    assert np.array_equal(chains.offsets, whole.offsets) and np.array_equal(chains.chains, whole.chains)
    assert np.array_equal(chains.f1, whole.f1) and chains.offsets[-1] > 0


def test_retriever_eval_killed_midway_continues_from_its_last_g_agent_part(
        prefect_harness, work_settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo KG's 18 questions in parts of 4: a child process runs ``flows.retriever_eval`` and is SIGKILLed
    as its third part starts; the next run reads the two finished parts back and writes the same g_agent."""
    from prefect.settings import PREFECT_API_URL
    from test_hrag_flows import TINY

    from flows.prepare_data import prepare_data
    from flows.retriever_eval import retriever_eval
    from flows.train_retriever import train_retriever
    from kgrag.config import get_settings
    from kgrag.hrag.retrieval.g_agent import GAgentSplit
    from kgrag.hrag.retrieval.pipeline import g_agent_file

    prepare_data(dataset="demo")
    train_retriever(dataset="demo", config=TINY, train_split="test", validation_split="test")
    whole = GAgentSplit.load(retriever_eval(dataset="demo", run_all_splits=False, split="test")["test"]["g_agent"])
    g_file = g_agent_file(get_settings(), "demo", "test")
    g_file.unlink()
    monkeypatch.setenv("KGRAG_HRAG_PART_QUESTIONS", "4")
    get_settings.cache_clear()
    _killed_child(f"""
        import flows.retriever_eval as stage
        kill_when(stage, "score_samples", {str(g_file.parent)!r}, "*.parts-*/*of*.pt", 2)  # as the third starts
        stage.retriever_eval(dataset="demo", run_all_splits=False, split="test")
    """, {"PREFECT_API_URL": str(PREFECT_API_URL.value())})  # the session's test server
    assert len(list(g_file.parent.glob("*.parts-*/*.pt"))) == 2 and not g_file.exists()
    again = GAgentSplit.load(retriever_eval(dataset="demo", run_all_splits=False, split="test")["test"]["g_agent"])
    assert capsys.readouterr().err.count("resumed: g_agent (test): part") == 2
    assert again.qids == whole.qids
    for key, tensor in whole.tensors.items():
        assert torch.allclose(again.tensors[key].double(), tensor.double(), atol=1e-4), key
    assert not list(g_file.parent.glob("*.parts-*"))  # parts dropped once the split is written

    # a split on request, with its own cap (a seeded sample); the cap without a split is refused in one line
    five = retriever_eval(dataset="demo", run_all_splits=False, split="test", max_questions=5)["test"]
    assert five["questions"] == 5 and len(GAgentSplit.load(five["g_agent"])) == 5
    from typer.testing import CliRunner

    from kgrag.cli import app

    res = CliRunner().invoke(app, ["retriever-eval", "--dataset", "demo", "--max-questions", "5"])
    assert res.exit_code == 1 and "--max-questions needs --split" in res.output and "Traceback" not in res.output
