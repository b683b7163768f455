"""``drift``: for each patch, the upstream code under it compared between two trees.

The outcome on each side comes from the real planner (as ``apply`` and ``matrix`` decide it);
the regions come from :mod:`~patchctl.drift.regions`, asked of both trees. A region is
reported even when the patch still applies, which is the point: a changed default beside an
edited call applies cleanly and still changes what the patch means.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

from patchctl.drift import regions
from patchctl.drift.model import Drift, PatchDrift, Region
from patchctl.drift.sides import Side, open_side, spec
from patchctl.drift.where import Finder, renamed_to
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.model import Patch, PatchResult, Patchset
from patchctl.patchsets.plan import plan_apply
from patchctl.patchsets.reader import TreeReader, locate


def drift(source: str, dest: str, patchsets: list[Patchset], repo: Path | None = None) -> Drift:
    """Compare ``source`` and ``dest`` (releases, refs of ``repo``, directories) under every patch."""
    a_spec, b_spec = spec(source, repo, "--from"), spec(dest, repo, "--to")
    with tempfile.TemporaryDirectory(prefix="patchctl-drift-") as tmp:
        a, b = open_side(a_spec, Path(tmp) / "from"), open_side(b_spec, Path(tmp) / "to")
        before, after = _outcomes(a, patchsets, repo, a.commit), _outcomes(b, patchsets, repo, a.commit)
        finders = (Finder(a), Finder(b))
        out = [
            PatchDrift(
                ps.name,
                p.id,
                p.kind,
                before[(ps.name, p.id)],
                after[(ps.name, p.id)],
                tuple(_regions(ps, p, a, b, finders)),
            )
            for ps in patchsets
            for p in ps.patches
        ]
    return Drift(a.label, b.label, a.target.version, b.target.version, tuple(out))


def _outcomes(
    side: Side, patchsets: list[Patchset], repo: Path | None, base: str | None
) -> dict[tuple[str, str], PatchResult]:
    """The planner's outcomes on one side; with ``repo`` the patches that do not fit are carried
    along its history from their base (``captured_against``, else ``--from``), as ``apply --repo`` does."""
    if repo is None:
        return {(r.patchset, r.patch): r for r in plan_apply(side.target, patchsets).results}
    from patchctl.patchsets.history.carry import History

    history = History(repo, base, strict=False)
    try:
        return {(r.patchset, r.patch): r for r in history.plan(side.target, patchsets).results}
    finally:
        history.close()


def _regions(ps: Patchset, patch: Patch, a: Side, b: Side, finders: tuple[Finder, Finder]) -> list[Region]:
    if KINDS[patch.kind].creates_target:
        return [_beside(patch.target[0], a, b)]
    path_a, path_b = locate(patch, TreeReader(a.target)), locate(patch, TreeReader(b.target))
    if path_a is None and path_b is None:
        return []
    if path_a is None:
        assert path_b is not None
        return [Region("file", path_b, "added", (f"file added: {path_b}",))]
    flags: list[str] = []
    compared = path_a if b.read(path_a) is not None else renamed_to(a, b, path_a)
    if compared is None:
        flags.append(f"file deleted: {path_a}")
    elif compared != path_a:
        flags.append(f"file renamed: {path_a} -> {compared}")
    if path_b is not None and path_b != path_a:
        flags.append(f"patch target moved: {path_a} -> {path_b}")
    text_a, text_b = a.read(path_a) or "", b.read(compared) if compared else None
    status = (
        "deleted"
        if text_b is None
        else "renamed"
        if compared != path_a
        else "changed"
        if text_a != text_b
        else "unchanged"
    )
    name = path_a if compared in (None, path_a) else f"{path_a} -> {compared}"
    out = [
        Region(
            "file",
            name,
            status,
            tuple(flags),
            regions.trimmed_diff(text_a, text_b, f"{a.label}/{path_a}", f"{b.label}/{compared}")
            if text_b is not None and text_a != text_b
            else "",
        )
    ]
    tree_a, tree_b = regions.parse(text_a), regions.parse(text_b)
    if tree_a is not None:
        out += [
            _scope(scope, path_a, tree_a, text_a, compared, tree_b, text_b, finders[1])
            for scope in regions.anchor_scopes(patch, tree_a)
        ]
        out += [_callee(callee, finders) for callee in regions.callees(patch)]
    return out


def _scope(
    scope: str,
    path_a: str,
    tree_a: ast.Module,
    text_a: str,
    path_b: str | None,
    tree_b: ast.Module | None,
    text_b: str | None,
    find_b: Finder,
) -> Region:
    node_a = regions.definitions(tree_a).get(scope)
    name = f"{path_a}:{scope}"
    if node_a is None:
        return Region("scope", name, "absent")
    old = regions.source(text_a, node_a)
    node_b = regions.definitions(tree_b).get(scope) if tree_b is not None else None
    where_b = f"{path_b}:{scope}"
    if node_b is None:
        moved = find_b.moved(scope, path_b)
        if moved is None:
            return Region(
                "scope",
                name,
                "deleted",
                (f"deleted: {scope} (was in {path_a})",),
                regions.trimmed_diff(old, "", f"a/{path_a}", "/dev/null"),
            )
        file_b, qual_b, node_b, text_b = moved
        where_b = f"{file_b}:{qual_b}"
        flag: tuple[str, ...] = (f"moved: {scope} -> {where_b}",)
    else:
        flag = ()
    assert text_b is not None
    new = regions.source(text_b, node_b)
    flags = flag + tuple(regions.signature_flags(scope, regions.signature(node_a), regions.signature(node_b)))
    status = "moved" if flag else "changed" if old != new else "unchanged"
    return Region(
        "scope",
        name,
        status,
        flags,
        regions.trimmed_diff(old, new, f"a/{path_a}:{scope}", f"b/{where_b}") if old != new else "",
    )


def _callee(callee: str, finders: tuple[Finder, Finder]) -> Region:
    """The callee's signature. One not defined in the tree under the name the call uses (vLLM's
    ``AsyncLLM``, or a call through a variable) cannot be compared here: "outside-tree"."""
    last, owner = callee.rsplit(".", 1)[-1], callee.rsplit(".", 2)[-2] if "." in callee else None
    found_a, found_b = (f.definition(last, owner) for f in finders)
    if found_a is None and found_b is None:
        return Region("callee", callee, "outside-tree")
    if found_a is None or found_b is None:
        here = found_a or found_b
        assert here is not None
        status = "deleted" if found_b is None else "added"
        return Region("callee", callee, status, (f"{status}: {callee} ({here[0]}:{here[1]})",))
    (path_a, qual_a, node_a, text_a), (path_b, qual_b, node_b, text_b) = found_a, found_b
    old, new = regions.header(text_a, node_a), regions.header(text_b, node_b)
    flags = [f"moved: {qual_a} -> {path_b}:{qual_b}"] if (path_a, qual_a) != (path_b, qual_b) else []
    flags += regions.signature_flags(callee, regions.signature(node_a), regions.signature(node_b))
    status = "moved" if (path_a, qual_a) != (path_b, qual_b) else "changed" if old != new else "unchanged"
    return Region(
        "callee",
        f"{callee} ({path_b}:{qual_b})",
        status,
        tuple(flags),
        regions.trimmed_diff(old, new, f"a/{path_a}", f"b/{path_b}") if old != new else "",
    )


#: files every release changes beside an added file at the top of the tree: version bumps,
#: dependency pins and prose. Between 0.6.1 and 0.7.0 they made 7 of drift's 9 "changed" patches
#: and about 400 of its 549 lines, all under add-file patches whose own file upstream never touched.
METADATA_NAMES = frozenset({"PKG-INFO", "setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "LICENSE", "NOTICE"})
METADATA_SUFFIXES = (".md", ".rst", ".txt", ".cfg")


def is_metadata(path: str) -> bool:
    """Whether ``path`` is packaging metadata or documentation rather than code."""
    name = path.rsplit("/", 1)[-1]
    return name in METADATA_NAMES or name.endswith(METADATA_SUFFIXES) or path.startswith("docs/")


def _beside(target: str, a: Side, b: Side) -> Region:
    """The files in the added file's folder: what the added file sits beside, and may copy or call."""
    folder = target.rsplit("/", 1)[0] if "/" in target else ""
    old = [p for p in a.listdir(folder) if p != target]
    new = [p for p in b.listdir(folder) if p != target]
    came, went = [p for p in new if p not in old], [p for p in old if p not in new]
    diffs = "".join(f"added: {p}\n" for p in came) + "".join(f"removed: {p}\n" for p in went)
    changed, metadata = [], []
    for p in old:
        if p in new and a.read(p) != b.read(p):
            if is_metadata(p):  # every release bumps these: one line, never a diff (issue 39)
                metadata.append(p)
                continue
            changed.append(p)
            diffs += regions.trimmed_diff(a.read(p) or "", b.read(p) or "", f"a/{p}", f"b/{p}", 12)
    flags = [f"upstream now ships {target} itself"] if b.read(target) is not None and a.read(target) is None else []
    status = (
        "changed"
        if flags or changed or came or went
        else "metadata"
        if metadata
        else "unchanged"
        if old or new
        else "absent"
    )
    if metadata:
        diffs += f"packaging metadata and docs also changed: {', '.join(metadata)}\n"
    shown = diffs
    lines = shown.splitlines(keepends=True)
    if len(lines) > regions.DIFF_LINES:
        shown = "".join(lines[: regions.DIFF_LINES]) + f"... ({len(lines) - regions.DIFF_LINES} more diff lines)\n"
    name = f"{folder or '.'}/ beside {target.rsplit('/', 1)[-1]} (+{len(came)} -{len(went)} ~{len(changed)})"
    return Region("beside", name, status, tuple(flags), shown)
