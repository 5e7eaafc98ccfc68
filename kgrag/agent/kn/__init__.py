"""The agent over a knowledge network (ontology + instances): one step per graph node (:mod:`.steps`), the
LLM-free planner (:mod:`.planner`, over the intent ranker of :mod:`.intent` or kn_search's recalled schema) and its
topic linking (:mod:`.linking`), the LLM planner (:mod:`.llm_planner`), the tools it calls (:mod:`.tools`,
:mod:`.instance_queries`) and the answer with its evidence (:mod:`.answers`).

    from kgrag.agent.kn import steps   # steps.extract_keywords(state, run) … steps.answer(state, run)
"""
