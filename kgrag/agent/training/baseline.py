"""The issue's "30-line baseline" for the medical questions: the longest stored disease name found in the
question is the topic, and a char n-gram (1–3) TF-IDF + linear SVM (scikit-learn defaults) on the raw,
unmasked question picks the property / relation label. Kept deliberately simple: the yardstick for the
trained ranker (:mod:`kgrag.agent.kn.intent`).

Run: ``python -m flows.train_intent`` reports its accuracy on the same validation split.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

__all__ = ["BaselineIntent", "longest_name"]


def longest_name(question: str, names: set[str], max_len: int = 0) -> str | None:
    """The longest member of ``names`` that occurs in ``question`` (leftmost among equals), else ``None``."""
    max_len = max_len or max((len(n) for n in names), default=0)
    for size in range(min(max_len, len(question)), 0, -1):
        for start in range(len(question) - size + 1):
            if question[start : start + size] in names:
                return question[start : start + size]
    return None


class BaselineIntent:
    """Topic = the longest disease name in the question; label = char TF-IDF LinearSVC, question unmasked."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names = set(names)
        self._max_len = max((len(n) for n in self.names), default=0)
        self.model = make_pipeline(TfidfVectorizer(analyzer="char", ngram_range=(1, 3)), LinearSVC())

    @classmethod
    def train(cls, questions: Sequence[str], labels: Sequence[str],
              names: Iterable[str] = ()) -> BaselineIntent:
        baseline = cls(names)
        baseline.model.fit(list(questions), list(labels))
        return baseline

    def topic(self, question: str) -> str | None:
        return longest_name(question, self.names, self._max_len)

    def predict(self, questions: Sequence[str]) -> list[str]:
        return [str(label) for label in self.model.predict(list(questions))]

    def answer_target(self, question: str) -> tuple[str | None, str]:
        """``(topic, label)`` of one question."""
        return self.topic(question), self.predict([question])[0]
