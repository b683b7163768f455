"""config-key: set, add or remove one key of a YAML or TOML config, found by its key path.

The key is found wherever upstream moved it in the file, at whatever indentation upstream uses
now; only its own lines are written, every other byte of the file stays as upstream has it.
A new key goes before the sibling the fork put it before (``before``), else at the end of its
parent. The lines are found by :mod:`~patchctl.patchsets.kinds.keypath` (why not a YAML
library is said there); JSON's by :mod:`~patchctl.patchsets.kinds.jsonpath`, which also keeps its
commas right around the key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import jsonpath, keypath
from patchctl.patchsets.kinds.swap import Spot, Swap, normal, show
from patchctl.schema import Field, Schema


@dataclass(frozen=True)
class Params:
    #: the key path, outermost first: ("actor_rollout_ref", "actor", "ppo_epochs")
    path: tuple[str, ...]
    #: the key's lines as upstream had them, without the key's own indentation; None: absent
    was: str | None
    #: the key's lines as the fork has them; None: the fork removed the key
    now: str | None
    #: the sibling key a new key goes before, when upstream still has it
    before: str | None


class ConfigKey(Swap):
    name: ClassVar[str] = "config-key"
    description: ClassVar[str] = "Set, add or remove one key of a YAML or TOML file, found by its key path."
    params_schema: ClassVar[Schema] = {
        "path": Field(list, True, 'the key path, e.g. ["trainer", "total_epochs"]', item=str),
        "was": Field(str, False, "the key's lines as upstream had them (leave out when the patch adds the key)"),
        "now": Field(str, False, "the key's lines as the patch writes them (leave out to remove the key)"),
        "before": Field(str, False, "the sibling key a new key is inserted before"),
    }

    def parse_params(self, raw: dict[str, Any], patchset_root: Path, manifest: Path, patch_id: str) -> Params:
        path = tuple(raw["path"])
        if not path or any(not k or "\n" in k for k in path):
            raise ManifestError(
                manifest,
                "params.path",
                f"{list(path)!r} has an empty key or a line break",
                'write the key path as a list of key names, e.g. ["trainer", "total_epochs"]',
                patch_id,
            )
        fix = "write the key's lines as the patch sets them"
        self._one_change(raw, manifest, patch_id, fix, "is params.was again (comments and spacing aside)")
        return Params(path, raw.get("was"), raw.get("now"), raw.get("before"))

    def _what(self, p: Params) -> str:
        return "key " + keypath.dotted(p.path)

    def _spot(self, lines: list[str], p: Params, path: str) -> Spot:
        fmt = keypath.fmt_of(path)
        if fmt is None:
            return Spot(0, 0, None, f"{path}: config-key edits .yaml, .yml, .toml and .json files only")
        nodes = keypath.nodes(lines, fmt)
        by_path = {n.path: n for n in nodes}
        found = by_path.get(p.path)
        if found is not None:
            comments = next(i for i in range(found.start, found.end + 1) if not lines[i].lstrip().startswith("#"))
            return Spot(
                found.start,
                found.end,
                keypath.piece(lines, found, fmt),
                hint=found.indent,
                trim=(comments - found.start, 0),
            )
        parent = p.path[:-1]
        holder = by_path.get(parent)
        table = fmt == "toml" and (p.now or "").lstrip().startswith("[")
        if parent and holder is None and not (fmt == "toml" and any(n.path[: len(parent)] == parent for n in nodes)):
            return Spot(
                0,
                0,
                None,
                f"{path}: there is no key {keypath.dotted(parent)} to hold {self._what(p)} "
                "(upstream removed or renamed it); add the key by hand where it belongs now",
            )
        sibling = by_path.get((*parent, p.before)) if p.before else None
        if fmt == "json" and sibling is None and holder is not None and holder.end - holder.start < 2:
            return Spot(
                0,
                0,
                None,
                f"{path}:{holder.start + 1}: {keypath.dotted(parent)} is written on one line; "
                f"add {self._what(p)} to it by hand",
            )
        if sibling is not None:
            at = sibling.start
        elif fmt == "json":  # before the line that closes the object
            at = holder.end - 1 if holder is not None else _after_last_content(lines, len(lines)) - 1
        elif table or (holder is None and not parent and fmt == "yaml"):
            at = _after_last_content(lines, len(lines))
        elif holder is None:  # TOML: a key of the root table goes above the first [table]
            tables = [n.start for n in nodes if _is_table(lines, n)]
            at = _after_last_content(lines, min(tables) if tables else len(lines))
        else:
            at = holder.end
        indent = keypath.child_indent(nodes, parent)
        if indent is None:
            indent = holder.indent + 2 if holder is not None and fmt != "toml" else 2 if fmt == "json" else 0
        return Spot(at, at, None, hint=indent)

    def place(self, lines: list[str], p: Params, path: str) -> tuple[int, int, str, str, str] | str:
        """Where the key is; where upstream removed its parent, the end of its nearest ancestor
        that is left (or of the file), with the key path in the reason so the user moves it."""
        found = super().place(lines, p, path)
        fmt = keypath.fmt_of(path)
        if not isinstance(found, str) or fmt is None or fmt == "json" or p.now is None:
            return found
        by_path = {n.path: n for n in keypath.nodes(lines, fmt)}
        holder = next((by_path[p.path[:n]] for n in range(len(p.path) - 2, 0, -1) if p.path[:n] in by_path), None)
        at = holder.end if holder is not None else _after_last_content(lines, len(lines))
        indent = holder.indent + 2 if holder is not None and fmt == "yaml" else 0
        parents = "".join(  # YAML: the keys upstream removed, written again around the fork's key
            " " * (indent + 2 * i) + f"{k}:\n"
            for i, k in enumerate(p.path[len(holder.path) if holder else 0 : -1] if fmt == "yaml" else ())
        )
        indent += 2 * parents.count("\n")
        where = f"key {keypath.dotted(holder.path)}" if holder is not None else "the file"
        how = f"the end of {where}, the nearest part of {keypath.dotted(p.path)} upstream still has"
        return at, at, p.was or "", parents + "".join(keypath.indent_text(p.now, indent)), how

    def _finish(self, text: str, path: str) -> str:
        return jsonpath.fix_commas(text) if keypath.fmt_of(path) == "json" else text

    def _same(self, a: str | None, b: str | None) -> bool:
        """Keys compare without their comment lines: upstream rewording the comment above a key the
        fork sets is no conflict (the key's own lines, the comments above it included, are replaced)."""
        return _code(a) == _code(b)

    def _widen(self, lines: list[str], spot: Spot, piece: str | None) -> Spot:
        """A key set without comments keeps upstream's comment above it; a key removed from between
        blank lines takes one of them along, so no double blank line is left (and revert restores it)."""
        if spot.current is None:
            return spot
        if piece is not None and spot.trim[0] and not piece.lstrip().startswith("#"):
            return replace(spot, start=spot.start + spot.trim[0], trim=(0, 0))
        if (
            piece is None
            and spot.end < len(lines)
            and not lines[spot.end].strip()
            and (spot.start == 0 or not lines[spot.start - 1].strip())
        ):
            return replace(spot, end=spot.end + 1)
        return spot

    def _show(self, text: str | None) -> str:
        code = [ln for ln in (text or "").splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        return show("\n".join(code) if text is not None and code else text)

    def _next(self, lines: list[str], spot: Spot, p: Params, path: str) -> str | None:
        later = [
            n
            for n in keypath.nodes(lines, keypath.fmt_of(path) or "yaml")
            if n.path[:-1] == p.path[:-1] and len(n.path) == len(p.path) and n.start >= spot.end
        ]
        return min(later, key=lambda n: n.start).path[-1] if later else None

    def _lay(self, piece: str, spot: Spot) -> list[str]:
        return keypath.indent_text(piece, spot.hint)


def _is_table(lines: list[str], node: keypath.Node) -> bool:
    """Whether a TOML node is a whole [table] (its first line that is no comment is a header)."""
    head = next((ln for ln in lines[node.start : node.end] if not ln.lstrip().startswith("#")), "")
    return head.lstrip().startswith("[")


def _code(text: str | None) -> list[str] | None:
    rows = normal(text)
    return None if rows is None else [r for r in rows if not r.lstrip().startswith("#")]


def _after_last_content(lines: list[str], limit: int) -> int:
    at = limit
    while at > 0 and not lines[at - 1].strip():
        at -= 1
    return at
