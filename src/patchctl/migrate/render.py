"""Files that differ per cluster, rendered locally and written on each host.

``git_ignore.py`` is the patchset's ``git_ignore.py.example`` with its top-level path settings
set to the cluster's ``[paths]`` (the record's step "cp git_ignore.py.example git_ignore.py,
then edit the paths"). ``.patchctl/env.sh`` holds the record's environment variables for the
cluster's profile, ready for ``. .patchctl/env.sh``.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from patchctl.clusters import Cluster, Host
from patchctl.errors import ManifestError
from patchctl.patchsets.model import Patchset

GIT_IGNORE = "git_ignore.py"
EXAMPLE = "git_ignore.py.example"
ENV_FILE = ".patchctl/env.sh"
#: the settings git_ignore.py holds; VERL_ROOT defaults to the host's root
SETTINGS = ("VERL_ROOT", "DATA_DIR", "MODEL_PATH", "CHECKPOINT_DIR", "LOG_DIR")

#: the record's "always needed" variables, in its order (Ray, thread limits, the Triton fixes)
ALWAYS_ENV: tuple[tuple[str, str], ...] = (
    ("RAY_num_prestart_python_workers", "1"),
    ("RAY_worker_register_timeout_seconds", "600"),
    ("OMP_NUM_THREADS", "1"),
    ("OPENBLAS_NUM_THREADS", "1"),
    ("MKL_NUM_THREADS", "1"),
    ("TRITON_CACHE_DIR", "/tmp/triton_cache"),  # noqa: S108 - a cache path for the host's trainer, as verl's scripts set
    ("VLLM_USE_TRITON_FLASH_ATTN", "0"),
    ("VLLM_ATTENTION_BACKEND", "FLASH_ATTN"),
    ("VLLM_WORKER_USE_RAY", "1"),
    ("LD_LIBRARY_PATH", "/usr/local/cuda/lib64/stubs:$LD_LIBRARY_PATH"),
)
#: the record's extras of the FAST_LOAD script
FAST_LOAD_ENV: tuple[tuple[str, str], ...] = (
    ("VLLM_WORKER_MULTIPROC_METHOD", "spawn"),
    ("TOKENIZERS_PARALLELISM", "false"),
)
PROFILE_ENV = {"standard": ALWAYS_ENV, "fast-load": ALWAYS_ENV + FAST_LOAD_ENV}
_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def find_example(root: Path, patchsets: Sequence[Patchset]) -> Path | None:
    """The tree's own ``git_ignore.py.example`` (what the patchset added), else a patchset's."""
    if (root / EXAMPLE).is_file():
        return root / EXAMPLE
    for ps in patchsets:
        found = sorted(ps.root.rglob(EXAMPLE))
        if found:
            return found[0]
    return None


def _settings(tree: ast.Module) -> dict[str, ast.Constant]:
    """Top-level one-line ``NAME = "..."`` assignments, by name."""
    out: dict[str, ast.Constant] = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.value.lineno == node.value.end_lineno
        ):
            out[node.targets[0].id] = node.value
    return out


def render_git_ignore(example: str, values: dict[str, str], *, source: Path, cluster: str) -> str:
    """``example`` with each setting named in ``values`` set to its value; nothing else changes."""
    settings = _settings(ast.parse(example))
    known = [s for s in SETTINGS if s in settings]
    lines = example.splitlines(keepends=True)
    for name, value in values.items():
        key = f"clusters.{cluster}.paths.{name}"
        if name not in known:
            raise ManifestError(source, key, f"{EXAMPLE} has no setting {name}", f"use one of: {', '.join(known)}")
        if any(ord(c) < 32 for c in value):
            raise ManifestError(source, key, "contains a control character", "write a plain path")
        node = settings[name]
        raw = lines[node.lineno - 1].encode()  # ast offsets count UTF-8 bytes
        literal = json.dumps(value, ensure_ascii=False).encode()  # JSON escapes are valid Python
        lines[node.lineno - 1] = (raw[: node.col_offset] + literal + raw[node.end_col_offset :]).decode()
    return "".join(lines)


def render_env(cluster: Cluster, host: Host) -> str:
    """A POSIX-shell file of ``export`` lines: the profile's variables, then the cluster's ``env``,
    then the host's own (``hosts[i].env``, e.g. its CUDA_VISIBLE_DEVICES): an ssh login does not
    inherit the caller's environment, so what every process there needs must be in this file."""
    out = [
        f"# Written by `patchctl migrate {cluster.name}` (profile {cluster.profile}); re-run it instead of editing.",
        f"# Load it before a run:  . {shlex.quote(host.root.rstrip('/') + '/' + ENV_FILE)}",
    ]
    out += [f"export {k}={v}" for k, v in PROFILE_ENV[cluster.profile]]  # the record's lines, verbatim
    for key, value in {**cluster.env, **host.env}.items():
        if not _SHELL_NAME.match(key):
            raise ManifestError(
                cluster.source,
                f"clusters.{cluster.name}.env.{key}",
                "is not a shell variable name",
                "use letters, digits and _ (not starting with a digit)",
            )
        out.append(f"export {key}={shlex.quote(value)}")
    return "\n".join(out) + "\n"


def rendered_files(cluster: Cluster, host: Host, example: Path | None) -> dict[str, str]:
    """Relative path -> content of every generated file for ``host``."""
    files = {ENV_FILE: render_env(cluster, host)}
    if example is None:
        if cluster.paths:
            raise ManifestError(
                cluster.source,
                f"clusters.{cluster.name}.paths",
                f"there is no {EXAMPLE} to render git_ignore.py from",
                "apply the uky patchset to the tree (patchctl apply) or remove the paths table",
            )
        return files
    values = {"VERL_ROOT": host.root, **cluster.paths}
    text = example.read_text(encoding="utf-8")
    values = {k: v for k, v in values.items() if k != "VERL_ROOT" or k in _settings(ast.parse(text))}
    files[GIT_IGNORE] = render_git_ignore(text, values, source=cluster.source, cluster=cluster.name)
    return files
