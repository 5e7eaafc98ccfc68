"""Training of the path policy with trajectory balance (or sub-trajectory balance), spec h-rag.md (the H-RAG
specification of a triple retriever and a GFlowNet path reasoner) §4.3.

Each step samples one trajectory per question for ``batch_questions`` train questions (on-policy, ε-uniform
exploration decaying linearly), scores it with ``log R = γ · log(α·Recall + β·1[correct] + ε)`` and takes one
AdamW step on the TB (or SubTB) loss. Every ``checkpoint_every`` steps: the policy answers a fixed sample of
validation questions (beam search, Hits@1), ``best.pt`` keeps the best, ``last.pt`` everything to resume (model,
optimiser, sampling RNG, step, history). The batch of step ``s`` depends on ``(seed, s)`` alone, so a run killed
after a checkpoint and resumed ends with the same weights as one never interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from kgrag.hrag.gflownet.answers import answer_metrics, answer_questions
from kgrag.hrag.gflownet.config import GFlowNetConfig
from kgrag.hrag.gflownet.data import QuestionGraph, collate
from kgrag.hrag.gflownet.losses import subtrajectory_balance, trajectory_balance
from kgrag.hrag.gflownet.plan_data import PlanData
from kgrag.hrag.gflownet.planner import plan_loss
from kgrag.hrag.gflownet.policy import PathPolicy
from kgrag.hrag.gflownet.rollout import path_rewards, replay_actions, sample_trajectories
from kgrag.hrag.retrieval.text import QuestionTokens
from kgrag.hrag.retrieval.train import restore_model, save_checkpoint
from kgrag.progress import counted

__all__ = ["finished_run", "AgentData", "TrainResult", "train_gflownet", "load_policy", "exploration", "new_policy"]


@dataclass
class AgentData:
    """A split's g_agent questions with their (masked) question token vectors and gold answer sets (global ids)."""

    questions: list[QuestionGraph]
    tokens: QuestionTokens
    gold: list[set[int]]

    def __len__(self) -> int:
        return len(self.questions)

    def subset(self, rows: Sequence[int]) -> AgentData:
        return AgentData([self.questions[i] for i in rows], self.tokens[list(rows)], [self.gold[i] for i in rows])

    @property
    def hops(self) -> list[int]:
        return [q.hop for q in self.questions]


@dataclass
class TrainResult:
    checkpoint: Path
    best_step: int
    best_hits1: float
    history: list[dict] = field(default_factory=list)
    resumed_from: int = 0  # steps already done when this call started
    train_seconds: float = 0.0  # sampling + optimisation, all calls of the run (validation excluded)


def finished_run(checkpoint_dir: Path, cfg: GFlowNetConfig) -> TrainResult | None:
    """The result of the run in ``checkpoint_dir`` when it trained ``cfg`` to its last step (a re-run then needs
    no data), else None."""
    last, best = Path(checkpoint_dir) / "last.pt", Path(checkpoint_dir) / "best.pt"
    if not (last.is_file() and best.is_file()):
        return None
    state = torch.load(last, map_location="cpu", weights_only=True)
    if state.get("fingerprint") != cfg.fingerprint() or state.get("step", 0) < cfg.steps:
        return None
    return TrainResult(best, state["best_step"], state["best_hits1"], state["history"], state["step"],
                       state["train_seconds"])


def exploration(cfg: GFlowNetConfig, step: int) -> float:
    """ε_exp at ``step``: linear from ``explore_start`` to ``explore_end`` over ``explore_steps``, then flat."""
    frac = min(step / cfg.explore_steps, 1.0)
    return cfg.explore_start + frac * (cfg.explore_end - cfg.explore_start)


def new_policy(cfg: GFlowNetConfig, relation_vectors: np.ndarray) -> PathPolicy:
    torch.manual_seed(cfg.seed)
    return PathPolicy(relation_vectors.shape[1], relation_vectors.shape[0], cfg.dim, cfg.heads, cfg.layers, cfg.ffn,
                      cfg.entity_dim, cfg.max_steps, torch.from_numpy(np.asarray(relation_vectors, np.float32)))


def load_policy(path: Path) -> tuple[PathPolicy, dict]:
    """The policy of a ``best.pt`` and its saved fields (config, step, metrics, threshold)."""
    return restore_model(path, lambda state: PathPolicy(**state["hparams"]))


