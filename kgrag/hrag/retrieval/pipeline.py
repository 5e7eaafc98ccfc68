"""The retrieval stage's steps over a prepared dataset, cached on disk (flows/ wires them as Prefect tasks).

Layout under the dataset's work folder (``work/<dataset>/hrag/``)::

    samples_<split>_<key>.npz      G_retrieval + features + labels of one split (key: questions + G_retrieval settings)
    text_<model>_<hash>.npz        entity / relation name vectors
    g_agent/<split>_g_agent.pt     g_agent (spec §4.4), written by the eval stage
    eval/<split>.json, .md, .png   recall report of the eval stage

Checkpoints: ``work/checkpoints/retriever/<dataset>-<config fingerprint>/{best,last}.pt``; ``<dataset>-latest.json``
beside them names the run that trained last (what ``kgrag retriever-eval`` loads).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from kgrag.config import Settings, get_settings
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.chain_labels import cached_chains
from kgrag.hrag.retrieval.chains import ChainPrior, relation_focus, train_chain_prior
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.g_agent import GAgentSplit, g_agent_path, materialize
from kgrag.hrag.retrieval.local_ppr import LocalPPR
from kgrag.hrag.retrieval.questions import HragQuestion, prepared_questions
from kgrag.hrag.retrieval.resumable import Parts
from kgrag.hrag.retrieval.samples import RetrievalSamples, build_samples
from kgrag.hrag.retrieval.sharding import merge_samples, shard_questions
from kgrag.hrag.retrieval.stage_inputs import latest_checkpoint, stage_input
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.progress import counted, counter
from kgrag.rank.sentence_embedder import Embedder

__all__ = ["SAMPLES_VERSION", "hrag_dir", "split_samples", "question_samples", "checkpoint_dir",
           "record_latest", "checkpoint_input", "build_g_agent", "chain_prior", "with_chain_prior",
           "split_questions", "available_splits", "retriever_splits", "g_agent_file", "g_agent_input"]

SAMPLES_VERSION = "samples-v2"  # bump when the samples' content changes
CHAIN_PRIOR_VERSION = "chain-prior-v1"  # bump when the chain prior's model or labels change
MAX_CHAIN_STEPS = 3  # longest relation chain the prior learns (MetaQA: 3 hops)


def hrag_dir(settings: Settings, dataset: str) -> Path:
    return settings.dataset_dir(dataset) / "hrag"


def _questions_key(questions: Sequence[HragQuestion], cfg: RetrieverConfig, graph: CSRGraph,
                   focus: Sequence[np.ndarray] | None = None) -> str:
    digest = hashlib.sha256(f"{SAMPLES_VERSION}:{cfg.top_n}:{cfg.max_triples}:{cfg.ppr_epsilon}:"
                            f"{graph.num_entities}:{graph.num_triples}".encode())
    if focus is not None:
        digest.update(f"focus {cfg.ppr_focus_floor}:{cfg.max_off_focus_triples}:".encode())
        for f in focus:
            digest.update(np.asarray(f, dtype=np.int64).tobytes() + b";")
    for q in questions:
        digest.update(f"{q.qid}\t{q.text}\t{q.topics}\t{q.answers}\t{q.hop}\n".encode())
    return digest.hexdigest()[:16]


def _samples_file(folder: Path, name: str, questions: Sequence[HragQuestion], cfg: RetrieverConfig,
                  graph: CSRGraph, focus: Sequence[np.ndarray] | None = None) -> Path:
    return Path(folder) / f"samples_{name}_{_questions_key(questions, cfg, graph, focus)}.npz"


def question_focus(prior: ChainPrior | None, text: TextEmbeddings, questions: Sequence[HragQuestion],
                   cfg: RetrieverConfig) -> list[np.ndarray] | None:
    """Per question the relations its PPR walk follows (:func:`texts_focus` of their texts)."""
    return texts_focus(prior, text, [q.text for q in questions], cfg)


def texts_focus(prior: ChainPrior | None, text: TextEmbeddings, texts: Sequence[str], cfg: RetrieverConfig,
                vectors: np.ndarray | None = None) -> list[np.ndarray] | None:
    """Per question text the relations its PPR walk follows (:func:`~kgrag.hrag.retrieval.chains.relation_focus`;
    ``vectors``: the texts' sentence vectors when at hand); None for the even walk (no prior, or
    ``ppr_focus_floor`` 1)."""
    if prior is None or cfg.ppr_focus_floor >= 1.0 or not len(texts):
        return None
    vectors = text.questions(texts) if vectors is None else vectors
    return relation_focus(prior, texts, vectors, cfg.chain_max, cfg.chain_min_share)


def question_samples(graph: CSRGraph, questions: Sequence[HragQuestion], cfg: RetrieverConfig, folder: Path,
                     name: str, ppr: LocalPPR | None = None,
                     progress: Callable[[int, int], None] | None = None,
                     part_questions: int | None = None,
                     focus: Sequence[np.ndarray] | None = None) -> RetrievalSamples:
    """Samples of ``questions``, read from ``folder/samples_<name>_<key>.npz`` when built before; else built in
    resumable parts of about ``part_questions`` questions (default: the settings' ``hrag_part_questions``;
    :class:`~kgrag.hrag.retrieval.resumable.Parts`: a killed build continues from its last part), merged: each
    question's G_retrieval, features and labels as one build gives them (without a focus, the very same file).
    A build reports questions done to ``progress(done, total)``, else to :func:`~kgrag.progress.counter`.
    ``focus``: :func:`question_focus` of ``questions`` (the question-aware walk)."""
    path = _samples_file(folder, name, questions, cfg, graph, focus)
    if path.is_file():
        return RetrievalSamples.load(path)
    ppr = ppr or ppr_for(graph, cfg)
    shards = shard_questions(questions, -(-len(questions) // (part_questions or get_settings().hrag_part_questions)))
    parts = Parts(path.with_name(path.stem + ".parts"), len(shards), RetrievalSamples.save, RetrievalSamples.load,
                  label=f"G_retrieval ({name})")
    total = len(questions)
    with contextlib.ExitStack() as stack:
        report = progress or stack.enter_context(counter(f"G_retrieval ({name}, PPR)", "question", total))
        built: list[RetrievalSamples] = []
        base = 0
        for k, indices in enumerate(shards):
            part_questions = [questions[i] for i in indices]
            part_focus = [focus[i] for i in indices] if focus is not None else None

            def build(part_questions=part_questions, part_focus=part_focus, base=base) -> RetrievalSamples:
                size = len(part_questions)
                return build_samples(graph, part_questions, cfg.top_n, cfg.max_triples, ppr=ppr,
                                     progress=lambda done, groups: report(base + size * done // max(groups, 1),
                                                                          total),
                                     focus=part_focus, floor=cfg.ppr_focus_floor,
                                     max_off_focus=cfg.max_off_focus_triples)

            built.append(parts.get(k, build))
            base += len(indices)
            report(base, total)
    samples = merge_samples(built, shards) if len(built) > 1 else built[0]
    samples.save(path)
    parts.clear()
    return samples


def ppr_for(graph: CSRGraph, cfg: RetrieverConfig) -> LocalPPR:
    """Local PPR with the config's residual threshold (what every sample build uses)."""
    return LocalPPR(graph, epsilon=cfg.ppr_epsilon)


