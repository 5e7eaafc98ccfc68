"""Offline work on the agent, never imported by the online path (the agent graph, the servers): the intent
ranker's training (:mod:`.train_intent`, on CE-Prompt's Cypher questions parsed by :mod:`.cypher` into the gold of
:mod:`.gold`), its baseline (:mod:`.baseline`) and the self-supervised ranker's training
(:mod:`.train_self_intent`, on questions :mod:`.synthesise` writes). The agent's evaluation is beside it, in
:mod:`kgrag.agent.evaluation`.

    python -m flows.train_intent        # trains the ranker the online agent loads (kgrag.agent.kn.intent)
"""
