"""Training of the dense triple retriever: BCE on shortest-path positives, early stop on validation recall@K.

Each step takes ``batch_questions`` train questions; per question all positive triples of its G_retrieval (at
most ``max_positives``, sampled) and ``negatives`` sampled negatives, each class weighted to half the question's
loss (positives are < 1 % of the triples). After each epoch the model scores a fixed sample of validation
questions; the epoch with the best ``answer_recall@K + path_triple_recall@K`` is kept (``best.pt``), and training
stops after ``patience`` epochs without gain. ``last.pt`` holds everything to resume (model, optimiser, RNG,
history): a killed run restarts from its last finished epoch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kgrag.fileio import atomic_write
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.metrics import recall_report
from kgrag.hrag.retrieval.retriever import GroupSignatures, TripleScorer, make_batch, score_samples
from kgrag.hrag.retrieval.samples import RetrievalSamples
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.progress import counted

__all__ = ["TrainResult", "train_retriever", "load_scorer", "early_stop_subset", "save_checkpoint",
           "restore_model"]


@dataclass
class TrainResult:
    checkpoint: Path
    best_epoch: int
    best_metric: float
    history: list[dict] = field(default_factory=list)
    resumed_from: int = 0  # epochs already done when this call started


def save_checkpoint(obj: dict, path: Path) -> None:
    """``torch.save`` to a temp file beside ``path``, then moved into place (a kill never leaves half a file; a
    failed write — disk full — leaves the previous checkpoint and no temp file)."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            try:
                torch.save(obj, fh)
            except RuntimeError as exc:  # torch's zip writer hides the OS error (ENOSPC, EFBIG) behind its own
                cause = exc.__context__
                if isinstance(cause, OSError):
                    raise OSError(cause.errno, f"could not write checkpoint {path}: {cause.strerror}") from exc
                raise

    atomic_write(path, write)


