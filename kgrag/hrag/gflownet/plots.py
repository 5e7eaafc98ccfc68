"""Learning curve of a GFlowNet run: loss, sampled-path correctness and validation Hits@1 per checkpoint."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kgrag.hrag.retrieval.metrics import save_figure

__all__ = ["plot_learning_curve"]


def plot_learning_curve(history: Sequence[dict], path: Path, title: str) -> Path:
    """PNG with the training loss (left) and the train correct share / validation Hits@1 (right) vs step."""
    import matplotlib  # on use: matplotlib costs ~1.5 s at import; only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use (see above)

    steps = [row["step"] for row in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(steps, [row["loss"] for row in history], marker="o")
    left.set_yscale("log")
    left.set_xlabel("step")
    left.set_ylabel("training loss (mean per checkpoint window)")
    right.plot(steps, [row["correct"] for row in history], marker="o", label="sampled paths ending at an answer")
    right.plot(steps, [row["val_hits@1"] for row in history], marker="o", label="validation Hits@1 (sample)")
    right.set_ylim(0, 1.02)
    right.set_xlabel("step")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    return save_figure(fig, path, title)
