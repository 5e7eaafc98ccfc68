"""``kgrag ask`` and ``kgrag agent-eval`` on fixed inputs over the real medical network (LLM-free)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kgrag.cli import app

runner = CliRunner()


def _last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_ask_prints_the_steps_and_json(medical_settings) -> None:
    res = runner.invoke(app, ["ask", "上气道梗阻有哪些症状", "--kn", "medical"])
    assert res.exit_code == 0, res.output
    for part in ("extract_keywords", "schema_recall", "contextual_recall", "tool calls", "evidence", "answer:",
                 "上气道梗阻", "呼吸困难", "Disease:上气道梗阻 -[has_symptom]-> "):
        assert part in res.output, part
    res = runner.invoke(app, ["ask", "上气道梗阻有哪些症状", "--kn", "medical", "--json"])
    state = json.loads(res.output)
    assert state["topic"]["name"] == "上气道梗阻" and "呼吸困难" in state["answers"]


def test_ask_thread_follow_up_and_bad_thread_id(medical_settings) -> None:
    first = json.loads(runner.invoke(app, ["ask", "百日咳吃什么药", "--thread", "t1", "--json"]).output)
    assert first["topic"]["name"] == "百日咳"
    follow = json.loads(runner.invoke(app, ["ask", "它有哪些症状", "--thread", "t1", "--json"]).output)
    assert follow["topic"]["name"] == "百日咳" and "痉挛性咳嗽" in follow["answers"]
    res = runner.invoke(app, ["ask", "它有哪些症状", "--thread", "../etc/passwd"])
    assert res.exit_code == 1 and "invalid thread id" in res.output


def test_agent_eval_jsonl_and_ce_prompt(medical_settings, tmp_path: Path) -> None:
    jsonl = tmp_path / "q.jsonl"
    symptoms = json.loads(runner.invoke(app, ["ask", "上气道梗阻有哪些症状", "--json"]).output)["answers"]
    jsonl.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in (
        {"question": "上气道梗阻有哪些症状", "answers": symptoms, "topic": "上气道梗阻"},
        {"question": "上气道梗阻有哪些症状", "answers": ["不存在的答案"]},
        {"question": "x", "answers": []})) + "\n", encoding="utf-8")
    out = tmp_path / "pred.jsonl"
    res = runner.invoke(app, ["agent-eval", "--kn", "medical", "--questions", str(jsonl), "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    figures = _last_json(res.output)
    assert set(figures) == {"n", "hit", "f1", "exact", "topic_acc", "p50_ms", "intent_planner", "threshold", "coverage",
                            "hit_answered", "f1_answered"}
    assert figures["n"] == 2 and figures["hit"] == 0.5 and figures["exact"] == 0.5 and figures["topic_acc"] == 1.0
    assert "empty answers 1" in res.output and len(out.read_text().splitlines()) == 2

    ce = tmp_path / "ce.json"
    ce.write_text(json.dumps([
        {"input": "百日咳有哪些症状", "cypher": "MATCH (d:Disease {name: '百日咳'})-[:has_symptom]->(s:Symptom) "
                                               "RETURN s.name"},
        {"input": "百日咳是什么", "cypher": "MATCH (d:Disease {name: '百日咳'}) RETURN d"},
    ], ensure_ascii=False), encoding="utf-8")
    res = runner.invoke(app, ["agent-eval", "--questions", str(ce), "--json"])
    figures = _last_json(res.output)
    assert figures["n"] == 1 and figures["topic_acc"] == 1.0 and figures["f1"] > 0.9
    assert "skipped" in res.output


def test_agent_eval_rejects_bad_files(medical_settings, tmp_path: Path) -> None:
    res = runner.invoke(app, ["agent-eval", "--questions", str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 1 and "no question file" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"q": 1}\n', encoding="utf-8")
    # wide enough that the path is not wrapped (a pytest-xdist worker's temp path is 10 characters longer)
    res = runner.invoke(app, ["agent-eval", "--questions", str(bad)], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "bad.jsonl:1" in res.output


def test_an_over_long_question_is_refused_in_one_line_without_echoing_it(work_settings) -> None:
    question = "who directed Carnival Lights " * 100  # 2,900 characters; the agent accepts 2,000
    for extra in ([], ["--json"], ["--kg", "demo"]):
        res = runner.invoke(app, ["ask", question, *extra])
        assert res.exit_code == 1, res.output
        assert res.output.strip() == "error: the question has 2900 characters; at most 2000 are accepted"
        assert "Carnival" not in res.output
    empty_kn = runner.invoke(app, ["ask", "who directed Carnival Lights?", "--kn", ""])
    assert empty_kn.exit_code == 1 and empty_kn.output.strip() == "error: invalid --kn: String should have at least 1 character"


def test_ask_exits_non_zero_when_it_could_not_answer(demo_untrained_settings) -> None:
    answered = runner.invoke(app, ["ask", "who directed Carnival Lights?", "--kg", "demo"])
    assert answered.exit_code == 0 and "Uma Halvorsen" in answered.output
    unlinked = runner.invoke(app, ["ask", "what is the airspeed of an unladen swallow", "--kg", "demo", "--json"])
    assert unlinked.exit_code == 1
    state = json.loads(unlinked.stdout)  # the final state still comes out whole, on stdout
    assert state["answers"] == [] and "could not link" in state["answer"]
    assert unlinked.stderr.startswith("error: no answer: I could not link the question")
    unknown = runner.invoke(app, ["ask", "who directed Carnival Lights?", "--kn", "nope"])
    assert unknown.exit_code == 1 and "error: no answer: unknown knowledge network 'nope'" in unknown.output
