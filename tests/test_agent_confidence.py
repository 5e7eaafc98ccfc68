"""The answer's confidence: withheld below the threshold, the unused parts said (kgrag.agent.turn.confidence), and
agent-eval's coverage figures (kgrag.agent.evaluation.evaluate)."""

from __future__ import annotations

from kgrag.agent.evaluation.evaluate import EvalItem, evaluate
from kgrag.agent.turn.confidence import settle, unused_sentence
from kgrag.agent.turn.state import AgentSettings


def test_below_the_threshold_the_answer_is_withheld_and_says_why() -> None:
    update = settle({"answer": "Paris.", "answers": ["Paris"], "confidence": 0.3, "messages": [object()],
                     "history": [{"question": "q", "answer": "Paris."}]}, AgentSettings(min_confidence=0.5))
    assert update["answers"] == [] and update["withheld"] == ["Paris"]
    assert "not sure" in update["answer"] and "0.30" in update["answer"] and "Paris" in update["answer"]
    assert update["history"][-1]["answer"] == update["answer"]
    assert update["messages"][0].content == update["answer"]


def test_at_the_default_threshold_everything_is_answered_and_unused_parts_are_said() -> None:
    update = settle({"answer": "Paris, Lyon.", "answers": ["Paris", "Lyon"], "confidence": 0.1,
                     "unused": ["before 1900", "how many"]}, AgentSettings())
    assert update["answers"] == ["Paris", "Lyon"] and "withheld" not in update
    assert update["answer"].endswith("I could not apply 'before 1900' or 'how many'.")
    assert unused_sentence([]) == ""


def test_agent_eval_scores_full_coverage_and_the_confident_answers() -> None:
    states = {"a": {"answers": ["1"], "confidence": 0.9},
              "b": {"answers": [], "withheld": ["2"], "confidence": 0.2},  # right, but withheld
              "c": {"answers": ["x"], "confidence": 0.7}}  # wrong
    items = [EvalItem("a", ("1",)), EvalItem("b", ("2",)), EvalItem("c", ("3",))]
    figures = evaluate(items, states.__getitem__, threshold=0.5)["figures"]
    assert figures["hit"] == round(2 / 3, 4)  # full coverage: the withheld guess counts
    assert figures["coverage"] == round(2 / 3, 4) and figures["answered"] == 2
    assert figures["hit_answered"] == 0.5
    by_threshold = {row["threshold"]: row for row in figures["selective"]}
    assert by_threshold[0.0]["coverage"] == 1.0 and by_threshold[0.75]["hit_answered"] == 1.0
    assert by_threshold[0.9]["answered"] == 1 and by_threshold[0.9]["f1_answered"] == 1.0
    none = evaluate(items[1:], states.__getitem__, threshold=0.95)["figures"]
    assert none["answered"] == 0 and none["f1_answered"] is None and none["coverage"] == 0.0


def test_a_fitted_source_replaces_its_raw_confidence(tmp_path, monkeypatch) -> None:
    import json
    import math

    from kgrag.agent.turn import answer_confidence as fitted

    fit = tmp_path / "answer_confidence.json"
    fit.write_text(json.dumps({"sources": {"query_graph": {"raw": 4.0, "unused": -2.0, "intercept": -1.0}}}))
    monkeypatch.setattr(fitted, "FIT_FILE", fit)
    fitted._fits.cache_clear()
    try:
        assert fitted.fitted_confidence("query_graph", 1.0, 0) == round(1 / (1 + math.exp(-3.0)), 4)
        assert fitted.fitted_confidence("query_graph", 1.0, 2) == round(1 / (1 + math.exp(-1.0)), 4)
        assert fitted.fitted_confidence("other", 0.42, 0) == 0.42  # no fit: the raw value
        sure = settle({"answer": "3.", "answers": ["3"], "confidence": 1.0}, AgentSettings(min_confidence=0.9),
                      source="query_graph")
        assert sure["confidence"] == 0.9526 and sure["answers"] == ["3"]
        unsure = settle({"answer": "3.", "answers": ["3"], "confidence": 1.0, "unused": ["before 1900"]},
                        AgentSettings(min_confidence=0.9), source="query_graph")
        assert unsure["answers"] == [] and "0.73" in unsure["answer"]  # fitted, then withheld below 0.9
        plan = settle({"answer": "3.", "answers": ["3"], "confidence": 0.8}, AgentSettings(), 0.74,
                      source="query_graph")
        assert plan["confidence"] == 0.8  # calibrated by its scorer already: kept
        assert fitted.content_words("How many books did George Orwell write?") == 5  # many books george orwell write
        monkeypatch.setenv("KGRAG_ANSWER_CONFIDENCE", "raw")
        assert fitted.fitted_confidence("query_graph", 1.0, 0) == 1.0
    finally:
        fitted._fits.cache_clear()
