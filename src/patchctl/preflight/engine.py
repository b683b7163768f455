"""Running the checks: every probe subprocess at once, each light check in a thread beside them.

The run takes about as long as its slowest probe. A probe that crashes or hangs becomes its
checks' ``fail``; a check whose own judging raises becomes a ``fail`` that says so, so one broken
check never hides the others' verdicts.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

from patchctl import progress
from patchctl.errors import PatchctlError
from patchctl.preflight.base import Check
from patchctl.preflight.model import CheckResult, Context, EnvReport, Status, Verdict
from patchctl.preflight.probe import Probe, ProbeResult, ProbeState, run_probe
from patchctl.preflight.registry import CHECKS


def _probe(probe: Probe, ctx: Context) -> ProbeResult:
    try:
        return run_probe(probe, ctx)
    except (PatchctlError, OSError) as exc:  # e.g. the interpreter to check does not exist
        return ProbeResult(probe.name, ProbeState.CRASHED, {}, 0.0, None, str(exc))


def _judge(check: Check, ctx: Context, probes: Mapping[str, Future[ProbeResult]]) -> CheckResult:
    start = time.monotonic()
    waited = 0.0
    data: dict[str, ProbeResult] = {}
    verdict: Verdict | None = None
    for p in check.probes:
        result = probes[p.name].result()
        waited = max(waited, result.seconds)
        data[p.name] = result
        if not result.done and verdict is None:
            verdict = check.probe_failed(ctx, result)
    judged = time.monotonic()
    if verdict is None:
        try:
            verdict = check.judge(ctx, data)
        except PatchctlError as exc:
            verdict = Verdict(Status.FAIL, str(exc), "fix the error above, then rerun")
        except Exception as exc:  # a bug in one check must not cost the other verdicts
            verdict = Verdict(
                Status.FAIL,
                f"the {check.name} check itself failed: {type(exc).__name__}: {exc}",
                "please report this patchctl bug",
            )
    own = time.monotonic() - judged
    seconds = waited + own if check.probes else time.monotonic() - start
    return CheckResult(check.name, check.title or check.name, verdict.status, verdict.value, seconds, verdict.fix)


def run(ctx: Context, checks: Mapping[str, Check] | None = None, only: Iterable[str] = ()) -> EnvReport:
    """Run ``checks`` (default: the registry; ``only`` narrows it by name) and report in their order."""
    checks = CHECKS if checks is None else checks
    wanted = [checks[n] for n in only] if only else list(checks.values())
    start = time.monotonic()
    probes: dict[str, Probe] = {p.name: p for c in wanted for p in c.probes}
    # the probes import torch, vLLM and Ray: 15 s of a blank screen on a cold cache (issue 39), so
    # the wait says how many checks are done and which probes it is still waiting for
    with (
        progress.step("verify --env: checking", total=len(wanted)) as shown,
        ThreadPoolExecutor(max_workers=max(1, len(probes) + len(wanted))) as pool,
    ):
        futures = {name: pool.submit(_probe, p, ctx) for name, p in probes.items()}
        results = [pool.submit(_judge, c, ctx, futures) for c in wanted]
        for f in results:
            f.add_done_callback(lambda _f: shown.advance(_waiting(futures)))
        done = tuple(f.result() for f in results)
    return EnvReport(done, time.monotonic() - start)


def _waiting(futures: Mapping[str, Future[ProbeResult]]) -> str:
    """``verify --env: waiting for vllm, torch``: the probes still running, for the progress line."""
    left = sorted(name for name, f in futures.items() if not f.done())
    return f"verify --env: waiting for {', '.join(left)}" if left else "verify --env: judging"
