"""shell-env: make sure a shell script exports tagged variables before its main command.

For trees that already carry a version of a training script: the record's environment
variables are added (``export NAME=VALUE  # Uky``) right before the first line that runs the
main command, keeping the rest of the script as the user wrote it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence
from patchctl.records import record
from patchctl.schema import Field, Schema

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@record(frozen=True)
class Params:
    #: (name, value) pairs in order
    env: tuple[tuple[str, str], ...]
    #: a regex for the line that starts the main command
    before: str


def _export_re(name: str) -> re.Pattern[str]:
    return re.compile(rf"^\s*export\s+{re.escape(name)}=(.*?)\s*(#.*)?$")


class ShellEnv:
    name: ClassVar[str] = "shell-env"
    description: ClassVar[str] = "Ensure tagged `export NAME=VALUE` lines before a script's main command."
    creates_target: ClassVar[bool] = False
    params_schema: ClassVar[Schema] = {
        "env": Field(list, True, 'a list of "NAME=VALUE" strings', item=str),
        "before": Field(str, False, 'a regex for the main command line, e.g. "python3 -m verl"'),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        pairs = []
        for i, item in enumerate(raw["env"]):
            name, sep, value = item.partition("=")
            if not sep or not _NAME.match(name):
                raise ManifestError(
                    manifest,
                    f"params.env[{i}]",
                    f"{item!r} is not NAME=VALUE",
                    'write entries like "OMP_NUM_THREADS=1"',
                    patch_id,
                )
            pairs.append((name, value))
        before = raw.get("before", r"^\s*(python3?|torchrun|ray)\b")
        try:
            re.compile(before)
        except re.error as exc:
            raise ManifestError(
                manifest, "params.before", f"is not a regex ({exc})", "fix the pattern", patch_id
            ) from None
        return Params(tuple(pairs), before)

    @staticmethod
    def _line(name: str, value: str, tag: str) -> str:
        return f"export {name}={value}  # {tag}"

    def scan(self, text: str, patch: Patch) -> tuple[list[int], list[tuple[str, str, int]], list[tuple[str, str]]]:
        """Lines already right (1-based), exports with another value (name, found, line), absent pairs."""
        p: Params = patch.params
        lines = text.splitlines()
        good, other, absent = [], [], []
        for name, value in p.env:
            rx = _export_re(name)
            hits = [(n, m) for n, ln in enumerate(lines, 1) if (m := rx.match(ln))]
            exact = [n for n, m in hits if m.group(1) == value and m.group(2) and patch.tag in m.group(2)]
            if exact:
                good.append(exact[0])
            elif hits:
                other.append((name, hits[-1][1].group(1), hits[-1][0]))
            else:
                absent.append((name, value))
        return good, other, absent

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        if text is None:
            return Check(Presence.MISSING, f"{ctx.path} does not exist")
        good, other, absent = self.scan(text, patch)
        if not other and not absent:
            return Check(Presence.PRESENT, f"all {len(good)} exports present", frozenset(good))
        if other:
            name, found, line = other[0]
            return Check(
                Presence.MODIFIED, f"line {line}: {name}={found}, the patch sets another value", frozenset(good)
            )
        return Check(Presence.MISSING, "missing: " + ", ".join(n for n, _ in absent), frozenset(good))

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        _, other, absent = self.scan(text, patch)
        if other:
            desc = "; ".join(f"line {ln}: {n}={v}" for n, v, ln in other)
            return Edit(EditStatus.CONFLICT, f"{ctx.path} exports other values ({desc}); edit them or drop this patch")
        lines = text.splitlines(keepends=True)
        rx = re.compile(p.before)
        at = next((i for i, ln in enumerate(lines) if rx.search(ln)), None)
        if at is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} has no line matching {p.before!r} to export before")
        nl = "\r\n" if lines[at].endswith("\r\n") else "\n"
        new = [self._line(n, v, patch.tag) + nl for n, v in absent]
        out = "".join([*lines[:at], *new, *lines[at:]])
        return Edit(
            EditStatus.CHANGED,
            f"{len(new)} exports added before line {at + 1}",
            out,
            undo={"added": [n for n, _ in absent]},
        )

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        """Drop the tagged export lines this patch writes; other lines stay untouched."""
        p: Params = patch.params
        if text is None:
            return Edit(EditStatus.NOT_APPLICABLE, f"{ctx.path} does not exist")
        added = set((ctx.undo or {}).get("added", [n for n, _ in p.env]))
        ours = {self._line(n, v, patch.tag) for n, v in p.env if n in added}
        lines = text.splitlines(keepends=True)
        kept = [ln for ln in lines if ln.rstrip("\r\n") not in ours]
        if len(kept) == len(lines):
            return Edit(EditStatus.NOT_APPLICABLE, "no tagged exports of this patch to remove")
        return Edit(EditStatus.CHANGED, f"{len(lines) - len(kept)} exports removed", "".join(kept))
