"""GFlowNet training: exact resume after an interruption, learning a synthetic path task (spec h-rag.md §4.3)."""

from __future__ import annotations

import numpy as np
import torch

from kgrag.hrag.gflownet.answers import answer_metrics, answer_questions
from kgrag.hrag.gflownet.config import GFlowNetConfig
from kgrag.hrag.gflownet.data import QuestionGraph, gt_walks
from kgrag.hrag.gflownet.policy import PathPolicy
from kgrag.hrag.gflownet.train import AgentData, load_policy, train_gflownet
from kgrag.hrag.retrieval.text import QuestionTokens

TEXT = 8
RELATIONS = np.random.default_rng(1).normal(size=(3, TEXT)).astype(np.float32)
ENTITIES = np.random.default_rng(2).normal(size=(64, TEXT)).astype(np.float16)
QUESTION_TOKENS = np.random.default_rng(3).normal(size=(2, 3, TEXT)).astype(np.float16)  # one per question kind
TINY = {"dim": 16, "heads": 2, "layers": 1, "ffn": 32, "entity_dim": 4, "max_steps": 2, "batch_questions": 8,
        "checkpoint_every": 10, "validation_questions": 40, "beam_width": 4, "lr": 3e-3, "explore_steps": 40,
        "gt_walks": 2}


def synthetic(n: int, seed: int) -> AgentData:
    """Star graphs: a topic with one edge of each relation 0/1/2 to its own neighbour, each neighbour with one
    more edge of each relation. Question kind 0 asks for the relation-0 neighbour (1 hop), kind 1 for the
    relation-2 neighbour of the relation-1 neighbour (2 hops); the question vector says which."""
    rng = np.random.default_rng(seed)
    questions, vectors, gold = [], [], []
    for _ in range(n):
        edges = [(0, r, 1 + r) for r in range(3)]
        nxt = 4
        for mid in (1, 2, 3):
            for r in range(3):
                edges.append((mid, r, nxt))
                nxt += 1
        order = rng.permutation(len(edges))  # pool order carries no information
        edges = [edges[i] for i in order]
        kind = int(rng.integers(2))
        answer = 1 if kind == 0 else next(t for h, r, t in edges if h == 2 and r == 2)
        head = np.array([h for h, _, _ in edges])
        tail = np.array([t for _, _, t in edges])
        gt = np.array([(h == 0 and r == 0) if kind == 0 else ((h == 0 and r == 1) or (h == 2 and r == 2))
                       for h, r, _ in edges])
        walks = gt_walks(head, tail, gt, nxt, np.array([0]), np.array([answer]), 2, rng)
        ids = torch.from_numpy(rng.choice(64, nxt, replace=False))
        questions.append(QuestionGraph(torch.from_numpy(head), torch.from_numpy(tail),
                                       torch.tensor([r for _, r, _ in edges]), ids, torch.tensor([0]),
                                       torch.tensor([answer]), torch.from_numpy(np.flatnonzero(gt)), kind + 1,
                                       f"q{kind}", kind + 1, torch.from_numpy(walks), torch.zeros(len(edges))))
        vectors.append(QUESTION_TOKENS[kind])
        gold.append({int(ids[answer])})
    return AgentData(questions, QuestionTokens(np.stack(vectors), np.ones((n, 3), dtype=bool)), gold)


def hits1(policy: PathPolicy, data: AgentData, cfg: GFlowNetConfig) -> float:
    ranked, _ = answer_questions(policy, data.questions, data.tokens, ENTITIES, cfg.beam_width, cfg.max_steps)
    return float(answer_metrics(ranked, data.gold, 1.0)["hits@1"].mean())


def uniform_policy(cfg: GFlowNetConfig) -> PathPolicy:
    """A random policy: select, Stop and planner heads output 0, no score prior (every relation group and Stop
    equally likely, every legal candidate of a group equally likely)."""
    policy = PathPolicy(TEXT, 3, cfg.dim, cfg.heads, cfg.layers, cfg.ffn, cfg.entity_dim, cfg.max_steps)
    for head in (policy.select, policy.stop, policy.planner.out[-1]):
        torch.nn.init.zeros_(head.weight)
        torch.nn.init.zeros_(head.bias)
    torch.nn.init.zeros_(policy.score_prior)
    return policy.eval()


def test_resumed_run_ends_with_the_same_weights(tmp_path) -> None:
    cfg = GFlowNetConfig(**TINY, steps=30)
    train, validation = synthetic(40, 0), synthetic(20, 1)
    whole = train_gflownet(cfg, train, validation, ENTITIES, RELATIONS, tmp_path / "a", log=lambda _: None)
    first = train_gflownet(cfg, train, validation, ENTITIES, RELATIONS, tmp_path / "b", log=lambda _: None,
                           stop_after=10)
    assert first.history[-1]["step"] == 10
    rest = train_gflownet(cfg, train, validation, ENTITIES, RELATIONS, tmp_path / "b", log=lambda _: None)
    assert rest.resumed_from == 10 and [r["step"] for r in rest.history] == [10, 20, 30]
    a = torch.load(tmp_path / "a" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "b" / "last.pt", weights_only=True)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert [r["val_hits@1"] for r in whole.history] == [r["val_hits@1"] for r in rest.history]
    again = train_gflownet(cfg, train, validation, ENTITIES, RELATIONS, tmp_path / "b", log=lambda _: None)
    assert again.resumed_from == 30 and again.best_step == whole.best_step  # finished: nothing retrained


def test_tb_and_subtb_learn_the_synthetic_task_and_beat_a_uniform_policy(tmp_path) -> None:
    train, validation = synthetic(80, 0), synthetic(40, 1)
    uniform = hits1(uniform_policy(GFlowNetConfig(**TINY)), validation, GFlowNetConfig(**TINY))
    for objective in ("tb", "subtb"):
        cfg = GFlowNetConfig(**TINY, steps=60, objective=objective)
        result = train_gflownet(cfg, train, validation, ENTITIES, RELATIONS, tmp_path / objective,
                                log=lambda _: None)
        policy, state = load_policy(result.checkpoint)
        learned = hits1(policy, validation, cfg)
        assert state["step"] == result.best_step and learned == result.best_hits1
        assert learned >= 0.9 and learned > uniform + 0.3, (objective, learned, uniform)