def samples_path(settings: Settings, dataset: str, split: str, cfg: RetrieverConfig,
                 questions: Sequence[HragQuestion], graph: CSRGraph, focus: Sequence[np.ndarray] | None = None) -> Path:
    """Where :func:`split_samples` keeps the split's samples (keyed by the questions, config, graph and focus)."""
    return _samples_file(hrag_dir(settings, dataset), split, questions, cfg, graph, focus)


def budget_cap(split: str, cfg: RetrieverConfig) -> int:
    """How many of ``split``'s questions the budget names (0 = all); any other split (test) is built only on
    request, with the cap the request names (``split_questions(…, cap=N)``)."""
    return {"train": cfg.max_train_questions, "validation": cfg.max_validation_questions}.get(split, 0)


def seeded_sample(questions: Sequence[HragQuestion], cap: int, seed: int) -> list[HragQuestion]:
    """A fixed random ``cap`` of ``questions`` in their order (all of them when ``cap`` is 0 or not smaller)."""
    if not cap or len(questions) <= cap:
        return list(questions)
    keep = np.random.default_rng(seed).choice(len(questions), cap, replace=False)
    return [questions[i] for i in np.sort(keep)]


def split_questions(settings: Settings, dataset: str, split: str, cfg: RetrieverConfig,
                    cap: int | None = None) -> list[HragQuestion]:
    """A prepared split's questions: the fixed random sample of them the budget names (:func:`budget_cap`), or
    ``cap`` of them when given (0 = all)."""
    questions = prepared_questions(settings.dataset_dir(dataset), [split])
    if not questions:
        raise KgragError(f"no {split!r} questions with a topic entity in {settings.dataset_dir(dataset)}")
    return seeded_sample(questions, budget_cap(split, cfg) if cap is None else cap, cfg.seed)


#: the seed of the chain questions' sample (one for the prior and the planner, so they share a chain file)
CHAIN_SEED = 0


def chain_questions(settings: Settings, dataset: str, split: str, cap: int = 0) -> list[HragQuestion]:
    """The questions whose relation chains are read off the KG (the chain prior's and the relation planner's
    labels): a fixed random ``cap`` of ``split``'s (0 = all); the same cap and seed give the same questions, so
    the prior and the planner share one :func:`~kgrag.hrag.retrieval.chain_labels.cached_chains` file."""
    return seeded_sample(prepared_questions(settings.dataset_dir(dataset), [split]), cap, CHAIN_SEED)


