"""The network agent without labelled questions (issue 33): answer quality and cost of its intent planners.

    python -m bench.kn_self [--networks demo,medical,synthetic] [--medical-db PATH] [--limit N]

Each network is loaded into a fresh SQLite store (the medical one may be reused with ``--medical-db``: its
domain vectors stay where that load put them) with a fresh work dir: nothing trained, an empty embedding cache (no
question vector is cached: latencies include encoding the question). Per network, in the same run:

- **zero-shot** (``KGRAG_AGENT_INTENT=none``): the candidates that start at the topic's type, ranked by meaning,
  words and answer type (:mod:`kgrag.agent.kn.zero_shot`);
- **self** (``KGRAG_AGENT_INTENT=self``) after ``train-intent --source self`` (timed): plus the ranker trained on
  questions synthesised from the network;
- **labelled** (medical only): the ranker trained on CE-Prompt's labelled questions (the reference; its split is
  the one every medical figure is measured on).

Questions and their splits:

- demo: ``bench/questions/demo_dev.jsonl`` (210; the planner's author looked at these) and
  ``bench/questions/demo_holdout.jsonl`` (210; other wordings, written apart from the planner, measured once);
- medical: the ``train-intent`` (labelled) run's seeded validation split — CE-Prompt questions with a parsable
  Cypher and a non-empty gold answer (n = 1,798 with the default seed); ``--limit`` cuts it;
- synthetic: ``bench/questions/synthetic.jsonl`` (200 one-relation questions, gold from the links).

Figures per (network, split, planner): answer F1 (set), hit, exact, topic accuracy, p50/p95 ms of a whole agent
turn in-process (the first question, which builds the planner, excluded). Written to ``bench/results/kn_self.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import RESULTS, write_result

QUESTIONS = Path(__file__).resolve().parent / "questions"


def progress(message: str) -> None:
    print(f"[bench.kn_self] {message}", flush=True)


def _env(db: str, work: Path, intent: str) -> None:
    """The agent's settings: this store, this work dir (its embedding cache: ``<work>/cache``), this planner."""
    from kgrag.agent.resources import _cached
    from kgrag.config import get_settings

    os.environ.update(KGRAG_DATABASE_URL=db, KGRAG_WORK_DIR=str(work), KGRAG_LLM_BASE_URL="",
                      KGRAG_AGENT_INTENT=intent, HF_HUB_OFFLINE="1")
    get_settings.cache_clear()
    _cached.cache_clear()


def _evaluate(kn: str, path: Path, limit: int | None = None) -> dict:
    from graphs.agent.run import agent_answerer
    from kgrag.agent.evaluation.evaluate import evaluate, read_questions

    items, skipped = read_questions(path)
    items = items[:limit] if limit else items
    answer = agent_answerer(kn, False)
    answer(items[0].question)  # builds the planner (profile, vectors): not a question's cost
    report = evaluate(items, answer)
    f = report["figures"]
    return {k: f[k] for k in ("n", "f1", "hit", "exact", "topic_acc", "p50_ms", "p95_ms", "intent_planner")}


def _train_self(kn: str) -> dict:
    from kgrag.agent.training.train_self_intent import train_self_intent
    from kgrag.config import get_settings

    t0 = time.perf_counter()
    result = train_self_intent(get_settings(), kn, force=True, log=progress)
    return {"seconds": round(time.perf_counter() - t0, 2), "questions": result["questions"],
            "labels": result["labels"], "candidates": result["candidates"],
            "train_seconds": round(result["train_seconds"], 2), "profile_seconds": round(result["profile_seconds"], 2)}


def _load(name: str, db: str) -> float:
    from kgrag.network.loaders.registry import load_named
    from kgrag.network.store import NetworkStore

    store = NetworkStore(db)
    try:
        return round(load_named(name, store).seconds, 1)
    finally:
        store.close()


def run_network(kn: str, root: Path, medical_db: str | None, limit: int | None) -> dict:
    work = root / f"work-{kn}"
    db = medical_db if (kn == "medical" and medical_db) else f"sqlite:///{root / f'{kn}.db'}"
    _env(db, work, "none")
    out: dict = {}
    if not (kn == "medical" and medical_db):
        progress(f"loading {kn}")
        out["load_seconds"] = _load(kn, db)
    splits: dict[str, Path] = {}
    if kn == "demo":
        splits = {"dev": QUESTIONS / "demo_dev.jsonl", "holdout": QUESTIONS / "demo_holdout.jsonl"}
    elif kn == "synthetic":
        splits = {"all": QUESTIONS / "synthetic.jsonl"}
    else:
        from kgrag.agent.training.train_intent import train_intent
        from kgrag.config import get_settings

        progress("training the labelled ranker (for its validation split and as the reference)")
        result = train_intent(get_settings(), force=False, log=progress)
        splits = {"validation": Path(result["run_dir"]) / "validation.jsonl"}
    for planner in ("zero-shot", "self", *(["labelled"] if kn == "medical" else [])):
        intent = {"zero-shot": "none", "self": "self", "labelled": "labelled"}[planner]
        _env(db, work, intent)
        if planner == "self":
            progress(f"{kn}: self-supervised training")
            out["self_training"] = _train_self(kn)
            _env(db, work, intent)
        for split, path in splits.items():
            progress(f"{kn} {split}: {planner}")
            out.setdefault(split, {})[planner] = _evaluate(kn, path, limit if kn == "medical" else None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="demo,medical,synthetic")
    parser.add_argument("--medical-db", help="a SQLite URL already holding the medical network (else loaded)")
    parser.add_argument("--limit", type=int, default=None, help="medical: only the first N validation questions")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-kn-self-"))
    # networks run apart keep each other's figures (bench/results/kn_self.json merges them)
    previous = RESULTS / "kn_self.json"
    figures: dict = json.loads(previous.read_text())["figures"] if previous.is_file() else {}
    try:
        for kn in args.networks.split(","):
            figures[kn] = run_network(kn.strip(), root, args.medical_db, args.limit)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rows = []
    for kn, result in figures.items():
        for split, planners in result.items():
            if not isinstance(planners, dict) or "zero-shot" not in planners:
                continue
            for planner, f in planners.items():
                rows.append(f"| {kn} | {split} | {planner} | {f['n']} | {f['f1']:.4f} | {f['topic_acc']} | "
                            f"{f['p50_ms']:.1f} / {f['p95_ms']:.1f} |")
    print("| network | split | planner | n | answer F1 | topic acc | p50 / p95 ms |\n|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    baseline = {kn: {split: p["zero-shot"]["f1"] for split, p in r.items() if isinstance(p, dict) and "zero-shot" in p}
                for kn, r in figures.items()}
    ratio = {kn: {split: round(p["self"]["f1"] / max(p["zero-shot"]["f1"], 1e-9), 4)
                  for split, p in r.items() if isinstance(p, dict) and "self" in p}
             for kn, r in figures.items()}
    n = sum(p["zero-shot"]["n"] for r in figures.values() for p in r.values() if isinstance(p, dict) and "zero-shot" in p)
    write_result("kn_self", figures, {"zero_shot_f1": baseline}, {"self_over_zero_shot_f1": ratio},
                 "demo dev+holdout; medical labelled run's validation split; synthetic 200", n)


if __name__ == "__main__":
    main()
