"""Where a run's path settings come from: ``--cluster``, else the environment, else ``git_ignore.py``.

The record's scripts read ``MODEL_PATH``, ``DATA_DIR`` and the other paths from the tree's
``git_ignore.py`` (``eval "$(python3 git_ignore.py --shell)"``), which ``patchctl migrate``
renders on every host. Reading that file too means ``patchctl train --profile debug`` on a
migrated host needs no config. The file is user data, so it is parsed, never executed: only
top-level ``NAME = "string"`` assignments count.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from patchctl.clusters import Cluster
from patchctl.errors import PatchctlError
from patchctl.migrate.render import GIT_IGNORE, SETTINGS
from patchctl.train.profiles import _PLACEHOLDER, Profile

ENVIRONMENT = "the environment"


class BadGitIgnore(PatchctlError):
    def __init__(self, path: Path, line: int, problem: str) -> None:
        self.path, self.line = path, line
        super().__init__(
            f'{path}:{line}: {problem}; fix the file (keep NAME = "path" lines), or pass the paths '
            "with --cluster NAME or in the environment"
        )


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    #: where it came from, for the dry run and the report: "cluster gpu", "the environment", a file
    source: str


def read_git_ignore(path: Path) -> dict[str, str]:
    """The top-level ``NAME = "..."`` string settings of a ``git_ignore.py``, without running it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise BadGitIgnore(path, 1, f"cannot be read ({exc})") from None
    try:
        module = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise BadGitIgnore(path, exc.lineno or 1, f"not valid Python ({exc.msg})") from None
    out: dict[str, str] = {}
    for node in module.body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else (node.target if isinstance(node, ast.AnnAssign) else None)
        )
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            out[target.id] = value.value
    return out


def wanted(profile: Profile, cluster: Cluster | None) -> list[str]:
    """The names to look up: what the profile needs, the path settings it uses, what the cluster sets."""
    texts = [*profile.overrides, *profile.env.values(), *profile.requires, *profile.defaults.values()]
    used = {m for t in texts for m in _PLACEHOLDER.findall(t)}
    return list(
        dict.fromkeys([*profile.needs, *(s for s in SETTINGS if s in used), *(cluster.paths if cluster else ())])
    )


def resolve(
    names: Iterable[str], root: Path, cluster: Cluster | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Setting]:
    """Each name from the first source that has it; a name none has is left out.

    ``git_ignore.py`` is read only when the cluster and the environment leave a name open, so a
    broken one does not stop a run that does not need it.
    """
    environ = os.environ if environ is None else environ
    found: dict[str, Setting] = {}
    for name in names:
        if cluster is not None and name in cluster.paths:
            found[name] = Setting(name, cluster.paths[name], f"cluster {cluster.name}")
        elif environ.get(name):
            found[name] = Setting(name, environ[name], ENVIRONMENT)
    missing = [n for n in names if n not in found]
    if missing:
        path = root / GIT_IGNORE
        values = read_git_ignore(path)
        for name in missing:
            if values.get(name):
                found[name] = Setting(name, values[name], str(path))
    return found
