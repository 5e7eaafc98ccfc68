"""The question-answering agent (the LangGraph graph in ``graphs/agent/`` only wires these), one folder per kind
of KG and one for offline work:

- :mod:`.kn` — over a knowledge network (ontology + instances); :mod:`.kg` — over a triple graph behind SPARQL;
- shared by both: the node contract (:mod:`.node`: ``AgentRun``, ``traced``, ``planned``, ``stop``), the state and
  run settings (:mod:`.state`), the lazily opened stores and clients (:mod:`.resources`), the step tree a run
  prints (:mod:`.render`), conversation threads (:mod:`.threads`), LangGraph's messages convention
  (:mod:`.messages`) and serving helpers (:mod:`.serving`, :mod:`.inline_app`);
- :mod:`.training` — intent-ranker training, Cypher parsing, gold answers, evaluation: never imported online.

    python -c "from graphs.agent.run import agent_answerer; print(agent_answerer('demo', None, kg='demo')('who directed Heat'))"
"""
