"""The judge step of ``patchctl train``: the profile's gates over what the trainer did, then
``doctor`` over the log when a gate failed, so a failed run's report names the likely cause."""

from __future__ import annotations

import importlib
from pathlib import Path

from patchctl.errors import PatchctlError
from patchctl.train import codehook, signals, weightsmatch
from patchctl.train import gates as gates_mod
from patchctl.train.codeproof import Proof
from patchctl.train.model import DoctorFailed, Finding, Judgement, Ran
from patchctl.train.profiles import Gates
from patchctl.train.weightsmatch import Sync


def judge(
    ran: Ran, gates: Gates, log: Path, proof: Proof | None = None, weights: tuple[Sync, ...] | None = None
) -> Judgement:
    """Every gate of the profile, the reward-independent ones, the code hook's (and, where the hook
    ran, ``weights-match`` over its fingerprints), the verdict, and on a failure doctor's reading of ``log``."""
    results = gates_mod.evaluate(ran.finished.returncode, ran.scan, gates, ran.timings.first_step)
    results += signals.evaluate(ran.scan, gates)
    results.append(codehook.gate(proof))
    if weights is not None:
        results.append(weightsmatch.judge(weights))
    passed = gates_mod.verdict(results)
    return Judgement(tuple(results), passed, None if passed else diagnose(log), proof)


def diagnose(log: Path) -> tuple[Finding | DoctorFailed, ...] | None:
    """Known failure signatures in the log (``patchctl doctor``), or None where doctor is absent."""
    try:
        doctor = importlib.import_module("patchctl.doctor")
    except ImportError:
        return None
    try:
        with doctor.open_log(log) as reader:
            found = doctor.diagnose(reader, doctor.load_signatures(None), str(log))
    except (PatchctlError, OSError) as exc:
        return (DoctorFailed(str(exc)),)
    # root cause first; the title says "possibly" where doctor could not confirm it
    return tuple(
        Finding(m.signature.id, m.headline, m.line, m.excerpt, m.signature.cause, m.signature.fix)
        for m in found.matches
    )