def available_splits(settings: Settings, dataset: str) -> list[str]:
    """The splits of the prepared questions, in train / validation / test order."""
    found = {q.split for q in prepared_questions(settings.dataset_dir(dataset))}
    order = ["train", "validation", "test"]
    return [s for s in order if s in found] + sorted(found - set(order))


def retriever_splits(dataset: str) -> tuple[str, str]:
    """(train, validation) splits of a dataset; the demo KG has one ``test`` split, used for both."""
    return ("test", "test") if dataset == "demo" else ("train", "validation")


def split_samples(settings: Settings, dataset: str, graph: CSRGraph, split: str, cfg: RetrieverConfig,
                  ppr: LocalPPR | None = None, progress: Callable[[int, int], None] | None = None,
                  cap: int | None = None, prior: ChainPrior | None = None,
                  text: TextEmbeddings | None = None) -> RetrievalSamples:
    """Samples of one prepared split (``train``/``validation``/``test``…): the questions the budget names, or
    ``cap`` of them (:func:`split_questions`); with the chain ``prior`` (and ``text``) each walk question-aware."""
    questions = split_questions(settings, dataset, split, cfg, cap)
    focus = question_focus(prior, text, questions, cfg) if prior is not None and text is not None else None
    return question_samples(graph, questions, cfg, hrag_dir(settings, dataset), split, ppr, progress, focus=focus)


def prior_split(settings: Settings, dataset: str) -> str:
    """The split the chain prior learns from: ``train``, else the dataset's first (the demo KG's ``test``)."""
    splits = available_splits(settings, dataset)
    return "train" if "train" in splits or not splits else splits[0]


def needs_prior(cfg: RetrieverConfig) -> bool:
    """Whether a run uses the chain prior: for g_agent's chain walks or for the question-aware PPR."""
    return cfg.chain_weight > 0 or cfg.ppr_focus_floor < 1.0


def walk_inputs(settings: Settings, dataset: str, graph: CSRGraph, cfg: RetrieverConfig
                ) -> tuple[TextEmbeddings, ChainPrior | None]:
    """What a sample build of ``cfg`` reads besides the graph: the name vectors and the chain prior (learned and
    cached on first use) that steers each question's walk."""
    text = TextEmbeddings.for_graph(graph, hrag_dir(settings, dataset), Embedder.from_settings(settings))
    return text, split_prior(settings, dataset, graph, text, cfg)


def split_prior(settings: Settings, dataset: str, graph: CSRGraph, text: TextEmbeddings,
                cfg: RetrieverConfig) -> ChainPrior | None:
    """The chain prior a run of ``cfg`` learns (None when it uses none): :func:`chain_prior` on
    :func:`prior_split` with the budget's ``max_chain_questions``."""
    if not needs_prior(cfg):
        return None
    return chain_prior(settings, dataset, graph, text, prior_split(settings, dataset), cfg.max_chain_questions)


def checkpoint_dir(settings: Settings, dataset: str, cfg: RetrieverConfig) -> Path:
    return settings.checkpoint_dir / "retriever" / f"{dataset}-{cfg.fingerprint()}"


def record_latest(settings: Settings, dataset: str, run_dir: Path, kind: str = "retriever") -> None:
    """Name ``run_dir`` as the latest ``kind`` run (``retriever`` / ``gflownet``) of ``dataset``."""
    pointer = settings.checkpoint_dir / kind / f"{dataset}-latest.json"
    tmp = pointer.with_name(pointer.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"run_dir": str(run_dir)}))
    os.replace(tmp, pointer)


def checkpoint_input(settings: Settings, dataset: str, checkpoint: str | Path | None, kind: str = "retriever") -> Path:
    """The ``kind`` checkpoint a stage loads: ``checkpoint`` when given (a one-line error when it is missing), else
    :func:`latest_checkpoint`."""
    if checkpoint:
        return stage_input(checkpoint, f"kgrag train-{kind} --dataset {dataset}")
    return latest_checkpoint(settings, dataset, kind)


