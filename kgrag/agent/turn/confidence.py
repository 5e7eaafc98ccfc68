"""How sure an answer is, and what the agent does when it is not sure enough: the last word of both answer nodes
(:mod:`kgrag.agent.kn.steps`, :mod:`kgrag.agent.kg.steps`).

    settle({"answer": "Paris.", "answers": ["Paris"], "confidence": 0.3}, AgentSettings(min_confidence=0.5))
    # answers [] · withheld ["Paris"] · answer "I am not sure enough to answer (confidence 0.30, below 0.50) …"

- An answer whose ``confidence`` is below ``AgentSettings.min_confidence`` (``KGRAG_AGENT_MIN_CONFIDENCE``; 0 answers
  everything; unset, the default: the plan scorer's calibrated threshold for a calibrated answer, 0 for the others)
  is withheld: ``answers`` becomes empty, the values move to ``withheld`` (the best
  guess, which ``agent-eval`` scores at full coverage), and the text says so and why.
- The confidence of an answer not calibrated by the plan scorer (a query graph's, another planner's) is replaced
  by its fitted value (:func:`kgrag.agent.turn.answer_confidence.fitted_confidence`) before the threshold applies.
- Whatever the threshold, the parts of the question the plan did not use (``unused``: "before 1900", "how many")
  are said in the answer text, unless the text already names them.
"""

from __future__ import annotations

from typing import Any

from kgrag.agent.turn.answer_confidence import fitted_confidence
from kgrag.agent.turn.messages import answer_message
from kgrag.agent.turn.state import AgentSettings

__all__ = ["settle", "unused_sentence"]


def unused_sentence(unused: list[str]) -> str:
    """``I could not apply 'before 1900' or 'how many'.`` ("" when nothing was left out)."""
    parts = [f"'{u}'" for u in dict.fromkeys(u.strip() for u in unused) if u]
    if not parts:
        return ""
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    return f"I could not apply {joined}."


def settle(update: dict[str, Any], settings: AgentSettings, calibrated: float | None = None,
           source: str | None = None, question: str = "") -> dict[str, Any]:
    """The answer node's update with its confidence applied (see the module docstring); returns ``update``.
    ``calibrated``: the default threshold of an answer whose confidence is calibrated by its plan scorer (used when
    ``settings.min_confidence`` is None; another answer then has none); ``source`` (``query_graph`` / ``other``):
    whose fitted confidence (:mod:`kgrag.agent.turn.answer_confidence`) replaces the raw one of another answer
    (None: the confidence is kept as given); ``question``: the question asked (an input of the fit)."""
    threshold = settings.min_confidence if settings.min_confidence is not None else (calibrated or 0.0)
    if calibrated is None and source is not None and update.get("answers"):
        update["confidence"] = fitted_confidence(source, float(update.get("confidence") or 0.0),
                                                 len(update.get("unused") or []), update.get("cross_check"), question)
    text = update.get("answer", "")
    note = unused_sentence(list(update.get("unused") or []))
    if note and note not in text:
        text = f"{text} {note}".strip()
    values = list(update.get("answers") or [])
    confidence = float(update.get("confidence") or 0.0)
    if values and confidence < threshold:
        shown = ", ".join(values[: settings.max_listed])
        text = (f"I am not sure enough to answer (confidence {confidence:.2f}, below {threshold:.2f}). "
                f"My best guess is {shown}, from: {text}")
        update["withheld"] = values
        update["answers"] = []
        update["ranked"] = []
    if text != update.get("answer", ""):
        update["answer"] = text
        if update.get("messages"):
            update["messages"] = [answer_message(text)]
        if update.get("history"):
            update["history"] = [*update["history"][:-1], {**update["history"][-1], "answer": text}]
    return update