def restore_model(path: Path, build: Callable[[dict], nn.Module]) -> tuple[nn.Module, dict]:
    """A ``best.pt`` (tensors and plain values only: ``weights_only``): the model ``build(state)`` makes, with the
    saved weights, in eval mode, and the saved fields."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    model = build(state)
    model.load_state_dict(state["model"])
    model.eval()
    return model, state


def load_scorer(path: Path) -> tuple[TripleScorer, dict]:
    """The model of a ``best.pt`` checkpoint and its saved fields (config, metrics)."""
    return restore_model(path, lambda state: TripleScorer(**state["model_config"]))


def early_stop_subset(samples: RetrievalSamples, n: int, seed: int) -> RetrievalSamples:
    """A fixed random sample of ``n`` questions (all when fewer)."""
    if len(samples) <= n:
        return samples
    rng = np.random.default_rng(seed)
    return samples.subset(np.sort(rng.choice(len(samples), n, replace=False)))


def _step_rows(signatures: GroupSignatures, samples: RetrievalSamples, index: int, cfg: RetrieverConfig,
               rng: np.random.Generator):
    q = samples.question(index)
    pos = np.flatnonzero(q.labels)
    neg = np.flatnonzero(~q.labels)
    if pos.size > cfg.max_positives:
        pos = rng.choice(pos, cfg.max_positives, replace=False)
    if neg.size > cfg.negatives:
        neg = rng.choice(neg, cfg.negatives, replace=False)
    sel = np.concatenate([pos, neg])
    y = np.concatenate([np.ones(pos.size, np.float32), np.zeros(neg.size, np.float32)])
    w = np.concatenate([np.full(pos.size, 0.5 / max(pos.size, 1), np.float32),
                        np.full(neg.size, 0.5 / max(neg.size, 1), np.float32)])
    bits = signatures.bits(int(samples.group_of[index]), sel)
    return (index, q.triples[sel], q.head_dist[sel], q.tail_dist[sel], bits), y, w


def train_retriever(graph: CSRGraph, text: TextEmbeddings, train: RetrievalSamples, validation: RetrievalSamples,
                    cfg: RetrieverConfig, checkpoint_dir: Path,
                    log: Callable[[str], None] = print) -> TrainResult:
    """Train (or resume, or return the finished run in ``checkpoint_dir``); returns the best checkpoint."""
    checkpoint_dir = Path(checkpoint_dir)
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    last, best = checkpoint_dir / "last.pt", checkpoint_dir / "best.pt"
    torch.manual_seed(cfg.seed)
    model = TripleScorer(text.dim, graph.num_relations, cfg.hidden, cfg.proj, cfg.entity_proj)
    optimiser = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    history: list[dict] = []
    start_epoch, best_metric, best_epoch, stale, done = 0, -1.0, -1, 0, False
    if last.is_file():
        state = torch.load(last, map_location="cpu", weights_only=True)
        if state["fingerprint"] == cfg.fingerprint():
            model.load_state_dict(state["model"])
            optimiser.load_state_dict(state["optimiser"])
            rng.bit_generator.state = state["rng"]
            torch.set_rng_state(state["torch_rng"])
            history, start_epoch = state["history"], state["epoch"] + 1
            best_metric, best_epoch, stale, done = state["best_metric"], state["best_epoch"], state["stale"], state["done"]
            log(f"resuming retriever training after epoch {state['epoch']} ({checkpoint_dir})")
    if done:
        return TrainResult(best, best_epoch, best_metric, history, start_epoch)

    train_ids = np.flatnonzero(train.positive_counts() > 0)
    q_train = text.questions(train.texts)
    stop_set = early_stop_subset(validation, cfg.early_stop_questions, cfg.seed)
    q_stop = text.questions(stop_set.texts)
    relation_vec = torch.from_numpy(text.relations)
    signatures = GroupSignatures(graph, train)  # kept across epochs
    loss_fn = nn.BCEWithLogitsLoss(reduction="none")
    resumed_from = start_epoch
    for epoch in range(start_epoch, cfg.epochs):
        model.train()
        t0 = time.perf_counter()
        order = rng.permutation(train_ids)
        total_loss, rows_seen = 0.0, 0
        for b in counted(range(0, order.size, cfg.batch_questions), f"retriever epoch {epoch + 1}", "batch"):
            parts = [_step_rows(signatures, train, int(i), cfg, rng) for i in order[b : b + cfg.batch_questions]]
            batch = make_batch(graph, text, q_train, [p[0] for p in parts])
            y = torch.from_numpy(np.concatenate([p[1] for p in parts]))
            w = torch.from_numpy(np.concatenate([p[2] for p in parts]))
            loss = (loss_fn(model(batch, relation_vec), y) * w).sum() / len(parts)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total_loss += float(loss.detach()) * len(parts)
            rows_seen += y.numel()
        train_seconds = time.perf_counter() - t0
        ptr, scores = score_samples(model, graph, text, stop_set, q_stop)
        report = recall_report(graph, stop_set, ptr, scores, ks=(cfg.early_stop_k,))["all"]
        metric = report[f"answer_recall@{cfg.early_stop_k}"] + report[f"path_triple_recall@{cfg.early_stop_k}"]
        row = {"epoch": epoch, "loss": total_loss / max(order.size, 1), "train_seconds": train_seconds,
               "train_triples_per_s": rows_seen / train_seconds, "questions": int(order.size),
               f"val_answer_recall@{cfg.early_stop_k}": report[f"answer_recall@{cfg.early_stop_k}"],
               f"val_path_triple_recall@{cfg.early_stop_k}": report[f"path_triple_recall@{cfg.early_stop_k}"],
               "val_questions": report["n"]}
        history.append(row)
        log(f"epoch {epoch}: loss {row['loss']:.4f}, {train_seconds:.1f}s, val answer@{cfg.early_stop_k} "
            f"{row[f'val_answer_recall@{cfg.early_stop_k}']:.4f}, path@{cfg.early_stop_k} "
            f"{row[f'val_path_triple_recall@{cfg.early_stop_k}']:.4f}")
        if metric > best_metric:
            best_metric, best_epoch, stale = metric, epoch, 0
            save_checkpoint({"model": model.state_dict(), "model_config": model.config, "config": cfg.model_dump(),
                   "fingerprint": cfg.fingerprint(), "epoch": epoch, "metrics": row}, best)
        else:
            stale += 1
        done = stale >= cfg.patience or epoch == cfg.epochs - 1
        save_checkpoint({"model": model.state_dict(), "optimiser": optimiser.state_dict(), "rng": rng.bit_generator.state,
               "torch_rng": torch.get_rng_state(), "history": history, "epoch": epoch, "best_metric": best_metric,
               "best_epoch": best_epoch, "stale": stale, "done": done, "fingerprint": cfg.fingerprint()}, last)
        if done:
            break
    return TrainResult(best, best_epoch, best_metric, history, resumed_from)
