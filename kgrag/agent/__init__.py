"""The question-answering agent (the LangGraph graph in ``graphs/agent/`` only wires these), one folder per kind
of KG, one for the contract they share and two for offline work:

- :mod:`.turn` — what both kinds share: the node contract (``AgentRun``, ``traced``, ``planned``, ``stop``), the
  state and run settings, LangGraph's messages convention;
- :mod:`.kn` — over a knowledge network (ontology + instances); :mod:`.kg` — over a triple graph behind SPARQL;
  each with its resources (:mod:`.kn.resources`, :mod:`.kg.resources`) and what its steps need of them
  (:mod:`.kn.needs`, :mod:`.kg.needs`);
- at the top, only what joins the kinds: the one lazily opened set of stores and clients (:mod:`.resources`), the
  step tree a run prints (:mod:`.render`) and conversation threads (:mod:`.threads`); the children never import it;
- :mod:`.training` — intent-ranker training, Cypher parsing, gold answers; :mod:`.evaluation` — the agent's
  evaluation on question files: neither is imported online.

Served elsewhere: the inline routes in :mod:`kgrag.api.agent_routes`, a run as events and its evidence graph in
:mod:`kgrag.console.agent_events`, the tests' ``langgraph dev`` launcher in :mod:`harness.servers.langgraph_dev`.

    python -c "from graphs.agent.run import agent_answerer; print(agent_answerer('demo', None, kg='demo')('who directed Heat'))"
"""
