"""The main job (``kgrag run``, what ``make run`` runs): :mod:`.run` runs and prints its stages in order; :mod:`.parts`
holds the parts that print nothing (budgets, the default dataset, loading the network in the background), which
bench/ reuses. Only the command that runs it (:mod:`kgrag.cli.run`) imports this package: the flows and the rest of
kgrag never do (tests/test_architecture.py).

    from kgrag.main_job.parts import RUN_RETRIEVER_CONFIG, default_dataset
"""
