"""``kgrag run``: the main job (what ``make run`` runs). This entry point hands the flows and the agent graph to
:func:`kgrag.run.main` as :class:`kgrag.run.Jobs` (nothing below the entry points imports ``flows/`` or ``graphs/``).

    kgrag run
"""

from __future__ import annotations

from kgrag.cli.output import friendly_errors

__all__ = ["run"]


@friendly_errors
def run() -> None:
    """The main job (what `make run` runs): prepare MetaQA when the data dir has it (else the demo KG), answer one
    dev question with SPARQL, train the H-RAG retriever and reasoner on a budget, answer the validation split and
    two questions in memory, then the agent over the knowledge network; prints the wall time of each stage."""
    from flows.prepare_data import prepare_data
    from flows.retriever_eval import retriever_eval
    from flows.train_gflownet import train_gflownet
    from flows.train_intent import train_intent
    from flows.train_retriever import train_retriever
    from graphs.agent.run import agent_answerer
    from kgrag.run import Jobs, main

    main(Jobs(prepare_data=prepare_data, train_retriever=train_retriever, retriever_eval=retriever_eval,
              train_gflownet=train_gflownet, train_intent=train_intent, agent_answerer=agent_answerer))
