"""Training and evaluation of the question → schema-element ranker on the CE-Prompt questions.

``train_intent(settings, config)``: read ``<data_dir>/medical/questions_cypher_train.json``, parse the
Cypher and execute it on the raw disease data (:func:`kgrag.agent.training.gold.load_ce_prompt`, skips counted by
reason), split the distinct question texts (NFKC/lower-case/space-normalised: the same text never lands in
both splits) per label into train and ``validation_fraction`` validation with ``seed`` (``Settings.seed`` when
unset), train :class:`~kgrag.agent.kn.intent.IntentRanker` on train, and evaluate on validation: accuracy@1/@3
(plain, with the schema's topic-type filter, with the labels the topic has data for), per-label
precision/recall, a confusion table, the majority class and the 30-line baseline
(:mod:`kgrag.agent.training.baseline`) on the SAME split, the label-noise bounds (validation questions whose
masked text is a train template with another majority label; an oracle told the annotation batch) and ``rank``
latency.

Files, under ``<work_dir>/checkpoints/intent/<config fingerprint>/``: ``ranker.npz`` + ``ranker.json`` (the
model), ``split.json`` (qids per split), ``train.jsonl`` / ``validation.jsonl`` (gold:
``{"qid", "question", "answers", "topic", "topic_type", "label"}``), ``metrics.json``,
``validation_predictions.json`` and ``confusion.png``; ``checkpoints/intent/medical-latest.json`` names the
latest run (:func:`load_latest_intent`, :func:`validation_questions`). A run whose folder already holds the
metrics of the same config and data returns them at once (``force=True`` retrains).

Run: ``python -m flows.train_intent`` (the Prefect flow ``train-intent`` wraps :func:`train_intent`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.svm import LinearSVC

from kgrag.agent.kn.intent import (
    DATASET,
    KIND,
    IntentConfig,
    IntentRanker,
    char_ngrams,
    latest_intent_dir,
    mask_question,
    normalize_text,
)
from kgrag.agent.training.baseline import BaselineIntent
from kgrag.agent.training.gold import (
    DiseaseIndex,
    GoldExample,
    available_labels,
    disease_index,
    load_ce_prompt,
    read_gold_jsonl,
    write_gold_jsonl,
)
from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.fileio import write_json
from kgrag.hrag.retrieval.metrics import save_figure
from kgrag.hrag.retrieval.pipeline import record_latest

__all__ = ["accuracy_markdown", "annotation_oracle", "annotation_style", "confusion_markdown",
           "evaluate_ranker", "intent_run_dir", "noise_bounds", "split_examples", "split_questions", "train_intent",
           "validation_questions"]


def _questions_file(settings: Settings) -> Path:
    return settings.data_dir / "medical" / "questions_cypher_train.json"


def _diseases_dir(settings: Settings) -> Path:
    return settings.data_dir / "medical" / "diseases"


def intent_run_dir(settings: Settings, config: IntentConfig) -> Path:
    return settings.checkpoint_dir / KIND / config.fingerprint()


def _data_stamp(settings: Settings, questions: Path | None = None) -> str:
    files = [questions or _questions_file(settings), *sorted(_diseases_dir(settings).glob("medical_*.json"))]
    raw = ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files if p.is_file())
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def _resolved(settings: Settings, config: IntentConfig | dict | None) -> IntentConfig:
    cfg = config if isinstance(config, IntentConfig) else IntentConfig(**(config or {}))
    return cfg if cfg.seed is not None else cfg.model_copy(update={"seed": settings.seed})


# ---- split ------------------------------------------------------------------------------------------------
def split_examples(examples: Sequence[GoldExample], fraction: float,
                   seed: int) -> tuple[list[int], list[int], dict]:
    """Indices ``(train, validation, info)``: distinct normalised question texts are shuffled per label (the
    label of their first occurrence) and ``round(fraction·n)`` of each label's texts (at least one when it has
    two, never all) go to validation, with every question of those texts."""
    first: dict[str, int] = {}
    for i, ex in enumerate(examples):
        first.setdefault(normalize_text(ex.question), i)
    by_label: dict[str, list[str]] = defaultdict(list)
    for text, i in first.items():
        by_label[examples[i].label].append(text)
    rng = random.Random(seed)
    held: set[str] = set()
    for label in sorted(by_label):
        texts = sorted(by_label[label])
        rng.shuffle(texts)
        k = int(round(len(texts) * fraction))
        if len(texts) >= 2:
            k = min(max(k, 1), len(texts) - 1)
        held.update(texts[:k])
    train, validation = [], []
    for i, ex in enumerate(examples):
        (validation if normalize_text(ex.question) in held else train).append(i)
    texts = Counter(normalize_text(ex.question) for ex in examples)
    info = {"questions": len(examples), "distinct_texts": len(texts),
            "duplicate_questions": len(examples) - len(texts),
            "texts_with_duplicates": sum(1 for n in texts.values() if n > 1),
            "duplicate_texts_with_conflicting_labels": sum(
                1 for labels in _labels_by_text(examples).values() if len(labels) > 1),
            "train": len(train), "validation": len(validation)}
    return train, validation, info


def _labels_by_text(examples: Sequence[GoldExample]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for ex in examples:
        out[normalize_text(ex.question)].add(ex.label)
    return out


# ---- evaluation -------------------------------------------------------------------------------------------
def _per_label(gold: Sequence[str], pred: Sequence[str], train_counts: Counter) -> list[dict]:
    support = Counter(gold)
    labels = sorted(set(gold) | set(pred), key=lambda lab: (-support[lab], lab))
    rows = []
    for lab in labels:
        tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == lab and p == lab)
        n_pred = sum(1 for p in pred if p == lab)
        n_gold = sum(1 for g in gold if g == lab)
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append({"label": lab, "train": train_counts.get(lab, 0), "support": n_gold, "predicted": n_pred,
                     "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)})
    return rows


def _confusion(gold: Sequence[str], pred: Sequence[str], top: int = 10) -> dict:
    """Rows = gold label, columns = predicted label, over the ``top`` most frequent gold labels (and
    ``other``)."""
    labels = [lab for lab, _ in Counter(gold).most_common(top)]
    names = [*labels, "other"] if len(set(gold) | set(pred)) > len(labels) else labels
    pos = {lab: i for i, lab in enumerate(labels)}
    matrix = np.zeros((len(names), len(names)), dtype=int)
    for g, p in zip(gold, pred, strict=True):
        matrix[pos.get(g, len(names) - 1), pos.get(p, len(names) - 1)] += 1
    return {"labels": names, "matrix": matrix.tolist()}


def evaluate_ranker(ranker: IntentRanker, examples: Sequence[GoldExample], index: DiseaseIndex | None = None,
                    train_counts: Counter | None = None) -> dict:
    """Accuracy@1/@3 (plain; with the topic-type filter; with that and the labels the topic has data for, when
    ``index`` is given), per-label precision/recall, confusion, and ``rank`` latency (ms per question)."""
    gold = [ex.label for ex in examples]
    pred, hit3, typed, avail = [], 0, [], []
    times = []
    for ex in examples:
        t0 = time.perf_counter()
        ranked = ranker.rank(ex.question, ex.topic)
        times.append((time.perf_counter() - t0) * 1000)
        pred.append(ranked[0][0])
        hit3 += ex.label in {lab for lab, _ in ranked[:3]}
        typed.append(ranker.predict(ex.question, ex.topic, topic_type=ex.target.topic_type))
        if index is not None:
            allowed = available_labels(index, ex.topic, ex.target.topic_type)
            avail.append(ranker.predict(ex.question, ex.topic, topic_type=ex.target.topic_type,
                                        allowed=allowed))
    n = max(len(examples), 1)
    out = {
        "n": len(examples),
        "accuracy@1": sum(g == p for g, p in zip(gold, pred, strict=True)) / n,
        "accuracy@3": hit3 / n,
        "accuracy@1_topic_type": sum(g == p for g, p in zip(gold, typed, strict=True)) / n,
        "per_label": _per_label(gold, pred, train_counts or Counter()),
        "confusion": _confusion(gold, pred),
        "rank_ms_p50": float(np.percentile(times, 50)) if times else 0.0,
        "rank_ms_p95": float(np.percentile(times, 95)) if times else 0.0,
        "predictions": pred,
    }
    if index is not None:
        out["accuracy@1_available"] = sum(g == p for g, p in zip(gold, avail, strict=True)) / n
    return out


def noise_bounds(train: Sequence[GoldExample], validation: Sequence[GoldExample]) -> dict:
    """How far label noise caps a text-only classifier, read off repeated question templates (the question
    with its topic masked): a validation question whose template is also a train template with another
    majority label is wrong for any classifier that answers templates consistently with train."""
    templates: dict[str, Counter] = defaultdict(Counter)
    for ex in train:
        templates[mask_question(ex.question, ex.topic)][ex.label] += 1
    seen = agree = 0
    for ex in validation:
        counts = templates.get(mask_question(ex.question, ex.topic))
        if counts:
            seen += 1
            agree += counts.most_common(1)[0][0] == ex.label
    everything: dict[str, Counter] = defaultdict(Counter)
    for ex in [*train, *validation]:
        everything[mask_question(ex.question, ex.topic)][ex.label] += 1
    repeated = {t: c for t, c in everything.items() if sum(c.values()) > 1}
    in_repeated = sum(sum(c.values()) for c in repeated.values())
    minority = sum(sum(c.values()) - c.most_common(1)[0][1] for c in repeated.values())
    n = max(len(validation), 1)
    return {
        "validation_template_seen_in_train": seen,
        "validation_template_seen_in_train_fraction": seen / n,
        "seen_with_same_majority_label": agree,
        "seen_with_other_majority_label": seen - agree,
        "ceiling_from_validation_conflicts": 1 - (seen - agree) / n,
        "all_repeated_templates": len(repeated),
        "all_questions_in_repeated_templates": in_repeated,
        "all_minority_label_questions": minority,
        "all_minority_label_fraction": minority / max(len(train) + len(validation), 1),
    }


def annotation_style(cypher: str) -> str:
    """The CE-Prompt annotation batch a Cypher query's writing style betrays: its first variable name and
    whether ``name:`` is followed by a space (``d/sp`` wrote 63 % of the questions, 92 % of them
    ``cure_way``)."""
    m = re.match(r"\s*MATCH\s*\(\s*(\w*)", cypher, re.I)
    spaced = "sp" if re.search(r"name:\s+['\"]", cypher) else "nosp"
    return f"{m.group(1) if m else '?'}/{spaced}"


def annotation_oracle(train: Sequence[GoldExample], validation: Sequence[GoldExample],
                      cfg: IntentConfig) -> dict:
    """Diagnostic, not a model: validation accuracy of a LinearSVC on the ranker's n-grams, without and with
    an ORACLE feature naming each question's annotation batch (:func:`annotation_style`, crossed with its
    1–2-grams). The gap is what the batches' differing labelling conventions cost a classifier that sees only
    the question."""
    def grams(ex: GoldExample) -> list[str]:
        text = mask_question(ex.question, ex.topic) if cfg.mask_topic else normalize_text(ex.question)
        return char_ngrams(text, cfg.ngram_min, cfg.ngram_max, cfg.boundaries)

    def with_style(ex: GoldExample) -> list[str]:
        style = annotation_style(ex.cypher)
        base = grams(ex)
        return [*base, f"style={style}", *(f"{style}|{g}" for g in base if len(g) <= 2)]

    out = {}
    for name, featurise in (("text_only", grams), ("text_plus_oracle_style", with_style)):
        vectorizer = TfidfVectorizer(analyzer=lambda x: x, sublinear_tf=True)
        x_train = vectorizer.fit_transform([featurise(ex) for ex in train])
        x_val = vectorizer.transform([featurise(ex) for ex in validation])
        pred = LinearSVC().fit(x_train, [ex.label for ex in train]).predict(x_val)
        out[name] = float(np.mean([p == ex.label for p, ex in zip(pred, validation, strict=True)]))
    return out


def _baseline(train: Sequence[GoldExample], validation: Sequence[GoldExample], names: Sequence[str]) -> dict:
    t0 = time.perf_counter()
    baseline = BaselineIntent.train([ex.question for ex in train], [ex.label for ex in train], names)
    pred = baseline.predict([ex.question for ex in validation])
    topics = [baseline.topic(ex.question) for ex in validation]
    n = max(len(validation), 1)
    label_ok = [p == ex.label for p, ex in zip(pred, validation, strict=True)]
    topic_ok = [t == ex.topic for t, ex in zip(topics, validation, strict=True)]
    return {"accuracy@1": sum(label_ok) / n, "topic_accuracy": sum(topic_ok) / n,
            "topic_and_label": sum(a and b for a, b in zip(label_ok, topic_ok, strict=True)) / n,
            "seconds": time.perf_counter() - t0}


# ---- markdown / plot --------------------------------------------------------------------------------------
def accuracy_markdown(result: dict) -> str:
    """The summary table (validation) plus the per-label precision/recall table."""
    v, b = result["validation"], result["baseline"]
    rows = [("majority class (`" + result["majority_label"] + "`)", result["majority_accuracy"], "", ""),
            ("baseline: char 1–3 TF-IDF + LinearSVC, unmasked", b["accuracy@1"], "", ""),
            ("ranker", v["accuracy@1"], v["accuracy@3"], ""),
            ("ranker + topic-type filter", v["accuracy@1_topic_type"], "", "")]
    if "accuracy@1_available" in v:
        rows.append(("ranker + topic-type + labels with data", v["accuracy@1_available"], "", ""))
    noise = result["noise"]
    bound = noise["ceiling_from_validation_conflicts"]
    oracle = noise.get("annotation_oracle", {})
    lines = [f"validation: {v['n']} questions; train: {result['split']['train']}", "",
             "| model | accuracy@1 | accuracy@3 |", "|---|---|---|"]
    lines += [f"| {name} | {a1:.4f} | {a3 if a3 == '' else f'{a3:.4f}'} |" for name, a1, a3, _ in rows]
    text_only = oracle.get("text_only", float("nan"))
    with_style = oracle.get("text_plus_oracle_style", float("nan"))
    lines += ["", f"baseline topic (longest disease name) accuracy {b['topic_accuracy']:.4f}, topic and "
              f"label both right {b['topic_and_label']:.4f}; rank p50 {v['rank_ms_p50']:.3f} ms, "
              f"p95 {v['rank_ms_p95']:.3f} ms", "",
              f"Label noise: {noise['validation_template_seen_in_train']} validation questions have a masked "
              f"template seen in train, {noise['seen_with_other_majority_label']} of them with another "
              f"majority label (ceiling {bound:.4f}); a LinearSVC on the same n-grams gets {text_only:.4f}, "
              f"and {with_style:.4f} when told each question's annotation batch (oracle: Cypher writing "
              "style).", "",
              "| label | train | support | predicted | precision | recall | f1 |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['label']} | {r['train']} | {r['support']} | {r['predicted']} | {r['precision']:.3f} | "
              f"{r['recall']:.3f} | {r['f1']:.3f} |" for r in v["per_label"]]
    return "\n".join(lines)


def confusion_markdown(confusion: dict) -> str:
    names = confusion["labels"]
    short = [n.split(":", 1)[-1] for n in names]
    head = "| gold \\ predicted | " + " | ".join(short) + " |"
    lines = [head, "|---" * (len(names) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(str(c) for c in row) + " |"
              for name, row in zip(names, confusion["matrix"], strict=True)]
    return "\n".join(lines)


def plot_confusion(confusion: dict, path: Path, title: str) -> Path:
    """PNG of the row-normalised confusion table."""
    import matplotlib  # on use: matplotlib costs ~1.5 s at import; only plots need it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # on use (see above)


    matrix = np.asarray(confusion["matrix"], dtype=float)
    norm = matrix / np.maximum(matrix.sum(1, keepdims=True), 1)
    fig, ax = plt.subplots(figsize=(8, 7))
    ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    names = confusion["labels"]
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    for i in range(len(names)):
        for j in range(len(names)):
            if matrix[i, j]:
                ax.text(j, i, int(matrix[i, j]), ha="center", va="center", fontsize=7,
                        color="white" if norm[i, j] > 0.5 else "black")
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    return save_figure(fig, path, title)


# ---- the run ----------------------------------------------------------------------------------------------
def _record_latest(settings: Settings, run_dir: Path) -> None:
    """``checkpoints/intent/medical-latest.json`` → ``run_dir`` (the shared helper; imported here because
    :mod:`kgrag.hrag.retrieval.pipeline` pulls in torch, which loading a ranker does not need)."""
    record_latest(settings, DATASET, run_dir, kind=KIND)


def train_intent(settings: Settings, config: IntentConfig | dict | None = None, force: bool = False,
                 log: Callable[[str], None] = print, questions: Path | None = None) -> dict:
    """Train, evaluate and save the ranker (see the module docstring); returns the metrics
    (``metrics.json``). ``questions``: another CE-Prompt-format file (default: the data dir's)."""
    cfg = _resolved(settings, config)
    questions_file = Path(questions) if questions else _questions_file(settings)
    if not questions_file.is_file():
        raise KgragError(f"labelled question file not found: {questions_file} (CE-Prompt JSON: [{{input, cypher}}])")
    run_dir = intent_run_dir(settings, cfg)
    stamp = _data_stamp(settings, questions_file)
    metrics_file = run_dir / "metrics.json"
    if not force and metrics_file.is_file() and (run_dir / "ranker.json").is_file():
        cached = json.loads(metrics_file.read_text(encoding="utf-8"))
        if cached.get("data_stamp") == stamp and cached.get("config_fingerprint") == cfg.fingerprint():
            log(f"intent ranker already trained for this config and data: {run_dir}")
            _record_latest(settings, run_dir)
            return {**cached, "cached": True}
    t_start = time.perf_counter()
    examples, skips = load_ce_prompt(questions_file, _diseases_dir(settings))
    if not examples:
        raise KgragError(f"no usable questions in {questions_file} (skips: {dict(skips)})")
    index = disease_index(_diseases_dir(settings))
    train_idx, val_idx, split_info = split_examples(examples, cfg.validation_fraction, int(cfg.seed or 0))
    if cfg.max_train_questions and len(train_idx) > cfg.max_train_questions:
        train_idx = sorted(random.Random(cfg.seed).sample(train_idx, cfg.max_train_questions))
        split_info["train_used"] = len(train_idx)
    train = [examples[i] for i in train_idx]
    validation = [examples[i] for i in val_idx]
    log(f"{len(examples)} questions ({sum(skips.values())} skipped), train {len(train)}, validation "
        f"{len(validation)}, {split_info['duplicate_questions']} duplicate texts")

    t0 = time.perf_counter()
    ranker = IntentRanker.train([ex.question for ex in train], [ex.label for ex in train], cfg,
                                topics=[ex.topic for ex in train])
    train_seconds = time.perf_counter() - t0
    train_counts = Counter(ex.label for ex in train)
    evaluation = evaluate_ranker(ranker, validation, index, train_counts)
    majority_label, _ = train_counts.most_common(1)[0]
    majority = sum(ex.label == majority_label for ex in validation) / max(len(validation), 1)
    baseline = _baseline(train, validation, index.names())
    noise = noise_bounds(train, validation)
    noise["annotation_oracle"] = annotation_oracle(train, validation, cfg)
    log(f"validation accuracy@1 {evaluation['accuracy@1']:.4f} (@3 {evaluation['accuracy@3']:.4f}), majority "
        f"{majority:.4f}, baseline {baseline['accuracy@1']:.4f}; trained in {train_seconds:.1f}s")

    run_dir.mkdir(parents=True, exist_ok=True)
    ranker.metrics.update({"validation_accuracy@1": evaluation["accuracy@1"],
                           "validation_accuracy@3": evaluation["accuracy@3"], "data_stamp": stamp})
    ranker.save(run_dir)
    write_gold_jsonl(run_dir / "train.jsonl", train)
    write_gold_jsonl(run_dir / "validation.jsonl", validation)
    write_json(run_dir / "split.json", {"seed": cfg.seed, "validation_fraction": cfg.validation_fraction,
                                         "train": [ex.qid for ex in train],
                                         "validation": [ex.qid for ex in validation]}, indent=1)
    confusion_png = plot_confusion(evaluation["confusion"], run_dir / "confusion.png",
                                   f"Intent ranker, validation (n={len(validation)})")
    predictions = evaluation.pop("predictions")
    result = {
        "run_dir": str(run_dir), "fingerprint": ranker.fingerprint, "config_fingerprint": cfg.fingerprint(),
        "config": cfg.model_dump(), "data_stamp": stamp, "examples": len(examples),
        "skipped": dict(skips.most_common()), "skipped_total": sum(skips.values()), "split": split_info,
        "labels": dict(Counter(ex.label for ex in examples).most_common()),
        "majority_label": majority_label, "majority_accuracy": majority, "baseline": baseline,
        "validation": evaluation, "noise": noise, "train_seconds": train_seconds,
        "n_features": len(ranker.vocabulary), "seconds": time.perf_counter() - t_start,
        "confusion_png": str(confusion_png),
    }
    write_json(run_dir / "metrics.json", result, indent=1, default=str)
    write_json(run_dir / "validation_predictions.json",
               {ex.qid: {"gold": ex.label, "predicted": p} for ex, p in zip(validation, predictions, strict=True)},
               indent=1)
    _record_latest(settings, run_dir)
    return result


def split_questions(settings: Settings, split: str = "validation") -> list[dict]:
    """The gold records (``{"qid", "question", "answers", "topic", "topic_type", "label"}``) of the latest
    run's ``train`` or ``validation`` split: the questions the ranker was (not) trained on."""
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
    folder = latest_intent_dir(settings)
    if folder is None or not (folder / f"{split}.jsonl").is_file():
        raise KgragError(f"no trained intent ranker under {settings.checkpoint_dir / KIND}: "
                         "run `python -m flows.train_intent` first")
    return read_gold_jsonl(folder / f"{split}.jsonl")


def validation_questions(settings: Settings) -> list[dict]:
    """The held-out validation questions of the latest run, with their gold answers (see
    :func:`split_questions`)."""
    return split_questions(settings, "validation")
