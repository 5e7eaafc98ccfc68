"""The retriever flows end-to-end on the demo KG (Prefect test harness) and the CLI around them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from flows.prepare_data import prepare_data
from flows.retriever_eval import retriever_eval
from flows.train_retriever import train_retriever
from kgrag.cli import app
from kgrag.hrag.g_agent import GAgentSplit
from kgrag.prep.steps import read_prepared_questions

TINY = {"top_n": 100, "max_triples": 600, "epochs": 3, "batch_questions": 4, "negatives": 32, "hidden": 32,
        "proj": 16, "entity_proj": 8, "early_stop_k": 10, "patience": 3}


def test_train_and_eval_flows_on_demo(prefect_harness, work_settings, tmp_path):
    prepare_data(dataset="demo")
    trained = train_retriever(dataset="demo", config=TINY, train_split="test", validation_split="test")
    assert len(trained["history"]) == 3 and trained["samples"][0]["questions"] == 18
    again = train_retriever(dataset="demo", config=TINY, train_split="test", validation_split="test")
    assert again["resumed_from"] == 3 and again["checkpoint"] == trained["checkpoint"]  # finished run: no retraining

    result = retriever_eval(dataset="demo", run_all_splits=False, split="test")
    part = result["test"]
    assert part["report"]["all"]["n"] == 18
    assert {"1-hop", "2-hop", "3-hop", "all"} <= set(part["report"])
    assert 0.0 <= part["report"]["all"]["answer_recall@50"] <= 1.0
    g_agent = GAgentSplit.load(part["g_agent"])
    assert len(g_agent) == 18 and g_agent.meta["mode"] == "pruned" and g_agent.meta["top_k"] == 100
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
