"""The GPU warm-up beside the trainer: :mod:`gpu_warmup_script` in its own process.

A freshly started GPU machine has an empty CUDA JIT cache; the trainer's first step then pays
for compiling its kernels (about 3.3 s of a 5 s first step on an H100). The GPU idles for the
first ~30 s of a run while three processes import torch and verl, so patchctl compiles those
kernels there. Profiles ask for it with ``gpu_warmup = true``; it is stopped when the trainer
ends, whatever state it is in, and its log sits beside the trainer's.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).resolve().with_name("gpu_warmup_script.py")


@dataclass(frozen=True)
class Outcome:
    log: str
    returncode: int | None
    #: when the script finished (its own clock), or None when it was still running at the end
    seconds: float | None


class Warmup:
    def __init__(self, python: str, model_dir: Path, env: dict[str, str], log: Path) -> None:
        self.log = log
        self._out = open(log, "w", encoding="utf-8")
        try:
            self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [python, str(SCRIPT), str(model_dir)], env={**os.environ, **env}, stdout=self._out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:  # never fatal: the run works without it, only slower the first time
            self._out.write(f"could not start the warm-up: {exc}\n")
            self.proc = None

    def stop(self) -> Outcome:
        """End it if it still runs (its process group), and say how it went."""
        code = self.proc.poll() if self.proc is not None else None
        if self.proc is not None and code is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        if not self._out.closed:
            self._out.close()
        return Outcome(str(self.log), code, self._finished_after() if code is not None else None)

    def _finished_after(self) -> float | None:
        """When the script said ``done``, from its own log (it timestamps every line)."""
        try:
            for line in reversed(self.log.read_text(encoding="utf-8", errors="replace").splitlines()):
                if line.endswith("] done") or "nothing to warm up" in line:
                    return float(line[1:line.index("s]")])
        except (OSError, ValueError):
            pass
        return None