def _batch_rows(n: int, batch: int, seed: int, step: int) -> np.ndarray:
    """Rows of step ``step``: epochs are fixed permutations seeded by ``(seed, epoch)``."""
    per_epoch = max(1, -(-n // batch))
    epoch, k = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n)
    return order[k * batch : (k + 1) * batch]


def _loss(cfg: GFlowNetConfig, traj, log_reward: torch.Tensor) -> torch.Tensor:
    if cfg.objective == "subtb":
        return subtrajectory_balance(traj.log_flow, traj.log_pf, traj.state.length, log_reward, cfg.subtb_lambda)
    return trajectory_balance(traj.log_z, traj.log_pf.sum(dim=1), log_reward)


def _plan_loss(policy: PathPolicy, plan: PlanData, rng: np.random.Generator, questions: int) -> torch.Tensor:
    """The planner's loss (:func:`~kgrag.hrag.gflownet.planner.plan_loss`) on ``questions`` drawn from ``plan``."""
    device = policy.relation_vectors.device
    question, mask, actions, group = (t.to(device) for t in plan.sample(rng, questions))
    return plan_loss(policy.plan(question, mask, actions), actions, policy.planner.stop, group)


def warm_up_planner(policy: PathPolicy, plan: PlanData, cfg: GFlowNetConfig) -> float:
    """``cfg.plan_warmup`` steps of the planner's loss alone (``batch_questions`` questions a step), so that TB
    starts with a planner that reads the question; returns the last loss. Deterministic given ``cfg.seed``."""
    if not cfg.plan_warmup or not len(plan):
        return float("nan")
    optimiser = torch.optim.AdamW(policy.planner.parameters(), lr=cfg.lr)
    rng = np.random.default_rng([cfg.seed, 7])
    loss = torch.zeros(())
    for _ in counted(range(cfg.plan_warmup), "planner warm-up", "step"):
        loss = _plan_loss(policy, plan, rng, cfg.batch_questions)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.planner.parameters(), cfg.grad_clip)
        optimiser.step()
    return float(loss.detach())


