"""The agent over a triple graph behind SPARQL (MetaQA, the demo KG, Freebase): one step per graph node
(:mod:`.steps`), the KG tools and H-RAG calls it runs (:mod:`.calls`), its LLM planner (:mod:`.llm`) and the graph
it works on (:mod:`.triple_kg`: store, entity linker, reasoner, KG sessions).

    from kgrag.agent.kg import steps   # steps.extract_keywords(state, run) … steps.answer(state, run)
"""
