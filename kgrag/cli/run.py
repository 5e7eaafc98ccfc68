"""``kgrag run``: the main job (what ``make run`` runs). This entry point hands the flows and the agent graph to
:func:`kgrag.main_job.run.main` as :class:`kgrag.main_job.run.Jobs`, reached through :mod:`kgrag.cli.above` (only the
entry point imports ``flows/`` or ``graphs/``).

    kgrag run
"""

from __future__ import annotations

from kgrag.cli.above import above
from kgrag.cli.output import friendly_errors

__all__ = ["run"]


@friendly_errors
def run() -> None:
    """The main job (what `make run` runs): prepare MetaQA when the data dir has it (else the demo KG), answer one
    dev question with SPARQL, train the H-RAG retriever and reasoner on a budget, answer the validation split and
    two questions in memory, then the agent over a network; prints the wall time of each stage."""
    from kgrag.main_job.run import Jobs, main

    main(Jobs(prepare_data=above("flows.prepare_data").prepare_data,
              train_retriever=above("flows.train_retriever").train_retriever,
              retriever_eval=above("flows.retriever_eval").retriever_eval,
              train_gflownet=above("flows.train_gflownet").train_gflownet,
              train_intent=above("flows.train_intent").train_intent,
              agent_answerer=above("graphs.agent.run").agent_answerer))
