"""What an environment check sees (the context) and what it reports (a result with a verdict).

Checks never read ``os.environ`` or the real machine directly when a context field exists for
it: the context is how tests build an environment (variables, a CUDA prefix, a /dev/shm) that
the machine running them does not have.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from patchctl.target import Target


class Status(enum.Enum):
    PASS = "pass"  # noqa: S105 - a check's status, not a password
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True)
class Verdict:
    """A check's judgement before the runner adds its name and timing."""

    #: pass / warn / fail / skip
    status: Status
    #: what was measured, in one line ("torch 2.11.0+cu130, 1 GPU: NVIDIA H100 ...")
    value: str
    #: what to do about it; empty when the check passed
    fix: str = ""


@dataclass(frozen=True)
class CheckResult:
    #: the check's registry name, e.g. "torch"
    name: str
    #: a short human title, e.g. "PyTorch + CUDA"
    title: str
    status: Status
    value: str
    #: wall time of the check, its subprocess probes included
    seconds: float
    fix: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "title": self.title,
            "status": self.status.value,
            "value": self.value,
            "seconds": round(self.seconds, 3),
            "fix": self.fix or None,
        }


@dataclass(frozen=True)
class EnvReport:
    results: tuple[CheckResult, ...]
    #: wall time of the whole run
    seconds: float

    @property
    def ok(self) -> bool:
        """Nothing failed; warnings and skips do not fail a preflight."""
        return all(r.status is not Status.FAIL for r in self.results)

    def counts(self) -> dict[str, int]:
        return {s.value: sum(r.status is s for r in self.results) for s in Status}

    def to_json(self, target: Target | None = None, cluster: str | None = None) -> dict[str, object]:
        """The ``verify --env --json`` document (``target``: the Target checked, if any)."""
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "target": str(target.root) if target else None,
            "version": target.version if target else None,
            "cluster": cluster,
            "counts": self.counts(),
            "checks": [r.to_json() for r in self.results],
        }


def _default_lib_dirs() -> tuple[str, ...]:
    # the directories GNU ld searches for -l without any -L (Debian/Ubuntu and RHEL layouts)
    return (
        "/usr/local/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/lib64",
        "/usr/lib",
        "/lib",
    )


@dataclass(frozen=True)
class Context:
    """Everything the checks look at; built by :func:`patchctl.preflight.context.build`."""

    #: the environment variables of the run being checked (a copy of os.environ by default)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    #: the interpreter whose packages are checked; the probes run under it
    python: str = sys.executable
    #: the verl tree the run will use, when known
    target: Target | None = None
    #: requirement specifiers the target declares, by distribution name ("vllm" -> ">=0.8.5,<=0.11.0")
    requirements: Mapping[str, str] = field(default_factory=dict)
    #: where the requirements were read from, for messages ("verl 0.6.1 setup.py")
    requirements_source: str = ""
    #: patchsets to verify the target against (default: those its apply record names, else uky)
    patchsets: tuple[str, ...] = ()
    #: cluster / git_ignore.py path settings (DATA_DIR, MODEL_PATH, ...)
    paths: Mapping[str, str] = field(default_factory=dict)
    #: where the paths came from ("cluster gpu in patchctl.toml", "git_ignore.py", "environment")
    paths_source: str = ""
    #: seconds each subprocess probe may take before it counts as hung
    timeout: float = 60.0
    #: the ldconfig Triton runs (Triton hard-codes /sbin/ldconfig)
    ldconfig: str = "/sbin/ldconfig"
    #: the linker's default search directories
    system_lib_dirs: tuple[str, ...] = field(default_factory=_default_lib_dirs)
    #: the NVIDIA control device; its absence means no driver (libcuda checks are then skipped)
    nvidia_ctl: Path = Path("/dev/nvidiactl")
    #: the shared-memory mount Ray's object store uses
    shm: Path = Path("/dev/shm")  # noqa: S108 - the mount the shm check measures, not a scratch file
    #: where /proc/meminfo is (the object store's default size is a share of MemTotal)
    meminfo: Path = Path("/proc/meminfo")
    #: CPUs a local ray.init may take: bounded so the check works inside Slurm/cgroup limits
    ray_num_cpus: int = 2

    @property
    def cuda_home(self) -> Path:
        return Path(self.env.get("CUDA_HOME") or self.env.get("CUDA_PATH") or "/usr/local/cuda")
