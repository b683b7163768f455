"""validate's health checks of the cluster itself (issue 22): ``stack``, ``storage``, ``interconnect``.

Each runs after the hosts' preflight and before Ray starts; ``--checks`` picks them, and
``--profile health`` runs all three without training.
"""
