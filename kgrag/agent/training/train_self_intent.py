"""Self-supervised training of the intent ranker for one stored network — no labelled question is read.

    result = train_self_intent(settings, "demo")     # {"run_dir", "questions", "labels", "seconds", …}

Reads the network's schema and instances from the store (``Settings.db_url``), builds its candidates
(:mod:`kgrag.agent.kn.schema_candidates`), synthesises questions from them (:mod:`kgrag.agent.training.synthesise`;
the answer classes each candidate gets "when/where/who …" wordings for come from the zero-shot ranker's
affinities; sentences of the network's own texts that mention one element join them), trains :class:`kgrag.agent.kn.self_ranker.SelfRanker` on them and saves it under
``<work_dir>/checkpoints/intent/self-<kn_id>-<fingerprint>/`` (``self_ranker.npz/json``, ``synthetic.jsonl``: every
training question, ``metrics.json``); ``checkpoints/intent/<kn_id>-self-latest.json`` names it
(:func:`kgrag.agent.kn.self_ranker.load_latest_self`). The fingerprint covers the config, the seed, the synthesis size and the network's
version: a finished run with the same inputs returns at once (``force`` retrains).

Run: ``kgrag train-intent --kn demo --source self`` (the Prefect flow ``train-intent``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable

from kgrag.agent.kn.intent import KIND, IntentConfig
from kgrag.agent.kn.schema_candidates import network_profile
from kgrag.agent.kn.self_ranker import SelfRanker
from kgrag.agent.kn.zero_shot import CUES, ZeroShotSchemaRanker
from kgrag.agent.training.synthesise import CLASS_AFFINITY, phrase_neighbours, synthesise, text_wordings
from kgrag.config import Settings
from kgrag.fileio import write_json
from kgrag.hrag.pipeline import record_latest
from kgrag.network.domain_vectors import instance_texts
from kgrag.rank.tokenize import has_cjk

__all__ = ["MAX_QUESTIONS", "train_self_intent"]

#: synthetic questions of one training at most (the synthetic network's 14,400 candidates get 6 each)
MAX_QUESTIONS = 90_000


def train_self_intent(settings: Settings, kn_id: str, config: IntentConfig | dict | None = None,
                      per_candidate: int = 48, force: bool = False, store: object | None = None,
                      log: Callable[[str], None] = print) -> dict:
    """Synthesise, train, save (see the module docstring); returns the metrics."""
    from kgrag.network.store import NetworkStore  # on use: the store stack

    cfg = config if isinstance(config, IntentConfig) else IntentConfig(**(config or {}))
    seed = int(cfg.seed if cfg.seed is not None else settings.seed)
    own = store is None
    store = store or NetworkStore(settings.db_url)
    try:
        t0 = time.perf_counter()
        version = store.network_version(kn_id)  # raises NetworkNotFound for an unknown network
        key = json.dumps([cfg.model_dump(), seed, per_candidate, kn_id, version], sort_keys=True)
        run_dir = settings.checkpoint_dir / KIND / f"self-{kn_id}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
        metrics_file = run_dir / "metrics.json"
        if not force and metrics_file.is_file() and (run_dir / "self_ranker.json").is_file():
            log(f"self-supervised ranker already trained for {kn_id!r} at this version: {run_dir}")
            record_latest(settings, f"{kn_id}-self", run_dir, kind=KIND)
            return {**json.loads(metrics_file.read_text(encoding="utf-8")), "cached": True}
        profile = network_profile(store, kn_id)
        zero_shot = ZeroShotSchemaRanker(profile, store.embedder_for(kn_id))
        affinity = zero_shot.affinities()
        classes = {c.label: [k for k, a in zip(CUES, affinity[i], strict=True) if a >= CLASS_AFFINITY]
                   for i, c in enumerate(profile.candidates)}
        t_profile = time.perf_counter() - t0
        nearest = getattr(zero_shot.embedder, "nearest_words", None)  # word vectors: a domain embedder has them
        names = store.instance_names(kn_id)
        sample = [name for _type, _id, name in names[:2000] if name]
        chinese = sum(has_cjk(name) for name in sample) * 2 > len(sample)  # the language of its instance names
        neighbours = phrase_neighbours(profile, nearest, chinese) if nearest is not None else {}
        # a large schema gets fewer questions per element (at most MAX_QUESTIONS in all, at least 4 each)
        per = min(per_candidate, max(4, MAX_QUESTIONS // max(len(profile.candidates), 1)))
        questions = synthesise(profile, names, seed, per, classes, neighbours)
        # and sentences of the network's own texts that mention one element (a quarter as many per element)
        from_texts = text_wordings(profile, instance_texts(store, kn_id), seed, max(1, per // 4))
        questions += from_texts
        if len({q.label for q in questions}) < 2:
            raise ValueError(f"network {kn_id!r} gives fewer than two answerable schema elements to train on")
        log(f"{kn_id}: {len(profile.candidates)} candidates, {len(questions)} synthetic questions")
        t1 = time.perf_counter()
        ranker = SelfRanker.train([q.question for q in questions], [q.label for q in questions],
                                  [q.topic for q in questions], cfg)
        train_seconds = time.perf_counter() - t1
        run_dir.mkdir(parents=True, exist_ok=True)
        ranker.metrics.update({"kn_id": kn_id, "network_version": version})
        ranker.save(run_dir)
        with (run_dir / "synthetic.jsonl").open("w", encoding="utf-8") as fh:
            for q in questions:
                fh.write(json.dumps({"question": q.question, "label": q.label, "topic": q.topic},
                                    ensure_ascii=False) + "\n")
        per_kind = Counter(q.label.partition(":")[0] for q in questions)
        result = {"run_dir": str(run_dir), "kn_id": kn_id, "source": "self", "fingerprint": ranker.fingerprint,
                  "network_version": version, "candidates": len(profile.candidates),
                  "questions": len(questions), "labels": len({q.label for q in questions}),
                  "questions_by_kind": dict(per_kind), "from_texts": len(from_texts), "neighbours": neighbours,
                  "n_features": len(ranker.vocabulary), "seed": seed,
                  "per_candidate": per, "profile_seconds": t_profile, "train_seconds": train_seconds,
                  "seconds": time.perf_counter() - t0, "examples": [q.__dict__ for q in questions[:: max(
                      1, len(questions) // 12)][:12]]}
        write_json(metrics_file, result, indent=1)
        record_latest(settings, f"{kn_id}-self", run_dir, kind=KIND)  # = self_pointer(settings, kn_id)
        return result
    finally:
        if own:
            store.close()
