"""Settings of the H-RAG retrieval stage (G_retrieval size, retriever model and training, g_agent)."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RetrieverConfig", "MATERIALISATION", "UNCAPPED_BY_DEFAULT"]

#: fields that shape g_agent, not the trained scorer (a loaded checkpoint takes their current values)
MATERIALISATION = {"anchor_top_k", "chain_weight", "chain_max", "chain_min_share"}

#: budget fields added after runs were trained: at 0 (the default) they are not part of the fingerprint
UNCAPPED_BY_DEFAULT = {"max_validation_questions", "max_chain_questions"}


class RetrieverConfig(BaseModel):
    """Everything that decides a trained retriever; ``fingerprint`` names its checkpoints."""

    model_config = ConfigDict(extra="forbid")

    # G_retrieval (PPR)
    top_n: int = Field(500, ge=1, description="PPR nodes kept per question")
    max_triples: int = Field(3000, ge=1, description="cap on the triples among them (best PPR ends first)")
    ppr_epsilon: float = Field(1e-5, gt=0, le=1e-2, description="residual per unit of degree below which the "
                               "local (push) PPR stops: its work is O(1 / (epsilon * restart)) edges")
    ppr_focus_floor: float = Field(0.1, gt=0, le=1, description="the question-aware walk: an edge whose relation "
                                   "is on none of the chain prior's likely chains for the question is taken with "
                                   "this weight against 1 (1 = the even walk). Inside 10M distractor triples it "
                                   "keeps 3-hop answers in G_retrieval (0.60 -> 0.99 of them)")
    max_off_focus_triples: int = Field(1000, ge=0, description="of a focused G_retrieval's max_triples, at most "
                                       "this many on relations off the question's likely chains (best PPR ends "
                                       "first): inside 10M distractor triples they otherwise take ~2,600 of ~2,700")
    # model
    hidden: int = Field(128, ge=8)
    proj: int = Field(64, ge=4)
    entity_proj: int = Field(32, ge=1)
    # training
    epochs: int = Field(6, ge=1)
    batch_questions: int = Field(32, ge=1)
    negatives: int = Field(256, ge=1, description="negative triples sampled per question per step")
    max_positives: int = Field(256, ge=1, description="positive triples sampled per question per step")
    lr: float = Field(2e-3, gt=0)
    weight_decay: float = Field(1e-5, ge=0)
    patience: int = Field(2, ge=1, description="epochs without validation gain before stopping")
    # the budget: which questions the stages build samples, g_agent and labels for (a seeded sample of each split;
    # 0 = the whole split), so a stage's cost follows the budget, not the graph or the dataset's size
    max_train_questions: int = Field(0, ge=0, description="0 = the whole train split")
    max_validation_questions: int = Field(0, ge=0, description="validation questions the retriever's early "
                                          "stop, g_agent and the reasoner's validation see (0 = the whole split)")
    max_chain_questions: int = Field(0, ge=0, description="train questions whose relation chains are read off the "
                                     "KG for the chain prior and the relation planner (0 = the whole split)")
    early_stop_questions: int = Field(600, ge=1, description="validation questions scored after each epoch")
    early_stop_k: int = Field(100, ge=1)
    seed: int = 0
    # g_agent (spec §4.4)
    anchor_top_k: int = Field(200, ge=1, description="triples kept per question in g_agent (a materialisation "
                              "setting, not part of the trained scorer: a loaded checkpoint takes the current value)")
    # the relation-chain prior (kgrag.hrag.retrieval.chains), also a materialisation setting
    chain_weight: float = Field(100.0, ge=0, description="score added per unit of P(chain) to the triples on a "
                                "predicted chain's walks (0 = no prior: the scorer alone ranks)")
    chain_max: int = Field(3, ge=1, le=16, description="most probable chains walked per question")
    chain_min_share: float = Field(0.05, gt=0, le=1, description="a chain is walked when its probability is at "
                                   "least this share of the best chain's")

    def fingerprint(self) -> str:
        """Hash of the fields that change the trained model (not the g_agent size); a budget field at its
        default (0: the whole split) is left out, so a run trained before the field existed keeps its name."""
        fields = {k: v for k, v in self.model_dump(exclude=MATERIALISATION).items()
                  if not (k in UNCAPPED_BY_DEFAULT and v == 0)}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]
