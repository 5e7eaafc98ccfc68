"""Query graphs: what a question asks beyond its topic and one relation (issue 44) — the plan
(:mod:`.plan`), the question's structure words (:mod:`.cues`), and the planners / executors that build and run a plan
on a triple KG and on a knowledge network.

    python -c "from kgrag.query_graph.cues import read_cues; print(read_cues('how many books did Orwell write'))"
"""
