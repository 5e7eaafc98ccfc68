"""The contract of one agent turn that both kinds of KG share (:mod:`kgrag.agent.kn`, :mod:`kgrag.agent.kg`): the
node contract (:mod:`.node`: ``AgentRun``, ``traced``, ``planned``, ``stop``), the state and run settings
(:mod:`.state`) and LangGraph's messages convention (:mod:`.messages`). It imports nothing else of the agent.

    python -c "from kgrag.agent.turn.state import AgentSettings; print(AgentSettings(kg='demo').fingerprint())"
"""
