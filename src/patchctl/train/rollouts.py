"""Which rollouts a verl tree has, read from its source, so a run is refused before it launches.

verl 0.6.0 dropped the HuggingFace rollout from its registry but kept ``hf_rollout.py``: the file
alone says nothing. The tree's own dispatch is read instead, without importing verl:

- verl >= 0.6: the ``_ROLLOUT_REGISTRY`` dict of ``verl/workers/rollout/base.py`` (keys are
  ``(name, mode)``), each entry counted only where the module it names is in the tree;
- verl <= 0.5: the ``rollout_name == "NAME"`` branches of ``verl/workers/fsdp_workers.py``, each
  counted only where its module (``hf_rollout.py``, ``vllm_rollout/``, ``sglang_rollout/``) exists.

A tree with neither (a stand-in, a fork that moved them) is not judged: :func:`available` returns
None and the run goes ahead, as hydra's own error would then say what is missing.
"""

from __future__ import annotations

import ast
from pathlib import Path

from patchctl.errors import PatchctlError

ROLLOUT_DIR = Path("verl/workers/rollout")
#: the module each pre-registry rollout name dispatches to (verl 0.4-0.5)
MODULES = {"hf": "hf_rollout.py", "vllm": "vllm_rollout", "sglang": "sglang_rollout", "sglang_async": "sglang_rollout"}
NAME_KEY = "actor_rollout_ref.rollout.name"


class RolloutMissing(PatchctlError):
    """The profile's rollout is not one the tree can launch."""

    def __init__(self, profile: str, rollout: str, verl: str, have: tuple[str, ...], instead: tuple[str, ...]) -> None:
        self.profile, self.rollout, self.have = profile, rollout, have
        fix = (
            f"use --profile {' or --profile '.join(instead)}"
            if instead
            else "pick a profile whose rollout it has (patchctl train --help lists them)"
        )
        super().__init__(
            f"profile {profile} rolls out with {rollout}, which {verl} does not have "
            f"(its rollouts: {', '.join(have) or 'none found'}); {fix}"
        )


def available(root: Path) -> tuple[str, ...] | None:
    """The rollout names the tree at ``root`` can launch, sorted; None where it cannot be told."""
    registry = _registry(root / ROLLOUT_DIR / "base.py")
    if registry is not None:
        return tuple(sorted({name for name, module in registry if _module_exists(root, module)}))
    names = _branches(root / "verl" / "workers" / "fsdp_workers.py")
    if names is None:
        return None
    return tuple(sorted(n for n in names if n in MODULES and (root / ROLLOUT_DIR / MODULES[n]).exists()))


def chosen(argv: tuple[str, ...] | list[str], default: str) -> str:
    """The rollout the command runs: the last ``actor_rollout_ref.rollout.name=`` wins (hydra's rule)."""
    name = default
    for arg in argv:
        key, sep, value = arg.lstrip("+").partition("=")
        if sep and key == NAME_KEY:
            name = value.strip("'\"")
    return name


def _parse(file: Path) -> ast.Module | None:
    try:
        return ast.parse(file.read_text(encoding="utf-8"), str(file))
    except (OSError, SyntaxError, ValueError):
        return None


def _registry(file: Path) -> list[tuple[str, str]] | None:
    """``[(name, dotted module)]`` of ``_ROLLOUT_REGISTRY``, or None where the file has none."""
    tree = _parse(file)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "_ROLLOUT_REGISTRY" and isinstance(value, ast.Dict):
            out = []
            for key, module in zip(value.keys, value.values, strict=True):
                if (
                    isinstance(key, ast.Tuple)
                    and key.elts
                    and isinstance(key.elts[0], ast.Constant)
                    and isinstance(module, ast.Constant)
                    and isinstance(module.value, str)
                ):
                    out.append((str(key.elts[0].value), module.value.rsplit(".", 1)[0]))
            return out
    return None


def _module_exists(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _branches(file: Path) -> set[str] | None:
    """Names compared with ``rollout_name`` / ``config.rollout.name`` in the worker, or None."""
    tree = _parse(file)
    if tree is None:
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            left, right = node.left, node.comparators[0]
            subject = ast.unparse(left)
            if (
                (subject == "rollout_name" or subject.endswith("rollout.name"))
                and isinstance(right, ast.Constant)
                and isinstance(right.value, str)
            ):
                names.add(right.value)
    return names or None


def preflight_row(root: Path, profile_name: str) -> dict[str, str]:
    """validate's host preflight row: can the tree at ``root`` launch the profile's rollout? A
    failing row stops validate before Ray starts, with the profiles the tree can run."""
    from patchctl.train.profiles import load_profiles

    profiles = load_profiles()
    profile = profiles[profile_name]
    have = available(root)
    row = {"check": "rollout", "status": "pass", "value": "", "fix": ""}
    if have is None:
        return {**row, "value": f"{profile.rollout} (the tree's rollouts cannot be told from its source)"}
    if profile.rollout in have:
        return {**row, "value": f"{profile.rollout} (the tree has: {', '.join(have)})"}
    instead = [n for n, p in sorted(profiles.items()) if p.rollout in have and p.needs == profile.needs]
    return {
        **row,
        "status": "fail",
        "value": f"profile {profile_name} rolls out with {profile.rollout}, which this "
        f"tree does not have (its rollouts: {', '.join(have) or 'none found'})",
        "fix": f"use --profile {' or --profile '.join(instead)}" if instead else "pick a profile whose rollout it has",
    }
