"""Retriever evaluation: answer recall@K and shortest-path triple recall@K, per hop, with denominators.

For one question, its G_retrieval triples ranked by score (ties: lower triple id first):
- ``answer_recall@K`` — 1 when an answer entity is the head or tail of one of the top-K triples (the issue's
  definition; a question with no resolvable answer scores 0);
- ``answer_coverage@K`` — the share of its gold answers that appear in the top-K triples;
- ``path_triple_recall@K`` — the share of its shortest-path triples (all of them, also those PPR left out of
  G_retrieval) in the top-K; ``path_ceiling@K = min(K, |positives|) / |positives|`` is the best any ranking can
  do, since a question may have more positives than K (MetaQA 3-hop: median ~160).
Questions with no path within 3 hops stay in every denominator (scoring 0 on path recall) and are counted as
``no_path``. Rows: each hop present, then ``all``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kgrag.fileio import atomic_write
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.samples import RetrievalSamples

__all__ = ["DEFAULT_KS", "question_ranks", "recall_report", "report_table", "flat_metrics", "plot_recall", "save_figure"]

DEFAULT_KS = (50, 100, 200, 500)
_BIG = np.iinfo(np.int64).max


def question_ranks(graph: CSRGraph, triples: np.ndarray, scores: np.ndarray, answers: np.ndarray,
                   positives: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best rank (0-based) of each distinct answer entity (sorted) among the ranked triples, and the rank of each
    positive triple; ``_BIG`` where absent."""
    order = np.lexsort((triples, -scores))
    rank = np.empty(triples.size, dtype=np.int64)
    rank[order] = np.arange(triples.size)
    answers = np.unique(answers)
    answer_rank = np.full(answers.size, _BIG, dtype=np.int64)
    if answers.size and triples.size:
        ends = np.concatenate([graph.head[triples], graph.tail[triples]])
        hit = np.isin(ends, answers)
        np.minimum.at(answer_rank, np.searchsorted(answers, ends[hit]), np.concatenate([rank, rank])[hit])
    pos_rank = np.full(positives.size, _BIG, dtype=np.int64)
    if positives.size and triples.size:
        sorted_idx = np.argsort(triples, kind="stable")  # one sort serves the lookup and the way back
        where = np.minimum(np.searchsorted(triples[sorted_idx], positives), triples.size - 1)
        found = triples[sorted_idx[where]] == positives
        pos_rank[found] = rank[sorted_idx[where[found]]]
    return answer_rank, pos_rank


def recall_report(graph: CSRGraph, samples: RetrievalSamples, ptr: np.ndarray, scores: np.ndarray,
                  ks: Sequence[int] = DEFAULT_KS) -> dict[str, dict]:
    """Per-hop rows (``"1-hop"``… and ``"all"``) of means over questions; see the module docstring."""
    per_q: list[dict] = []
    for i in range(len(samples)):
        q = samples.question(i)
        s = scores[ptr[i] : ptr[i + 1]]
        answer_rank, pos_rank = question_ranks(graph, q.triples, s, q.answers, q.positives)
        row = {"hop": q.hop, "no_path": not q.has_path,
               "in_retrieval_answer": float((answer_rank < _BIG).any()),
               "in_retrieval_path": float((pos_rank < _BIG).mean()) if pos_rank.size else 0.0}
        for k in ks:
            row[f"answer_recall@{k}"] = float((answer_rank < k).any())
            row[f"answer_coverage@{k}"] = float((answer_rank < k).mean()) if answer_rank.size else 0.0
            row[f"path_triple_recall@{k}"] = float((pos_rank < k).mean()) if pos_rank.size else 0.0
            row[f"path_ceiling@{k}"] = min(k, pos_rank.size) / pos_rank.size if pos_rank.size else 0.0
        per_q.append(row)
    groups: dict[str, list[dict]] = {}
    for row in per_q:
        groups.setdefault(f"{row['hop']}-hop" if row["hop"] else "unknown-hop", []).append(row)
    report = {key: _mean_row(groups[key]) for key in sorted(groups)}
    report["all"] = _mean_row(per_q)
    return report


def _mean_row(rows: list[dict]) -> dict:
    out: dict = {"n": len(rows), "no_path": int(sum(r["no_path"] for r in rows))}
    if not rows:
        return out
    for key in rows[0]:
        if key not in ("hop", "no_path"):
            out[key] = float(np.mean([r[key] for r in rows]))
    return out


def flat_metrics(report: dict[str, dict], ks: Sequence[int] = DEFAULT_KS) -> dict:
    """The ``--json`` object: ``n`` and the ``all`` row's answer / path-triple recalls at each K."""
    row = report["all"]
    out: dict = {"n": row["n"], "no_path": row["no_path"]}
    for prefix in ("answer_recall", "answer_coverage", "path_triple_recall"):
        for k in ks:
            out[f"{prefix}@{k}"] = round(row.get(f"{prefix}@{k}", 0.0), 4)
    return out


def report_table(report: dict[str, dict], ks: Sequence[int] = DEFAULT_KS) -> str:
    """Markdown table: one row per hop, answer / path-triple recall at each K (path ceiling in brackets)."""
    head = ["rows", "n", "no path", *(f"ans@{k}" for k in ks), *(f"path@{k} (ceil)" for k in ks)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, row in report.items():
        cells = [key, str(row["n"]), str(row["no_path"])]
        cells += [f"{row.get(f'answer_recall@{k}', 0):.4f}" for k in ks]
        cells += [f"{row.get(f'path_triple_recall@{k}', 0):.4f} ({row.get(f'path_ceiling@{k}', 0):.3f})" for k in ks]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_recall(report: dict[str, dict], path: Path, title: str, ks: Sequence[int] = DEFAULT_KS) -> Path:
    """PNG: answer recall and path-triple recall vs K, one line per hop."""
    import matplotlib  # on use: matplotlib costs ~1.5 s at import; only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use (see above)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, prefix, label in ((axes[0], "answer_recall", "answer recall@K"),
                              (axes[1], "path_triple_recall", "shortest-path triple recall@K")):
        for key, row in report.items():
            ax.plot(list(ks), [row.get(f"{prefix}@{k}", 0) for k in ks], marker="o", label=f"{key} (n={row['n']})")
        ax.set_xscale("log")
        ax.set_xticks(list(ks), [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_xlabel("K (top triples)")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return save_figure(fig, path, title)


def plot_training_curve(history: Sequence[dict], path: Path, title: str) -> Path:
    """PNG of a retriever run: training loss (left) and the early-stop validation recalls (right) per epoch."""
    import matplotlib  # on use: matplotlib costs ~1.5 s at import; only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use (see above)

    epochs = [row["epoch"] for row in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(epochs, [row["loss"] for row in history], marker="o")
    left.set_xlabel("epoch")
    left.set_ylabel("training loss (mean per question)")
    for key in (k for k in (history[0] if history else {}) if k.startswith("val_") and "@" in k):
        right.plot(epochs, [row[key] for row in history], marker="o",
                   label=f"{key[4:]} (validation, n={history[0]['val_questions']})")
    right.set_ylim(0, 1.02)
    right.set_xlabel("epoch")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    return save_figure(fig, path, title)


def save_figure(fig, path: Path, title: str) -> Path:
    """Title, tight layout, PNG at ``path`` (folders made), figure closed."""
    import matplotlib.pyplot as plt  # on use (see above)

    fig.suptitle(title)
    fig.tight_layout()
    path = Path(path)
    try:
        atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png"))
    finally:
        plt.close(fig)
    return path
