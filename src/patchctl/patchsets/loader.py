"""Loading patchset manifests: ``load_patchset`` is the only way in, and it validates everything."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from patchctl.confine import in_metadata, relative_inside
from patchctl.errors import ManifestError, NoPatchset, PatchsetGivenTwice
from patchctl.patchsets import bases, resolutions, upstream
from patchctl.patchsets.kinds import KINDS, kind_names
from patchctl.patchsets.model import Patch, Patchset
from patchctl.schema import Field, check
from patchctl.sha import sha256

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MANIFEST = "patchset.toml"

TOP_SCHEMA = {
    "patchset": Field(dict, True, "a [patchset] table with name and description"),
    "patch": Field(list, True, "one or more [[patch]] tables", item=dict),
}
PATCHSET_SCHEMA = {
    "name": Field(str, True, 'a short name such as "uky"'),
    "description": Field(str, False, "one sentence"),
    "tag": Field(str, False, 'the default tag of its patches, e.g. "Uky"'),
    "format": Field(int, False, "1"),
}
PATCH_SCHEMA = {
    "id": Field(str, True, 'a kebab-case id such as "vllm-enable-log-requests"'),
    "title": Field(str, True, "a one-line title"),
    "why": Field(str, True, "the reason the change exists"),
    "tag": Field(str, False, 'the comment tag, e.g. "Uky"'),
    "kind": Field(str, True, "one of: " + ", ".join(kind_names()), choices=tuple(kind_names())),
    "target": Field(list, True, "a list of candidate paths, first match wins", item=str),
    "params": Field(dict, True, "a [patch.params] table for the kind"),
    "upstream": Field(dict, False, 'a table such as { kind = "python-name", names = ["x"] }'),
    "versions": Field(str, False, 'a version specifier such as ">=0.6,<0.7"'),
    "origin": Field(str, False, "where the change came from"),
    "forwarded": Field(str, False, 'an upstream PR URL or "no"'),
    "applied_upstream": Field(str, False, "the first upstream version containing it"),
    "drop_when": Field(str, False, 'a version specifier such as ">=0.7"'),
    "captured_against": Field(str, False, 'the upstream the patch was captured from, e.g. "verl 0.6.1"'),
    "needs": Field(list, False, 'ids of patches of this patchset it needs, e.g. ["add-helper"]', item=str),
}
UPSTREAM_SCHEMA = {
    "kind": Field(str, True, "one of: " + ", ".join(upstream.kind_names()), choices=tuple(upstream.kind_names())),
    "names": Field(list, False, "identifiers to look for", item=str),
    "call": Field(str, False, 'call-keyword: the callee as written, e.g. "AsyncLLM.from_vllm_config"'),
    "old_keyword": Field(str, False, "call-keyword: the keyword the patch replaces"),
    "new_keyword": Field(str, False, "call-keyword: the keyword upstream passes once it has the change"),
    "pattern": Field(str, False, "a regular expression"),
    "files": Field(list, False, "more files to search, relative to the tree", item=str),
}
META_KEYS = ("origin", "forwarded", "applied_upstream", "drop_when", "captured_against")


#: a specifier list packaging's ``SpecifierSet`` certainly accepts: comparisons with plain
#: release numbers, ``>=0.6,<0.7`` (ASCII digits and blanks only); anything else is asked of
#: packaging itself
_CLAUSE = r"[ \t]*(?:==|!=|<=|>=|<|>)[ \t]*[0-9]+(?:\.[0-9]+)*[ \t]*"
_PLAIN_SPEC = re.compile(f"{_CLAUSE}(?:,{_CLAUSE})*")


def _spec(value: str, file: Path, key: str, patch_id: str) -> str:
    if _PLAIN_SPEC.fullmatch(value):
        return value  # uky's drop_when: verify need not import packaging to read it (issue 39.13)
    # here, not at the top: packaging's specifiers compile a large regular expression (some 5 ms
    # of every start-up), and only a patch with ``versions`` or ``requires`` has one to check
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        raise ManifestError(
            file, key, f"{value!r} is not a version specifier", 'write e.g. ">=0.6,<0.7"', patch_id
        ) from None
    return value


def _patch(raw: dict[str, Any], index: int, root: Path, file: Path, default_tag: str | None) -> Patch:
    rid = raw.get("id")
    pid = rid if isinstance(rid, str) else f"#{index + 1}"
    check(raw, PATCH_SCHEMA, file=file, prefix=f"patch[{index}].", patch=pid)
    tag = raw.get("tag", default_tag)
    if not tag:
        raise ManifestError(file, f"patch[{index}].tag", "missing", 'add tag = "Uky" here or in [patchset]', pid)
    if not raw["target"]:
        raise ManifestError(file, f"patch[{index}].target", "is empty", "list at least one path", pid)
    _inside(raw["target"], file, f"patch[{index}].target", pid)
    kind = KINDS[raw["kind"]]
    params = check(raw["params"], kind.params_schema, file=file, prefix=f"patch[{index}].params.", patch=pid)
    up = raw.get("upstream", {"kind": "none"})
    check(up, UPSTREAM_SCHEMA, file=file, prefix=f"patch[{index}].upstream.", patch=pid)
    if up["kind"] == "python-name" and not up.get("names"):
        raise ManifestError(file, f"patch[{index}].upstream.names", "missing", "list the identifiers", pid)
    if up["kind"] == "regex" and not up.get("pattern"):
        raise ManifestError(file, f"patch[{index}].upstream.pattern", "missing", "write a regular expression", pid)
    for key in ("call", "old_keyword", "new_keyword") if up["kind"] == "call-keyword" else ():
        if not up.get(key):
            raise ManifestError(
                file,
                f"patch[{index}].upstream.{key}",
                "missing for call-keyword",
                f"write {key} = ... ({UPSTREAM_SCHEMA[key].hint})",
                pid,
            )
    if up.get("pattern"):
        try:
            re.compile(up["pattern"])
        except re.error as exc:
            raise ManifestError(
                file,
                f"patch[{index}].upstream.pattern",
                f"not a regular expression ({exc})",
                "fix the pattern (Python re syntax)",
                pid,
            ) from None
    _inside(up.get("files", []), file, f"patch[{index}].upstream.files", pid)
    for key in ("versions", "drop_when"):
        if key in raw:
            _spec(raw[key], file, f"patch[{index}].{key}", pid)
    return Patch(
        id=raw["id"],
        title=raw["title"],
        why=raw["why"].strip(),
        tag=tag,
        kind=raw["kind"],
        target=tuple(raw["target"]),
        params=kind.parse_params(params, root, file, pid),
        upstream=upstream.make_rule(up),
        versions=raw.get("versions"),
        meta={k: raw[k] for k in META_KEYS if k in raw},
        needs=tuple(raw.get("needs", ())),
    )


def _inside(paths: list[str], file: Path, key: str, patch_id: str) -> None:
    """Paths a patch names are relative to the tree and stay in it: a patchset never writes elsewhere,
    nor into version control's or patchctl's folders (a file in ``.git/hooks`` runs on the next commit)."""
    for i, rel in enumerate(paths):
        problem = relative_inside(rel)
        if problem:
            raise ManifestError(
                file,
                f"{key}[{i}]",
                f"{rel!r} {problem}",
                "write a path relative to the tree's root, inside it",
                patch_id,
            )
        folder = in_metadata(rel)
        if folder:
            raise ManifestError(
                file,
                f"{key}[{i}]",
                f"{rel!r} is inside {folder}, which belongs to version control or patchctl",
                "write a path to a file of the tree itself",
                patch_id,
            )


def load_patchset(directory: Path, *, builtin: bool = False) -> Patchset:
    """Read and validate ``directory/patchset.toml``; every error names the file, patch and key."""
    directory = Path(directory)
    file = directory / MANIFEST
    if not file.is_file():
        raise NoPatchset(directory)
    data = file.read_bytes()
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(file, "(document)", f"not valid TOML ({exc})", "fix the syntax") from None
    check(doc, TOP_SCHEMA, file=file)
    meta = check(doc["patchset"], PATCHSET_SCHEMA, file=file, prefix="patchset.")
    patches = [_patch(raw, i, directory, file, meta.get("tag")) for i, raw in enumerate(doc["patch"])]
    seen: set[str] = set()
    for i, p in enumerate(patches):
        if p.id in seen:
            raise ManifestError(file, f"patch[{i}].id", f"{p.id!r} is used twice", "give each patch its own id", p.id)
        seen.add(p.id)
    for i, p in enumerate(patches):
        for j, need in enumerate(p.needs):
            if need not in seen or need == p.id:
                raise ManifestError(
                    file,
                    f"patch[{i}].needs[{j}]",
                    f"{need!r} is not another patch of this patchset",
                    "name the id of a patch in this manifest, or drop it",
                    p.id,
                )
    patches = resolutions.attach(directory, patches)
    bases.load(directory)  # the 3-way fallback's base texts: refused here, before any plan, when not sound
    return Patchset(
        meta["name"],
        meta.get("description", ""),
        directory,
        file,
        tuple(patches),
        sha256(data).hexdigest(),
        builtin,
    )


def builtin_dir() -> Path:
    # the package's own folder, as importlib.resources.files finds it for a package on disk, which
    # a Path is taken of anyway: importing importlib.resources cost start-up its zipfile and tempfile
    return Path(__file__).parent / "builtin"


def builtin_names() -> list[str]:
    return sorted(p.name for p in builtin_dir().iterdir() if (p / MANIFEST).is_file())


def load_patchsets(specs: list[str] | tuple[str, ...]) -> list[Patchset]:
    """Resolve ``--patchset`` values (a built-in name or a directory); default: the ``uky`` set."""
    out = []
    for spec in specs or ("uky",):
        path = Path(spec)
        if path.is_dir():
            out.append(load_patchset(path))
        elif spec in builtin_names():
            out.append(load_patchset(builtin_dir() / spec, builtin=True))
        else:
            raise NoPatchset(spec, builtin_names())
    names = [p.name for p in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PatchsetGivenTwice(dupes[0])
    return out
