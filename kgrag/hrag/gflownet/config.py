"""Settings of System 2 (the GFlowNet path reasoner): policy size, objective, reward, exploration, answering."""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GFlowNetConfig", "POLICY_VERSION"]

POLICY_VERSION = "policy-v6"  # bump when the policy's architecture or training changes (names new checkpoints)


class GFlowNetConfig(BaseModel):
    """Everything that decides a trained policy; ``fingerprint`` names its checkpoints."""

    model_config = ConfigDict(extra="forbid")

    # policy network (spec §4.2.2)
    dim: int = Field(64, ge=8, description="token width of the Transformer encoder")
    heads: int = Field(4, ge=1)
    layers: int = Field(2, ge=1)
    ffn: int = Field(128, ge=8)
    entity_dim: int = Field(16, ge=0, description="projection of the head/tail entity name vectors; 0 = unused")
    max_steps: int = Field(3, ge=1, description="edges on a path at most (Stop is forced after); MetaQA needs 3")
    max_pool_edges: int = Field(256, ge=1, description="g_agent edges a training question keeps (top-K first, then GT)")
    # objective (spec §4.3)
    objective: Literal["tb", "subtb"] = "tb"
    subtb_lambda: float = Field(0.9, gt=0, description="weight λ^(j-i) of a sub-trajectory of j-i transitions")
    alpha: float = Field(0.25, ge=0, description="reward weight of Recall(S_T, G*)")
    beta: float = Field(1.0, ge=0, description="reward weight of the answer-correct check")
    epsilon: float = Field(0.01, gt=0, description="reward floor (keeps log R finite)")
    reward_exponent: float = Field(3.0, gt=0, description="R^γ: sharpens P(S) ∝ R toward correct paths")
    # exploration (spec §4.3.2): ε_exp decays linearly from explore_start to explore_end over explore_steps
    explore_start: float = Field(0.1, ge=0, le=1)
    explore_end: float = Field(0.0, ge=0, le=1)
    explore_steps: int = Field(300, ge=1)
    # GT replay: a share of each batch replays a sampled GT path (topic → answer over GT edges), an off-policy
    # trajectory TB accepts as is; the rest is on-policy
    gt_replay: float = Field(0.5, ge=0, le=1, description="share of a batch's trajectories replaying a GT path")
    gt_walks: int = Field(4, ge=0, description="GT paths sampled per train question for replay")
    plan_warmup: int = Field(2000, ge=0, description="steps of the planner's loss alone before TB starts")
    plan_weight: float = Field(1.0, gt=0, description="weight of the relation planner's loss on the train "
                               "questions' relation chains, added to the TB loss (the planner learns from it alone)")
    # training
    steps: int = Field(1000, ge=1, description="optimiser steps (one batch of trajectories each)")
    batch_questions: int = Field(64, ge=1)
    lr: float = Field(3e-3, gt=0)
    log_z_lr: float = Field(5e-2, gt=0, description="learning rate of the log Z / flow heads")
    weight_decay: float = Field(0.0, ge=0)
    grad_clip: float = Field(1.0, gt=0)
    checkpoint_every: int = Field(50, ge=1, description="steps between checkpoints (and validation checks)")
    validation_questions: int = Field(500, ge=1, description="validation questions answered at each checkpoint")
    max_train_questions: int = Field(0, ge=0, description="0 = every question of the train g_agent")
    seed: int = 0
    max_plan_questions: int = Field(0, ge=0, description="train questions whose relation chains the planner learns "
                                    "from (a fixed sample, the same as the retriever's max_chain_questions gives, "
                                    "so both read one chain file; 0 = the whole split)")
    device: str = Field("auto", pattern=r"^(auto|cpu|cuda(:\d+)?|mps)$",
                        description="torch device of training; auto = the GPU when torch sees one, else the CPU")
    # answering
    beam_width: int = Field(16, ge=1, description="paths kept per step by the answer beam search")
    beam_lookahead: int = Field(8, ge=1, description="the beam keeps the best `beam_width` of the `beam_lookahead"
                                " · beam_width` most probable paths by the mass that can go on one step further;"
                                " 1 = plain beam")
    exclude_topics: bool = Field(True, description="a topic entity is never an answer")
    reasoner: Literal["beam", "planner"] = Field("planner", description="answer search: 'beam' — the policy's "
                                                 "beam over paths (the encoder at every step); 'planner' — the "
                                                 "planner's beam over relation chains walked in g_agent (fast)")
    chain_completion: bool = Field(True, description="answer with every entity the found paths' relation chains "
                                   "reach in g_agent, scored by the chain's mass (False: the beam's path ends only)")

    @property
    def torch_device(self) -> str:
        """``device`` resolved: ``auto`` is ``cuda`` when a GPU is present, else ``cpu``."""
        if self.device != "auto":
            return self.device
        import torch  # on use: torch costs ~3 s at import, and the CLI reads configs without it

        return "cuda" if torch.cuda.is_available() else "cpu"

    def fingerprint(self) -> str:
        """Hash of the fields that change the trained policy (not the answering settings)."""
        untrained = {"beam_width", "beam_lookahead", "exclude_topics", "chain_completion", "reasoner",
                     "validation_questions", "device"}
        fields = self.model_dump(exclude=untrained)
        if not fields["max_plan_questions"]:  # added later: at its default, a run trained before keeps its name
            del fields["max_plan_questions"]
        return hashlib.sha256(f"{POLICY_VERSION}:{json.dumps(fields, sort_keys=True)}".encode()).hexdigest()[:12]
