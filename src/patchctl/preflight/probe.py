"""Subprocess probes: the part of a check that imports heavy packages (torch, vLLM, Ray, verl).

Each probe is a small Python script run as ``python -c SCRIPT ARGS_JSON`` under the interpreter
being checked. It prints one marker line with a JSON object as its last act. Running it in its own
process is what makes the preflight robust and fast: probes run in parallel, each has a timeout,
and an import that segfaults or hangs ends that probe, not patchctl.
"""

from __future__ import annotations

import enum
import json
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import proc
from patchctl.preflight.model import Context

MARKER = "@@patchctl-probe@@ "
SCRIPTS = Path(__file__).with_name("probes")
#: seconds coreutils' timeout waits after SIGTERM before SIGKILL (Ray's shutdown needs a moment)
KILL_AFTER = 3


class ProbeState(enum.Enum):
    DONE = "done"
    CRASHED = "crashed"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Probe:
    #: unique name; checks that share a probe share one subprocess
    name: str
    #: the script: a file name under probes/, or inline source when ``inline`` is set
    script: str
    #: builds the JSON argument from the context
    args: Callable[[Context], dict[str, Any]] = field(default=lambda ctx: {})
    #: the working directory, from the context: the target's root, where a training run starts
    #: (python -c puts it first on sys.path); without a target, the probe scripts' own folder,
    #: since any other (/tmp holds Ray's session dir "ray") can shadow the packages probed
    cwd: Callable[[Context], Path | None] = field(default=lambda ctx: ctx.target.root if ctx.target else SCRIPTS)
    inline: bool = False

    def source(self) -> str:
        return self.script if self.inline else (SCRIPTS / self.script).read_text(encoding="utf-8")


@dataclass(frozen=True)
class ProbeResult:
    name: str
    state: ProbeState
    #: the JSON object the probe printed (empty unless DONE)
    data: dict[str, Any]
    seconds: float
    returncode: int | None = None
    #: the last lines of stderr, for crash messages
    stderr_tail: str = ""

    @property
    def done(self) -> bool:
        return self.state is ProbeState.DONE

    def failure(self, timeout: float) -> str:
        """One line saying how the probe ended when it did not finish normally."""
        if self.state is ProbeState.TIMEOUT:
            return f"did not finish within {timeout:g}s (hung)"
        rc = self.returncode
        if rc is not None and (rc < 0 or rc > 128):
            signum = -rc if rc < 0 else rc - 128
            try:
                how = f"crashed with {signal.Signals(signum).name}"
            except ValueError:
                how = f"crashed with signal {signum}"
        else:
            how = f"exited with code {rc} without a result"
        return f"{how}" + (f": {self.stderr_tail}" if self.stderr_tail else "")


def _tail(text: str, lines: int = 2) -> str:
    kept = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])[-400:]


def run_probe(probe: Probe, ctx: Context) -> ProbeResult:
    """Run one probe under ``ctx.python`` with ``ctx.env``; never raises for the probe's own failures."""
    argv = [ctx.python, "-c", probe.source(), json.dumps(probe.args(ctx))]
    # coreutils timeout signals the probe's whole process group, so the daemons a hung ray.init
    # left behind go too, and their open pipes cannot keep us waiting.
    if shutil.which("timeout"):
        argv = ["timeout", "-k", str(KILL_AFTER), f"{ctx.timeout:g}", *argv]
    start = time.monotonic()
    try:
        done = proc.run(argv, cwd=probe.cwd(ctx), env=ctx.env, check=False, timeout=ctx.timeout + KILL_AFTER + 5)
    except subprocess.TimeoutExpired:
        return ProbeResult(probe.name, ProbeState.TIMEOUT, {}, time.monotonic() - start)
    seconds = time.monotonic() - start
    if done.returncode in (124, 137) and argv[0] == "timeout" and MARKER not in done.stdout:
        return ProbeResult(probe.name, ProbeState.TIMEOUT, {}, seconds, done.returncode, _tail(done.stderr))
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER) :])
            except ValueError:
                break
            return ProbeResult(probe.name, ProbeState.DONE, data, seconds, done.returncode)
    return ProbeResult(probe.name, ProbeState.CRASHED, {}, seconds, done.returncode, _tail(done.stderr or done.stdout))