def train_gflownet(cfg: GFlowNetConfig, train: AgentData, validation: AgentData, entity_vectors: np.ndarray,
                   relation_vectors: np.ndarray, checkpoint_dir: Path, log: Callable[[str], None] = print,
                   meta: dict | None = None, stop_after: int | None = None, plan: PlanData | None = None
                   ) -> TrainResult:
    """Train (or resume, or return the finished run in ``checkpoint_dir``); ``stop_after`` ends this call after
    that many steps in total (a deliberate interruption, as a kill after a checkpoint would be). ``plan`` is the
    planner's training set (the train questions' relation chains read off the KG); without it, the relation
    chains of the train g_agent's GT walks stand in."""
    checkpoint_dir = Path(checkpoint_dir)
    checkpoint_dir.mkdir(parents=True, exist_ok=True)
    last, best = checkpoint_dir / "last.pt", checkpoint_dir / "best.pt"
    device = torch.device(cfg.torch_device)
    policy = new_policy(cfg, relation_vectors).to(device)
    head_params = [*policy.log_z.parameters(), *policy.log_flow.parameters()]
    head_ids = {id(p) for p in head_params}
    optimiser = torch.optim.AdamW([
        {"params": [p for p in policy.parameters() if id(p) not in head_ids], "lr": cfg.lr},
        {"params": head_params, "lr": cfg.log_z_lr}], weight_decay=cfg.weight_decay)
    planner_ids = {id(p) for p in policy.planner.parameters()}
    encoder_params = [p for p in policy.parameters() if id(p) not in planner_ids]
    generator = torch.Generator(device=device).manual_seed(cfg.seed + 1)
    history: list[dict] = []
    start, best_hits1, best_step, train_seconds = 0, -1.0, -1, 0.0
    if last.is_file():
        state = torch.load(last, map_location=device, weights_only=True)
        if state["fingerprint"] == cfg.fingerprint():
            policy.load_state_dict(state["model"])
            optimiser.load_state_dict(state["optimiser"])
            generator.set_state(state["generator"].cpu())
            history, start = state["history"], state["step"]
            best_hits1, best_step, train_seconds = state["best_hits1"], state["best_step"], state["train_seconds"]
            log(f"resuming GFlowNet training at step {start} ({checkpoint_dir})")
    resumed_from = start
    trainable = [i for i, q in enumerate(train.questions) if q.answers.numel() and q.head.numel()]
    train = train.subset(trainable)
    if plan is None:
        plan = PlanData.from_walks(train.questions, train.tokens)
    if start == 0 and cfg.plan_warmup:
        w0 = time.perf_counter()
        plan_nll = warm_up_planner(policy, plan, cfg)
        train_seconds += time.perf_counter() - w0
        log(f"planner warm-up: {cfg.plan_warmup} steps on {len(plan)} questions' chains, −log P(chain) "
            f"{plan_nll:.3f} ({train_seconds:.0f}s)")
    check = validation.subset(np.sort(np.random.default_rng(cfg.seed).permutation(len(validation))
                                      [: cfg.validation_questions]).tolist())
    end = cfg.steps if stop_after is None else min(cfg.steps, stop_after)
    window: dict[str, float] = {"loss": 0.0, "reward": 0.0, "correct": 0.0, "recall": 0.0, "length": 0.0, "n": 0}
    t0 = time.perf_counter()
    for s in counted(range(start, end), "GFlowNet training", "step"):
        policy.train()
        rows = _batch_rows(len(train), cfg.batch_questions, cfg.seed, s)
        batch = collate([train.questions[i] for i in rows], train.tokens[rows], entity_vectors).to(device)
        with torch.device(device):  # tensors the rollout creates live beside the model
            forced = replay_actions([train.questions[i].gt_walks for i in rows], cfg.gt_replay, batch.pool.size,
                                    cfg.max_steps, generator) if cfg.gt_replay else None
            traj = sample_trajectories(policy, batch, cfg.max_steps, exploration(cfg, s), generator,
                                       with_flows=cfg.objective == "subtb", forced=forced)
            r, recall, correct = path_rewards(batch, traj, cfg.alpha, cfg.beta, cfg.epsilon)
            loss = _loss(cfg, traj, cfg.reward_exponent * r.log())
            loss = loss + cfg.plan_weight * _plan_loss(policy, plan, np.random.default_rng([cfg.seed, 11, s]),
                                                       cfg.batch_questions)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(encoder_params, cfg.grad_clip)  # apart: TB's large gradients would
        torch.nn.utils.clip_grad_norm_(policy.planner.parameters(), cfg.grad_clip)  # shrink the planner's
        optimiser.step()
        window["loss"] += float(loss.detach())
        window["reward"] += float(r.mean())
        window["correct"] += float(correct.float().mean())
        window["recall"] += float(recall.mean())
        window["length"] += float(traj.state.length.float().mean())
        window["n"] += 1
        if (s + 1) % cfg.checkpoint_every == 0 or s + 1 == cfg.steps:
            train_seconds += time.perf_counter() - t0
            n = window.pop("n")
            row = {"step": s + 1, **{k: v / n for k, v in window.items()}, "explore": exploration(cfg, s),
                   "train_seconds": train_seconds,
                   "trajectories_per_s": (s + 1) * cfg.batch_questions / max(train_seconds, 1e-9)}
            v0 = time.perf_counter()
            hits1 = _validate(policy, check, entity_vectors, cfg)
            row.update({"val_hits@1": hits1, "val_seconds": time.perf_counter() - v0})
            history.append(row)
            log(f"step {s + 1}: loss {row['loss']:.3f}, correct {row['correct']:.3f}, val hits@1 {hits1:.4f} "
                f"({train_seconds:.0f}s train, {row['val_seconds']:.0f}s validation)")
            if hits1 > best_hits1:
                best_hits1, best_step = hits1, s + 1
                save_checkpoint({"model": {k: v.cpu() for k, v in policy.state_dict().items()}, "hparams": policy.hparams, "config": cfg.model_dump(),
                       "fingerprint": cfg.fingerprint(), "step": s + 1, "val_hits@1": hits1, "threshold": 1.0,
                       "meta": dict(meta or {})}, best)
            save_checkpoint({"model": policy.state_dict(), "optimiser": optimiser.state_dict(),
                   "generator": generator.get_state(), "history": history, "step": s + 1, "best_hits1": best_hits1,
                   "best_step": best_step, "train_seconds": train_seconds, "fingerprint": cfg.fingerprint()}, last)
            window = {k: 0.0 for k in ("loss", "reward", "correct", "recall", "length", "n")}
            t0 = time.perf_counter()
    return TrainResult(best, best_step, best_hits1, history, resumed_from, train_seconds)


def _validate(policy: PathPolicy, data: AgentData, entity_vectors: np.ndarray, cfg: GFlowNetConfig) -> float:
    policy.eval()
    with torch.device(cfg.torch_device):
        ranked, _ = answer_questions(policy, data.questions, data.tokens, entity_vectors, cfg.beam_width,
                                     cfg.max_steps, cfg.exclude_topics,
                                     lookahead=cfg.beam_lookahead, complete=cfg.chain_completion,
                                     reasoner=cfg.reasoner)
    return float(answer_metrics(ranked, data.gold, threshold=1.0)["hits@1"].mean())
