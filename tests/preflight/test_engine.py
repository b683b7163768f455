"""The runner's robustness: a probe that segfaults, hangs or prints garbage is that check's fail."""

from __future__ import annotations

from collections.abc import Mapping

from patchctl.preflight import Context, Status, Verdict, run
from patchctl.preflight.base import Check
from patchctl.preflight.probe import Probe, ProbeResult, ProbeState, run_probe

SEGFAULT = Probe(
    "boom", "import os, signal\nprint('about to crash', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)", inline=True
)
HANG = Probe("hang", "import time\ntime.sleep(60)", inline=True)
NOISY = Probe(
    "noisy",
    "import json\nprint('library chatter')\nprint('@@patchctl-probe@@ ' + json.dumps({'x': 1}))\nprint('more chatter')",
    inline=True,
)
RAISES = Probe("raises", "raise RuntimeError('probe bug')", inline=True)


class ProbeCheck(Check):
    def __init__(self, name: str, probe: Probe) -> None:
        self.name, self.title, self.probes = name, name, (probe,)

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        return Verdict(Status.PASS, f"got {data[self.probes[0].name].data}")


class BrokenJudge(Check):
    name, title = "broken", "broken"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        raise KeyError("oops")


class Fine(Check):
    name, title = "fine", "fine"

    def judge(self, ctx: Context, data: Mapping[str, ProbeResult]) -> Verdict:
        return Verdict(Status.PASS, "fine")


def test_segfault_is_a_crash_with_the_signal_named(make_ctx):
    result = run_probe(SEGFAULT, make_ctx())
    assert result.state is ProbeState.CRASHED
    assert "SIGSEGV" in result.failure(60)


def test_hang_is_a_timeout(make_ctx):
    result = run_probe(HANG, make_ctx(timeout=1.0))
    assert result.state is ProbeState.TIMEOUT
    assert "did not finish within 1s" in result.failure(1.0)


def test_marker_line_is_found_among_library_output(make_ctx):
    result = run_probe(NOISY, make_ctx())
    assert result.state is ProbeState.DONE and result.data == {"x": 1}


def test_uncaught_exception_keeps_the_last_stderr_line(make_ctx):
    result = run_probe(RAISES, make_ctx())
    assert result.state is ProbeState.CRASHED
    assert "RuntimeError: probe bug" in result.failure(60)


def test_one_crashing_check_does_not_stop_the_others(make_ctx):
    checks = {
        c.name: c
        for c in (
            ProbeCheck("segv", SEGFAULT),
            ProbeCheck("hung", HANG),
            BrokenJudge(),
            Fine(),
            ProbeCheck("noisy", NOISY),
        )
    }
    report = run(make_ctx(timeout=2.0), checks)
    by = {r.name: r for r in report.results}
    assert [r.name for r in report.results] == list(checks)
    assert by["segv"].status is Status.FAIL and "crashed with SIGSEGV" in by["segv"].value
    assert by["hung"].status is Status.FAIL and "did not finish within 2s" in by["hung"].value
    assert by["broken"].status is Status.FAIL and "the broken check itself failed: KeyError" in by["broken"].value
    assert by["fine"].status is Status.PASS
    assert by["noisy"].status is Status.PASS and by["noisy"].value == "got {'x': 1}"
    assert not report.ok
    assert by["segv"].fix  # a fail always says what to do


def test_a_missing_interpreter_is_a_fail_not_an_exception(make_ctx, tmp_path):
    report = run(make_ctx(python=str(tmp_path / "no-python")), {"noisy": ProbeCheck("noisy", NOISY)})
    (result,) = report.results
    assert result.status is Status.FAIL


def test_probes_shared_by_checks_run_once(make_ctx, tmp_path):
    marker = tmp_path / "runs"
    counting = Probe(
        "count",
        f"import json\nopen({str(marker)!r}, 'a').write('x')\nprint('@@patchctl-probe@@ ' + json.dumps({{}}))",
        inline=True,
    )
    checks = {"a": ProbeCheck("a", counting), "b": ProbeCheck("b", counting)}
    assert run(make_ctx(), checks).ok
    assert marker.read_text() == "x"
