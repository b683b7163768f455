"""The extension point: a check names the probes it needs and judges their data into a verdict."""

from __future__ import annotations

import abc
from collections.abc import Mapping

from patchctl.preflight.model import Context, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult


class Check(abc.ABC):
    """One preflight check. Subclasses set ``name``, ``title`` and ``probes`` and implement judge().

    ``judge`` runs in patchctl's process and must be cheap and must not import heavy packages:
    whatever imports torch, vLLM, Ray or verl belongs in a probe, which runs in a subprocess.
    """

    #: registry key, also the JSON name
    name: str = ""
    #: short label for the table
    title: str = ""
    #: the subprocess probes this check needs (shared by name with other checks)
    probes: tuple[Probe, ...] = ()

    @abc.abstractmethod
    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        """Decide the verdict; ``data`` holds this check's probes, all of them DONE."""

    def probe_failed(self, ctx: Context, result: ProbeResult) -> Verdict:
        """The verdict when a probe crashed or hung: a fail that says how, never a traceback."""
        what = self.title or self.name
        return Verdict(
            Status.FAIL,
            f"the {result.name} probe {result.failure(ctx.timeout)}",
            f"run `{ctx.python} -c 'import {result.name}'` to see the {what} failure in full",
        )


def not_installed(package: str, ctx: Context, consequence: str, install: str, status: Status = Status.FAIL) -> Verdict:
    """The one phrasing for a missing package: what cannot run, and the install line as the fix."""
    return Verdict(status, f"{package} is not installed in {ctx.python}: {consequence}", install)


def requirement(ctx: Context, name: str, fallback: str = "") -> str:
    """``name`` plus the specifier the target declares for it (``vllm>=0.8.5,<=0.11.0``)."""
    spec = ctx.requirements.get(name, fallback)
    return f"'{name}{spec}'" if spec else name
