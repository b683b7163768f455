"""The target's hydra config, as key paths: are the run's overrides keys verl has?

hydra refuses ``trainer.n_gpu=2`` (no such key) only once the driver has started; on a cluster
profile that can be after the Ray cluster and the model are up. The check here runs before
launch, against the tree's own config, and names the key and the verl version.

verl >= 0.5 ships ``verl/trainer/config/_generated_ppo_trainer.yaml``, the composed
``ppo_trainer`` config that ``main_ppo`` loads (its CI keeps it in step with the defaults list);
0.4 has one self-contained ``ppo_trainer.yaml``. A tree with only a ``ppo_trainer.yaml`` that
composes other files (a defaults list), or one without main_ppo's ``data``, ``actor_rollout_ref``
and ``trainer`` sections (a stand-in), is not checked: without hydra its keys are not known.
PyYAML is not a dependency of patchctl, so :func:`yaml_keys` reads the block-mapping subset of
YAML those files use; ``tests/train/test_train_treeconfig.py`` compares it with PyYAML on every
config file of the verl releases.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from patchctl.errors import PatchctlError
from patchctl.train.overrides import Override, parse

CONFIG_DIR = Path("verl/trainer/config")
#: what main_ppo composes, most exact first
CONFIG_FILES = ("_generated_ppo_trainer.yaml", "ppo_trainer.yaml")
#: the sections every main_ppo config has; a file without them (a stand-in tree's) says nothing
#: about which keys verl accepts
MAIN_SECTIONS = frozenset({"data", "actor_rollout_ref", "trainer"})
#: hydra's own config (hydra.run.dir=..., hydra/job_logging=...) is not verl's
HYDRA_OWN = ("hydra.", "hydra/")
#: a block mapping's key at the start of a line: quoted, or plain (not starting with an indicator)
_KEY = re.compile(
    r"""(?P<key>"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'"""
    r"""|[^\s#'"{\[\]}&*!|>%@`,:-][^:#]*?|-[^\s:#][^:#]*?)\s*:(?:\s|$)"""
)


class UnknownKey(PatchctlError):
    """An override names a key the target's verl config does not have (or deletes/adds one wrongly)."""

    def __init__(self, override: str, key: str, version: str | None, file: Path, problem: str, fix: str) -> None:
        self.override, self.key, self.version, self.file = override, key, version, file
        verl = f"verl {version}" if version else "this verl tree"
        super().__init__(f"override {override!r}: {problem.format(key=key, verl=verl)} ({file}); {fix}")


@dataclass(frozen=True)
class TreeConfig:
    #: the file the keys were read from
    file: Path
    #: every dotted key path of the composed config
    keys: frozenset[str]
    #: the config groups (directories beside the file), for ``group@pkg=name`` overrides
    groups: frozenset[str]


def yaml_keys(text: str) -> set[str]:
    """Every dotted path of the nested block mappings in ``text``; list items are not descended.

    A key with an inline value (``a: 1``, ``a: ${x,``, ``a: |``) cannot have children, so the
    lines indented under it are that value's continuation and are skipped; so is a list item's.
    """
    keys: set[str] = set()
    stack: list[tuple[int, str]] = [(-1, "")]
    skip_above: int | None = None
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#") or body.startswith(("---", "...")):
            continue
        indent = len(line) - len(body)
        if skip_above is not None and indent > skip_above:
            continue
        skip_above = None
        if body == "-" or body.startswith(("- ", "-\t")):
            skip_above = indent
            continue
        m = _KEY.match(body)
        if not m:
            skip_above = indent
            continue
        while stack[-1][0] >= indent:
            stack.pop()
        path = _join(stack[-1][1], _unquote(m.group("key")))
        keys.add(path)
        rest = body[m.end() :].strip()
        if not rest or rest.startswith("#"):
            stack.append((indent, path))
        else:
            keys.update(_join(path, k) for k in _flow_keys(rest))
            skip_above = indent
    return keys


def _join(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def _unquote(key: str) -> str:
    if len(key) >= 2 and key[0] == key[-1] == "'":
        return key[1:-1].replace("''", "'")
    if len(key) >= 2 and key[0] == key[-1] == '"':
        return key[1:-1].encode().decode("unicode_escape")
    return key


def _flow_keys(value: str) -> list[str]:
    """The keys of a one-line flow mapping such as ``{num_cpus: null, x: 1}`` (nested ones not read)."""
    value = value.split(" #", 1)[0].strip()
    if not (value.startswith("{") and value.endswith("}")) or value.startswith("${"):
        return []
    out, depth, item = [], 0, ""
    for ch in value[1:-1] + ",":
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            k = item.split(":", 1)[0].strip() if ":" in item else ""
            if k:
                out.append(_unquote(k))
            item = ""
        else:
            item += ch
    return out


def load(root: Path) -> TreeConfig | None:
    """The keys of the tree's trainer config, or None where they cannot be known without hydra."""
    config_dir = root / CONFIG_DIR
    for name in CONFIG_FILES:
        file = config_dir / name
        try:
            text = file.read_text(encoding="utf-8")
        except OSError:
            continue
        if name == "ppo_trainer.yaml" and re.search(r"^defaults\s*:", text, re.M):
            return None
        keys = frozenset(yaml_keys(text))
        if not keys >= MAIN_SECTIONS:
            return None
        groups = frozenset(p.name for p in config_dir.iterdir() if p.is_dir() and not p.name.startswith("_"))
        return TreeConfig(file, keys, groups)
    return None


def check(root: Path, version: str | None, overrides: list[str] | tuple[str, ...]) -> None:
    """Raise :class:`UnknownKey` for the first override hydra would refuse for its key on this tree.

    ``key=v`` and ``~key`` need the key; ``+key=v`` adds one, which hydra refuses where the key
    is already there; ``++key=v`` is always accepted. hydra's own keys are not verl's to check.
    """
    config = load(root)
    if config is None:
        return
    rel = config.file.relative_to(root) if config.file.is_relative_to(root) else config.file
    for text in overrides:
        o = parse(text)
        problem = _problem(config, o)
        if problem:
            raise UnknownKey(text, o.key, version, rel, *problem)


def _problem(config: TreeConfig, o: Override) -> tuple[str, str] | None:
    """(problem, fix) for an override the config refuses, else None."""
    if o.key.startswith(HYDRA_OWN) or o.key == "hydra" or o.prefix == "++":
        return None
    if o.is_group:
        group = o.key.split("/", 1)[0]
        if group in config.groups or (not o.key and o.package):
            return None
        return ("{verl} has no config group {key}", f"use one of: {', '.join(sorted(config.groups)) or 'none'}")
    present = o.key in config.keys
    if o.prefix == "+":
        if present:
            return (
                "{verl} already has {key}, and + only adds a new key",
                f"drop the + to change it ({o.text[1:]}), or write ++ to add or change it",
            )
        return None
    if present:
        return None
    hint = difflib.get_close_matches(o.key, sorted(config.keys), n=1, cutoff=0.8)
    fix = f"did you mean {hint[0]}? " if hint else ""
    if o.prefix == "~":
        return "{verl} has no key {key} to delete", fix + "check the spelling"
    return ("{verl} has no key {key}", fix + f"check the spelling, or add a new key with +{o.text}")
