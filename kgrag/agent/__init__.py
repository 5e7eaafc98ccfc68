"""The question-answering agent over a knowledge network (KN query tools, topic linking, planners, the LangGraph
graph) and its medical training data: CE-Prompt Cypher targets and raw-data gold answers (:mod:`.cypher`,
:mod:`.gold`), the trained question → schema-element ranker (:mod:`.intent`, :mod:`.intent_train`) and its
30-line baseline (:mod:`.intent_baseline`)."""
