"""The main job (``kgrag run``, what ``make run`` runs): :mod:`.run` runs and prints its stages in order; :mod:`.parts`
holds the parts that print nothing (budgets, the default dataset, loading the network in the background), which
the flows and bench/ reuse.

    from kgrag.main_job.parts import RUN_RETRIEVER_CONFIG, default_dataset, ensure_network
"""
