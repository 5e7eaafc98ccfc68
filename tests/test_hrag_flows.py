"""The retriever flows end-to-end on the demo KG (Prefect test harness) and the CLI around them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.prepare_data import prepare_data
from flows.retriever_eval import retriever_eval
from flows.train_gflownet import train_gflownet
from flows.train_retriever import train_retriever
from kgrag.cli import app
from kgrag.hrag.online.file_eval import strip_brackets
from kgrag.hrag.online.reasoner import HRAGReasoner
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.questions import read_question_file
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.prep.steps import read_prepared_questions

GFLOWNET_TINY = {"dim": 16, "heads": 2, "layers": 1, "ffn": 32, "entity_dim": 4, "batch_questions": 8, "steps": 80,
                 "checkpoint_every": 20, "validation_questions": 18, "beam_width": 4, "lr": 1e-2, "explore_steps": 40,
                 "plan_warmup": 300}
TINY = {"top_n": 100, "max_triples": 600, "epochs": 3, "batch_questions": 4, "negatives": 32, "hidden": 32,
        "proj": 16, "entity_proj": 8, "early_stop_k": 10, "patience": 3}


def test_train_and_eval_flows_on_demo(prefect_harness, work_settings, tmp_path, oxigraph_server):
    prepare_data(dataset="demo")
    trained = train_retriever(dataset="demo", config=TINY, train_split="test", validation_split="test")
    assert len(trained["history"]) == 3 and trained["samples"][0]["questions"] == 18
    assert Path(trained["learning_curve"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the per-epoch curve image
    again = train_retriever(dataset="demo", config=TINY, train_split="test", validation_split="test")
    assert again["resumed_from"] == 3 and again["checkpoint"] == trained["checkpoint"]  # finished run: no retraining

    result = retriever_eval(dataset="demo", run_all_splits=False, split="test")
    part = result["test"]
    assert part["report"]["all"]["n"] == 18
    assert {"1-hop", "2-hop", "3-hop", "all"} <= set(part["report"])
    assert 0.0 <= part["report"]["all"]["answer_recall@50"] <= 1.0
    g_agent = GAgentSplit.load(part["g_agent"])
    assert len(g_agent) == 18 and g_agent.meta["mode"] == "pruned"
    assert g_agent.meta["top_k"] == RetrieverConfig().anchor_top_k  # g_agent's size follows the current default
    for name in ("json", "md", "png"):
        assert (work_settings.work_dir / "demo" / "hrag" / "eval" / f"test.{name}").is_file()

    # any MetaQA-format file through the CLI; --json prints the figures as the last line
    questions = read_prepared_questions(work_settings.work_dir / "demo")
    lines = []
    for q in questions:
        topic = q["topic_names"][0]
        text = q["text"] if f"[{topic}]" in q["text"] else q["text"].replace(topic, f"[{topic}]")
        lines.append(f"{text}\t{'|'.join(q['answer_names'])}")
    qfile = tmp_path / "demo_questions.txt"
    qfile.write_text("\n".join(lines) + "\nbroken line without a tab\n")
    runner = CliRunner()
    res = runner.invoke(app, ["retriever-eval", "--dataset", "demo", "--questions", str(qfile), "--hop", "2", "--json"])
    assert res.exit_code == 0, res.output
    figures = json.loads(res.output.strip().splitlines()[-1])
    assert figures["n"] >= 1 and "answer_recall@100" in figures and "path_triple_recall@100" in figures
    assert set(figures) >= {f"answer_recall@{k}" for k in (50, 100, 200, 500)}
    res = runner.invoke(app, ["retriever-eval", "--dataset", "demo", "--questions", str(tmp_path / "missing.txt")])
    assert res.exit_code == 1 and "question file not found" in res.output and "Traceback" not in res.output

    # System 2 on the g_agent just written: train (train = validation = the demo's test split), then answer
    reasoned = train_gflownet(dataset="demo", config=GFLOWNET_TINY, train_split="test", validation_split="test")
    assert [row["step"] for row in reasoned["history"]] == [20, 40, 60, 80]
    assert Path(reasoned["learning_curve"]).is_file() and reasoned["validation"]["report"]["all"]["n"] == 18
    learned = reasoned["validation"]["report"]["all"]["hits@1"]
    uniform = _uniform_policy_hits1(work_settings, reasoned["checkpoint"])
    assert learned > uniform + 0.2, (learned, uniform)

    res = runner.invoke(app, ["eval", "--dataset", "demo", "--questions", str(qfile), "--json"])
    assert res.exit_code == 0, res.output
    figures = json.loads(res.output.strip().splitlines()[-1])
    assert set(figures) == {"n", "hits@1", "hit", "f1", "answer_seconds"} and figures["n"] == 18
    assert 0 < figures["answer_seconds"] < 60
    assert 0.0 <= figures["f1"] <= figures["hit"] <= 1.0 and figures["hits@1"] <= figures["hit"]
    res = runner.invoke(app, ["eval", "--dataset", "demo", "--split", "test"])
    assert res.exit_code == 0 and "Hits@1" in res.output, res.output
    # topics linked from the text, brackets stripped: the same interface; one demo question names two entities
    # ("which character did [Greta Ishikawa] play in The Silent Harbor"): the linker gives one topic, the film
    res = runner.invoke(app, ["eval", "--dataset", "demo", "--questions", str(qfile), "--no-brackets", "--json"])
    assert res.exit_code == 0, res.output
    linked = json.loads(res.output.strip().splitlines()[-1])
    assert linked["n"] == 18 and linked["hits@1"] >= figures["hits@1"] - 1 / 18 - 1e-9, (linked, figures)
    res = runner.invoke(app, ["eval", "--dataset", "demo", "--no-brackets"])
    assert res.exit_code == 1 and "--no-brackets needs --questions" in res.output

    # one question in memory equals the batch path, and writes nothing
    reasoner = HRAGReasoner.load(work_settings, "demo")
    read = read_question_file(qfile, reasoner.graph)
    batch = reasoner.rank(read.questions)
    before = sorted(p.name for p in work_settings.work_dir.rglob("*"))
    for q, ranked in zip(read.questions, batch.ranked, strict=True):
        single = reasoner.answer(q.text, k=50)
        # the same answers in the same order, scores equal to float32 rounding (a batch's kernels may differ from
        # one question's in the last bits: 0.33719 against 0.33718 seen on an Intel Xeon)
        assert [a.entity for a in single.answers] == [e for e, _ in ranked[:50]]
        assert [a.score for a in single.answers] == pytest.approx([s for _, s in ranked[:50]], abs=1e-5)
        assert single.answers and single.answers[0].paths and single.ms["total"] > 0
    assert sorted(p.name for p in work_settings.work_dir.rglob("*")) == before
    plain = reasoner.answer(strip_brackets(read.questions[0].text))
    assert plain.topics and plain.linked == read.questions[0].text.strip() or plain.answers
    nothing = reasoner.answer("zzqx qqzz")
    assert nothing.answers == [] and "no topic entity" in nothing.note

    # the same trained chain over the demo served by `oxigraph serve`: each question's neighbourhood by SPARQL
    from harness.servers.ports import free_port
    from kgrag.graph.remote_store import RemoteStore
    from kgrag.hrag.online.endpoint_reasoner import EndpointReasoner
    from kgrag.hrag.online.sparql_neighbourhood import ExpansionLimits

    remote = EndpointReasoner(reasoner, RemoteStore(oxigraph_server.url), reasoner.graph.iri_base)
    same = 0
    for q, ranked in zip(read.questions, batch.ranked, strict=True):
        served = remote.answer(q.text, [reasoner.graph.entity_ids[t] for t in q.topics])
        assert served.ms["expand"] > 0 and not served.note, served.note
        local_top = reasoner.graph.entity_ids[ranked[0][0]] if ranked else None
        same += bool(served.answers) and served.answers[0].entity_id == local_top
    assert same >= len(read.questions) - 1, (same, len(read.questions))  # the demo's neighbourhoods are whole
    dead = EndpointReasoner(reasoner, RemoteStore(f"http://127.0.0.1:{free_port()}/query", timeout=2, retries=0),
                            reasoner.graph.iri_base, ExpansionLimits(timeout_s=2))
    failed = dead.answer(read.questions[0].text, [reasoner.graph.entity_ids[read.questions[0].topics[0]]])
    assert failed.answers == [] and "SPARQL endpoint failed" in failed.note


def _uniform_policy_hits1(settings, checkpoint: str) -> float:
    """Hits@1 on the demo test g_agent of the trained policy's architecture with select, Stop and planner heads
    zeroed and no score prior: every relation group and Stop equally likely, every legal candidate of a group
    equally likely."""
    import torch

    from kgrag.hrag.gflownet.evaluate import evaluate_split, load_trained_policy
    from kgrag.hrag.retrieval import pipeline
    from kgrag.hrag.retrieval.text import TextEmbeddings

    trained = load_trained_policy(settings, "demo", Path(checkpoint))
    for head in (trained.policy.select, trained.policy.stop, trained.policy.planner.out[-1]):
        torch.nn.init.zeros_(head.weight)
        torch.nn.init.zeros_(head.bias)
    torch.nn.init.zeros_(trained.policy.score_prior)
    trained.threshold = 1.0
    graph = load_graph(settings, "demo")
    text = TextEmbeddings.for_graph(graph, pipeline.hrag_dir(settings, "demo"))
    return evaluate_split(settings, "demo", "test", trained, text).report["all"]["hits@1"]