def chain_prior(settings: Settings, dataset: str, graph: CSRGraph, text: TextEmbeddings,
                split: str = "train", cap: int = 0) -> ChainPrior:
    """The relation-chain prior learned from ``split``'s questions (all of them, or the fixed ``cap`` of
    :func:`chain_questions`), kept in ``hrag/chain_prior_<key>.npz`` (key: version, graph, questions)."""
    questions = chain_questions(settings, dataset, split, cap)
    if not questions:
        raise KgragError(f"no {split!r} questions to learn the relation-chain prior from")
    folder = hrag_dir(settings, dataset)
    digest = hashlib.sha256(f"{CHAIN_PRIOR_VERSION}:{graph.num_entities}:{graph.num_triples}:{text.dim}".encode())
    for q in questions:
        digest.update(f"{q.text}\t{q.topics}\t{q.answers}\t{q.hop}\n".encode())
    path = folder / f"chain_prior_{digest.hexdigest()[:16]}.npz"
    if path.is_file():
        return ChainPrior.load(path)
    labels = cached_chains(folder, graph, [q.topics for q in questions], [q.answers for q in questions],
                           [q.hop for q in questions], MAX_CHAIN_STEPS, settings.hrag_part_questions)
    texts = [q.text for q in questions]
    prior = train_chain_prior(texts, text.questions(texts), labels)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
    prior.save(tmp)
    os.replace(tmp, path)
    return prior


def with_chain_prior(graph: CSRGraph, samples: RetrievalSamples, ptr: np.ndarray, scores: np.ndarray,
                     candidates: Sequence[tuple[np.ndarray, np.ndarray]], weight: float
                     ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per question ``(triples, scores, labels)``: G_retrieval's scored triples joined by the prior's chain triples
    (``candidates[i]``: ids and chain probabilities); a chain triple scores ``s + weight · P(chain)``, with ``s``
    its retriever score, or for one PPR left out the lowest score of the question's G_retrieval."""
    out_t, out_s, out_l = [], [], []
    for i in range(len(samples)):
        q = samples.question(i)
        triples, s = q.triples.astype(np.int64), scores[ptr[i] : ptr[i + 1]].astype(np.float32)
        labels = q.labels.astype(np.float32)
        ids, prob = candidates[i]
        if ids.size:
            order = np.argsort(triples, kind="stable")
            at = np.searchsorted(triples[order], ids).clip(max=max(triples.size - 1, 0))
            inside = triples[order][at] == ids if triples.size else np.zeros(ids.size, dtype=bool)
            s = s.copy()
            s[order[at[inside]]] += weight * prob[inside]
            floor = np.float32(s.min()) if s.size else np.float32(0.0)
            new = ids[~inside]
            triples = np.concatenate([triples, new])
            s = np.concatenate([s, floor + weight * prob[~inside]])
            labels = np.concatenate([labels, np.isin(new, q.positives).astype(np.float32)])
        out_t.append(triples)
        out_s.append(s)
        out_l.append(labels)
    return out_t, out_s, out_l


def build_g_agent(graph: CSRGraph, samples: RetrievalSamples, ptr: np.ndarray, scores: np.ndarray, top_k: int,
                  oracle: bool, meta: dict,
                  candidates: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
                  chain_weight: float = 0.0) -> GAgentSplit:
    """g_agent of a split (spec §4.4): per question the top-``top_k`` triples by score, plus in oracle mode (train)
    every shortest-path triple — those PPR left out of G_retrieval too, given a score below all scored ones. With
    the chain prior's ``candidates`` the scores are :func:`with_chain_prior`'s."""
    joined = with_chain_prior(graph, samples, ptr, scores, candidates, chain_weight) if candidates else None
    records = []
    for i in counted(range(len(samples)), f"g_agent ({meta.get('split', 'questions')})", "question"):
        q = samples.question(i)
        if joined is None:
            triples, s, labels = q.triples, scores[ptr[i] : ptr[i + 1]], q.labels.astype(np.float32)
        else:
            triples, s, labels = joined[0][i], joined[1][i], joined[2][i]
        if oracle:  # inject the GT triples G_retrieval lacks, below every scored triple
            missing = np.setdiff1d(q.positives, triples, assume_unique=True)
            if missing.size:
                floor = np.float32(s.min() - 1.0) if s.size else np.float32(0.0)
                triples = np.concatenate([triples, missing])
                s = np.concatenate([s, np.full(missing.size, floor, np.float32)])
                labels = np.concatenate([labels, np.ones(missing.size, np.float32)])
        records.append(materialize(graph.head[triples], graph.rel[triples], graph.tail[triples], s, labels,
                                   q.topics.tolist(), q.answers.tolist(), q.answer_hops, top_k, oracle))
    return GAgentSplit.build(records, samples.qids, samples.texts, samples.hops.tolist(),
                             {**meta, "mode": "oracle" if oracle else "pruned", "top_k": top_k})


def g_agent_file(settings: Settings, dataset: str, split: str) -> Path:
    return g_agent_path(hrag_dir(settings, dataset) / "g_agent", split)


def g_agent_input(settings: Settings, dataset: str, split: str, given: str | Path | None = None) -> Path:
    """The g_agent file a later stage reads (``given``, else the split's under the work dir); a one-line error
    naming ``kgrag retriever-eval`` (which writes it) when it is missing."""
    return stage_input(given or g_agent_file(settings, dataset, split), f"kgrag retriever-eval --dataset {dataset}")
