"""What the terminal shows (rich): an agent turn as a tree, the flows' markdown tables and one-row figure tables.
Shared by the command line (:mod:`kgrag.cli`) and the main job (:mod:`kgrag.run`); no module here imports either.

    from kgrag.terminal.turn_tree import state_tree; Console().print(state_tree(state))
"""
