"""The data-prep chart: triples per relation (the 20 largest) and questions per split and hop, as one PNG beside
the summary (``<work>/<dataset>/summary.png``; the prepare-data flow shows it as an image artifact).

    path = write_chart(Path("work/metaqa"), "metaqa")
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from kgrag.graph.csr import CSRGraph
from kgrag.prep.steps import read_prepared_questions

__all__ = ["write_chart"]


def write_chart(out_dir: Path, dataset: str, top: int = 20) -> Path:
    import matplotlib  # on use: matplotlib costs ~1.5 s at import; only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use (see above)

    graph = CSRGraph.load(out_dir / "graph.npz")
    counts = np.bincount(graph.rel, minlength=graph.num_relations)
    order = np.argsort(-counts, kind="stable")[:top]
    questions = Counter((q.get("split", "?"), int(q.get("hop") or 0)) for q in read_prepared_questions(out_dir))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    left.barh([graph.relations[i] for i in order][::-1], counts[order][::-1], color="#3b6ea8")
    left.set_title(f"{dataset}: triples per relation ({min(top, len(order))} of {graph.num_relations})")
    left.set_xlabel("triples")
    splits = sorted({s for s, _ in questions})
    hops = sorted({h for _, h in questions})
    width = 0.8 / max(1, len(hops))
    for j, hop in enumerate(hops):
        right.bar(np.arange(len(splits)) + j * width, [questions[(s, hop)] for s in splits], width,
                  label=f"{hop}-hop")
    right.set_xticks(np.arange(len(splits)) + width * (len(hops) - 1) / 2, splits)
    right.set_title(f"questions per split and hop ({sum(questions.values())})")
    if hops:  # a graph imported without questions has nothing to label
        right.legend()
    fig.tight_layout()
    path = out_dir / "summary.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
