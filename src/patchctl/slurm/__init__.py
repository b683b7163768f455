"""Slurm clusters: migrate through a login node, validate as one batch job (README, "On a Slurm cluster").

A ``scheduler = "slurm"`` cluster (settings.py) has one host, its login node; migrate sends the
tree there as to any host, then confirms every compute node sees it (confirm.py); validate
submits one job (job.py, script.py) and follows it from the login node (follow.py).
"""
