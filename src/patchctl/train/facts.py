"""Facts a run report records about where it ran: the tree, its patchsets, packages, the GPU."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from patchctl import proc
from patchctl.errors import PatchctlError
from patchctl.patchsets import record as rec
from patchctl.target import Target

#: distributions whose versions decide whether a verl run works
PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "ray",
    "tensordict",
    "hydra-core",
    "omegaconf",
    "numpy",
    "pandas",
    "pyarrow",
    "datasets",
    "accelerate",
    "vllm",
    "sglang",
    "flash-attn",
    "flash_attn",
)

_VERSIONS = """
import json, sys
from importlib import metadata
out = {"python": sys.version.split()[0]}
for name in sys.argv[1:]:
    try:
        out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps(out))
"""


def tree(target: Target) -> dict[str, Any]:
    """The tree and what patchctl applied to it, from its ``.patchctl/applied.json``."""
    try:
        record = rec.load(target.root)
    except PatchctlError as exc:
        return {"root": str(target.root), "version": target.version, "record_error": str(exc)}
    patchsets: dict[str, Any] = {}
    if record:
        for name, meta in record.patchsets.items():
            patchsets[name] = {**meta, "patches": [e.patch for e in record.entries if e.patchset == name]}
    return {
        "root": str(target.root),
        "version": target.version,
        "commit": target.commit,
        "is_git": target.is_git,
        "upstream_version": record.upstream_version if record else None,
        "patchsets": patchsets,
    }


def package_versions(python: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """Versions as the trainer's interpreter sees them (metadata only: nothing is imported)."""
    try:
        done = proc.run([python, "-c", _VERSIONS, *PACKAGES], env=env, check=False, timeout=60)
        return json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
    except (PatchctlError, ValueError, IndexError, OSError):
        return {}


def gpus() -> list[dict[str, str]]:
    """What nvidia-smi reports, or an empty list where there is none."""
    try:
        done = proc.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            check=False,
            timeout=30,
        )
    except (PatchctlError, OSError):
        return []
    out = []
    for line in done.stdout.strip().splitlines() if done.returncode == 0 else []:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            out.append({"name": parts[0], "memory": parts[1], "driver": parts[2]})
    return out


@dataclass(frozen=True)
class Facts:
    """Where the run ran, as the report records it."""

    #: :func:`tree`'s record of the tree and its patchsets
    tree: dict[str, Any]
    #: :func:`package_versions` in the trainer's interpreter
    packages: dict[str, str]
    gpus: tuple[dict[str, str], ...]


class Gathering:
    """The facts that cost seconds of subprocesses, gathered on a thread while the trainer runs.

    ``also`` runs on the same thread afterwards (the plot's matplotlib import, say). A fact not
    gathered when :meth:`result` stops waiting is left out of the report, never waited for longer.
    """

    def __init__(self, python: str, env: Mapping[str, str], also: Callable[[], None] | None = None) -> None:
        self._packages: dict[str, str] = {}
        self._gpus: list[dict[str, str]] = []
        self._thread = threading.Thread(
            target=self._work, args=(python, dict(env), also), name="train-facts", daemon=True
        )
        self._thread.start()

    def _work(self, python: str, env: dict[str, str], also: Callable[[], None] | None) -> None:
        self._packages = package_versions(python, env)
        self._gpus = gpus()
        if also is not None:
            also()

    def result(self, target: Target, wait: float = 60) -> Facts:
        self._thread.join(timeout=wait)
        return Facts(tree(target), self._packages, tuple(self._gpus))
