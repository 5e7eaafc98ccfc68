"""Offline evaluation of the agent on question files with gold answers (:mod:`.evaluate`: ``kgrag agent-eval``,
the agent benchmarks, the evaluation-reports flow), never imported by the online path (the agent graph, the
servers; tests/test_architecture.py checks it). Beside :mod:`kgrag.agent.training`, whose CE-Prompt gold it reads.

    python -c "from kgrag.agent.evaluation.evaluate import set_scores; print(set_scores(['a'], ['a', 'b']))"
"""
