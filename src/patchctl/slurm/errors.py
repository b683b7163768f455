"""Conditions that stop a validate job before it could run, each a :class:`PatchctlError` (exit 2).

Those that end a job already running (the queue timeout, a node lost, the time limit, a
cancellation from outside) are the run's FAIL verdict (exit 1), built by follow.py's
``ended_cause``; these are the ones where nothing ran: the job could not be submitted as asked.
"""

from __future__ import annotations

from patchctl.errors import PatchctlError


class SlurmRefused(PatchctlError):
    """sbatch refused the job (an unknown partition or account, a limit of the QOS...)."""

    def __init__(self, cluster: str, login: str, message: str) -> None:
        self.cluster, self.login, self.message = cluster, login, message
        super().__init__(
            f"{cluster}: sbatch on {login} refused the job: {message}; fix the cluster's partition, account, "
            "qos, time or sbatch options"
        )


class SlurmNotSupported(PatchctlError):
    """An option or setting validate does not take on a Slurm cluster (yet)."""

    def __init__(self, cluster: str, what: str, fix: str) -> None:
        self.cluster = cluster
        super().__init__(f"{cluster}: {what} on a Slurm cluster; {fix}")


class LoginFailed(PatchctlError):
    """The login node could not be reached, or a step there failed before the job was submitted."""

    def __init__(self, cluster: str, login: str, step: str, message: str) -> None:
        self.cluster, self.login = cluster, login
        super().__init__(f"{cluster}: {step} on the login node {login} failed: {message}")
