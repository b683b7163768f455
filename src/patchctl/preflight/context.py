"""Building the context of ``verify --env`` from the target, the cluster config and the environment."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from patchctl import bytecode
from patchctl.clusters import Cluster
from patchctl.preflight.declared import read_requirements, read_settings
from patchctl.preflight.model import Context
from patchctl.target import Target

PATH_KEYS = ("DATA_DIR", "MODEL_PATH")


def paths_for(target: Target | None, cluster: Cluster | None, env: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """The path settings and where they came from: the cluster config, else the environment (as
    test_components.py reads DATA_DIR), else the target's git_ignore.py."""
    if cluster is not None:
        return dict(cluster.paths), f"cluster {cluster.name} in {cluster.source}"
    from_env = {k: env[k] for k in PATH_KEYS if env.get(k)}
    if from_env:
        return from_env, "environment"
    if target is not None and (target.root / "git_ignore.py").is_file():
        return read_settings(target.root / "git_ignore.py"), f"{target.root / 'git_ignore.py'}"
    return {}, ""


def build(
    target: Target | None = None,
    cluster: Cluster | None = None,
    *,
    patchsets: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    python: str | None = None,
    timeout: float = 60.0,
) -> Context:
    env = dict(os.environ if env is None else env)
    env.update(bytecode.outside_tree(env))  # the probes import verl from the tree: no __pycache__ there
    requirements: dict[str, str] = {}
    source = ""
    if target is not None:
        requirements, file = read_requirements(target.root)
        source = f"verl {target.version or '?'} {file}".strip() if file else ""
    paths, paths_source = paths_for(target, cluster, env)
    return Context(
        env=env,
        python=python or sys.executable,
        target=target,
        requirements=requirements,
        requirements_source=source,
        patchsets=patchsets,
        paths=paths,
        paths_source=paths_source,
        timeout=timeout,
    )


def default_target(cwd: Path) -> bool:
    """Whether ``cwd`` is a verl tree, so that a defaulted ``--target .`` means something."""
    from patchctl.target import find_root  # as --target finds it: upward, as git finds .git

    return find_root(cwd) is not None
