"""The capture pipeline: compare, classify, write a staging patchset, prove it, then publish.

The proof is the engine itself: the staged manifest is loaded like any patchset and planned
against BASE; every captured file must come out byte-identical to what the fork holds (less
any untagged edits left out). A patch the proof blames is left out and reported with the cause
(:mod:`patchctl.capture.proof`), the other edits of its file are kept, and ``--out`` is replaced
only at the end, by a rename.
"""

from __future__ import annotations

import ast
import datetime as _dt
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchctl import journal
from patchctl.capture import manifest, narrow, proof, pyunits, sources
from patchctl.capture.hunks import Hunk, diff, why_from
from patchctl.capture.sources import Tree, open_base, open_fork
from patchctl.errors import PatchctlError
from patchctl.patchsets import upstream
from patchctl.patchsets.kinds.pyparse import split_lines
from patchctl.patchsets.loader import MANIFEST, load_patchset
from patchctl.target import Target
from patchctl.tags import tag_regex


@dataclass(frozen=True)
class Captured:
    id: str
    kind: str
    path: str
    #: the fork line it starts at (None for whole files)
    line: int | None
    tagged: bool


@dataclass(frozen=True)
class LeftOut:
    path: str
    line: int
    reason: str


@dataclass
class Report:
    fork: str
    base: str
    out: Path | None
    patches: list[Captured] = field(default_factory=list)
    left_out: list[LeftOut] = field(default_factory=list)
    #: things a user should know that are not failures (untagged edits not captured, ...)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.left_out


@dataclass
class _Entry:
    doc: dict[str, Any]
    info: Captured
    #: for add-file: the file's bytes, written under files/
    content: bytes | None = None
    #: for in-place edits: the (first, last) BASE lines the patch replaces, and the fork's text for them
    part: tuple[tuple[int, int], str] | None = None


@dataclass
class _State:
    fork: Tree
    base: Tree
    tag: str
    all_: bool
    include: set[tuple[str, int]]
    rx: re.Pattern[str]
    report: Report
    entries: list[_Entry] = field(default_factory=list)
    #: rel path -> the text the captured patches must produce from BASE
    expected: dict[str, str] = field(default_factory=dict)
    #: rel path -> BASE's lines, for the files edited in place
    base_lines: dict[str, list[str]] = field(default_factory=dict)
    ids: set[str] = field(default_factory=set)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "patch"


def _new_id(s: _State, stem: str) -> str:
    base = _slug(stem)
    pid, n = base, 1
    while pid in s.ids:
        n += 1
        pid = f"{base}-{n}"
    s.ids.add(pid)
    return pid


def _doc(s: _State, pid: str, kind: str, rel: str, title: str, why: str, line: int | None, tagged: bool,
         params: dict[str, Any]) -> dict[str, Any]:
    where = f"{rel}:{line}" if line else rel
    return {
        "id": pid, "title": title + ("" if tagged else " (untagged)"),
        "why": why or f"TODO: say why this change exists (captured from {where}; the tag carried no text)",
        "kind": kind, "target": [rel], "origin": f"captured from {s.report.fork} ({where})",
        "captured_against": s.report.base, "params": params,
    }


def _add(s: _State, kind: str, rel: str, stem: str, title: str, why: str, line: int | None, tagged: bool,
         params: dict[str, Any], content: bytes | None = None,
         part: tuple[tuple[int, int], str] | None = None) -> _Entry:
    pid = _new_id(s, stem)
    s.entries.append(_Entry(_doc(s, pid, kind, rel, title, why, line, tagged, params),
                            Captured(pid, kind, rel, line, tagged), content, part))
    return s.entries[-1]


def _alone(s: _State, e: _Entry) -> str:
    """The text ``e`` alone must make of BASE's file: the proof's measure for one patch."""
    if e.part is None:
        return (e.content or b"").decode("utf-8")
    return _splice(s.base_lines[e.info.path], [e.part])


def _expect(s: _State, rel: str) -> None:
    """What the patches of ``rel`` still captured must make of BASE's file (none left: nothing)."""
    mine = [e for e in s.entries if e.info.path == rel]
    parts = [e.part for e in mine if e.part is not None]
    if parts:
        s.expected[rel] = _splice(s.base_lines[rel], parts)
    elif mine:
        s.expected[rel] = _alone(s, mine[0])
    else:
        s.expected.pop(rel, None)


# -- per file ------------------------------------------------------------------------------------


def _new_file(s: _State, rel: str, data: bytes) -> None:
    tagged = s.rx.search(data.decode("utf-8", errors="replace")) is not None
    if not tagged and not s.all_:
        return
    if b"\0" in data[:8192]:
        s.report.notes.append(f"{rel}: binary file; add-file ships text files only, so it was not captured")
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        s.report.notes.append(f"{rel}: not UTF-8; add-file ships UTF-8 text only, so it was not captured")
        return
    lines = text.splitlines()
    tagged_at = [n for n, ln in enumerate(lines, 1) if s.rx.search(ln)]
    mode = stat.S_IMODE(os.stat(s.fork.root / rel).st_mode)
    _add(s, "add-file", rel, Path(rel).name.replace(".", "-") if Path(rel).suffix not in (".py",) else Path(rel).stem,
         f"add {rel}", why_from(lines, tagged_at[:1], s.tag), None, tagged,
         {"source": f"files/{rel}", "mode": f"{mode & 0o777:04o}"}, data)
    s.expected[rel] = text


def _splice(base_lines: list[str], parts: list[tuple[tuple[int, int], str]]) -> str:
    """BASE with each (first, last) line span replaced by a text, spans in file order."""
    out, at = [], 1
    for (first, last), text in sorted(parts):
        out += base_lines[at - 1: first - 1]
        out.append(text)
        at = max(last + 1, first)
    out += base_lines[at - 1:]
    return "".join(out)


def _python(s: _State, rel: str, base_text: str, fork_text: str, hunks: list[Hunk]) -> None:
    try:
        fork_tree, base_tree = ast.parse(fork_text), ast.parse(base_text)
    except SyntaxError as exc:
        s.report.left_out.append(LeftOut(rel, exc.lineno or 0, f"does not parse ({exc.msg}); fix it in the fork"))
        return
    flines, blines = split_lines(fork_text), split_lines(base_text)
    units = pyunits.merge([pyunits.find_unit(fork_tree, flines, h) for h in hunks], flines)
    free = pyunits.comment_free_lines(fork_text)
    s.base_lines[rel] = blines
    for u in units:
        forced = any(f == rel and (n == u.line or any(n in h.fork_lines for h in u.hunks)) for f, n in s.include)
        tagged = any(h.tagged for h in u.hunks)
        loose = pyunits.untagged_code(u, flines, free, s.rx) if tagged else []
        if loose and not forced:
            s.report.left_out.append(LeftOut(rel, loose[0], f"line {loose[0]} changes code without the tag inside a "
                                     f"tagged edit (line {u.line}); tag it, or pass --include {rel}:{u.line}"))
            continue
        touched = {i for o in units if o is not u and o.node is u.node and o.mode == "statements"
                   for i in range(o.above + 1, o.below)}
        problem = pyunits.place(u, flines, base_tree, blines, touched, forced)
        if problem:
            s.report.left_out.append(LeftOut(rel, problem.line, problem.reason.replace("FILE:LINE", f"{rel}:{problem.line}")))
            continue
        before, after = str(u.params["before"]), str(u.params["after"])
        expected = _splice(blines, [(u.base_span, after)])
        kind, params = _narrowest(s, rel, u, before, after, base_text, base_tree, expected)
        why = why_from(flines, sorted(n for h in u.hunks for n in h.tagged_lines), s.tag)
        scope = u.scope or "module"
        what = {"structural": f"{'header of ' if u.mode == 'header' else ''}{scope}", "prelude": "prelude block",
                "keyword-rename": f"{params.get('old_keyword')}= -> {params.get('new_keyword')}="}[kind]
        entry = _add(s, kind, rel, f"{Path(rel).stem}-{scope.split('.')[-1]}", f"{rel}: {what}", why, u.line, tagged,
                     params, part=(u.base_span, after))
        if kind == "keyword-rename":
            _attach_call_rule(s, entry, base_text)
    _expect(s, rel)


def _attach_call_rule(s: _State, entry: _Entry, base_text: str) -> None:
    """A keyword-rename gets a ``call-keyword`` upstream rule (its call passes the new keyword and
    not the old one), unless that rule already holds on BASE: the patch would then end
    superseded on the very tree it was captured from, and on every release like it (issue 15)."""
    p, rel = entry.doc["params"], entry.info.path
    rule = {"kind": "call-keyword", "call": p["call"], "old_keyword": p["old_keyword"], "new_keyword": p["new_keyword"]}
    holds = upstream.find(upstream.make_rule(rule), rel, lambda path: base_text if path == rel else None, s.tag)
    if holds:
        s.report.notes.append(f"{rel}:{entry.info.line}: patch {entry.info.id} has no upstream rule: the one capture "
                              f"writes for it already holds on BASE ({holds}); add one by hand if upstream may take "
                              "this change")
    else:
        entry.doc["upstream"] = rule


def _narrowest(s: _State, rel: str, u: pyunits.Unit, before: str, after: str, base_text: str,
               base_tree: ast.Module, expected: str) -> tuple[str, dict[str, Any]]:
    if u.mode == "statements" and not u.scope and narrow.before_first_import(base_tree, u.base_span):
        block = narrow.prelude(before, after)
        if block and narrow.reproduces("prelude", block, base_text, expected, rel, s.tag):
            return "prelude", block
    if u.mode == "statements":
        rename = narrow.keyword_rename(before, after)
        if rename and narrow.reproduces("keyword-rename", rename, base_text, expected, rel, s.tag):
            return "keyword-rename", rename
    return "structural", dict(u.params)


def _shell(s: _State, rel: str, base_text: str, fork_text: str, hunks: list[Hunk]) -> None:
    blines, fork_lines = split_lines(base_text), split_lines(fork_text)
    s.base_lines[rel] = blines
    for h in hunks:
        added = fork_lines[h.fork[0]: h.fork[1]]
        line = h.fork[0] + 1
        expected = _splice(blines, [((h.base[0] + 1, h.base[0]), "".join(added))]) if h.base[0] == h.base[1] else None
        nxt = blines[h.base[0]] if h.base[0] < len(blines) else None
        done = False
        for raw in narrow.shell_env(added, nxt, s.tag) if expected is not None else []:
            if narrow.reproduces("shell-env", raw, base_text, expected, rel, s.tag):  # type: ignore[arg-type]
                _add(s, "shell-env", rel, f"{Path(rel).stem}-env", f"{rel}: tagged exports", "", line, h.tagged, raw,
                     part=((h.base[0] + 1, h.base[0]), "".join(added)))
                done = True
                break
        if not done:
            s.report.left_out.append(LeftOut(rel, line, "no patch kind edits this shell script that way (shell-env "
                                             "adds tagged exports only); ship the script whole as a new file instead"))
    _expect(s, rel)


def _changed_file(s: _State, rel: str, base_data: bytes, fork_data: bytes) -> None:
    try:
        base_text, fork_text = base_data.decode("utf-8"), fork_data.decode("utf-8")
    except UnicodeDecodeError:
        s.report.notes.append(f"{rel}: changed, but not UTF-8 text; not captured")
        return
    found = diff(split_lines(base_text), split_lines(fork_text), s.rx)
    chosen = [h for h in found if h.tagged or s.all_]
    skipped = len(found) - len(chosen)
    if skipped:
        s.report.notes.append(f"{rel}: {skipped} untagged change(s) not captured (pass --all to capture them)")
    if not chosen:
        return
    if rel.endswith(".py"):
        _python(s, rel, base_text, fork_text, chosen)
    elif rel.endswith(".sh") or fork_text.startswith("#!") and "sh" in fork_text.split("\n", 1)[0]:
        _shell(s, rel, base_text, fork_text, chosen)
    else:
        for h in chosen:
            s.report.left_out.append(LeftOut(rel, h.fork[0] + 1, f"no patch kind edits {Path(rel).suffix or 'such'} "
                                             "files in place; only Python and shell edits are captured"))


def _file(s: _State, rel: str) -> None:
    data = (s.fork.root / rel).read_bytes()
    if rel not in s.base.files:
        _new_file(s, rel, data)
    else:
        other = (s.base.root / rel).read_bytes()
        if other != data:
            _changed_file(s, rel, other, data)


def _ignored(s: _State) -> None:
    """Tagged files git ignores in FORK are captured like any other, each with a note naming the
    ignore rule: git decides what FORK's tree is, but a tag says "this is my edit", and passing
    one over unseen loses it (issue 15)."""
    found = sources.ignored_tagged(s.fork.root, s.rx)
    for rel, rule in found.tagged.items():
        before = len(s.entries)
        _file(s, rel)
        ids = [e.info.id for e in s.entries[before:]]
        what = f"captured as {', '.join(ids)}" if ids else "not captured (the other line about it says why)"
        s.report.notes.append(f"{rel}: git ignores it in FORK ({rule}), but it carries the tag: {what}")
    if found.unread:
        limit = sources.IGNORED_READ_LIMIT >> 20
        s.report.notes.append(f"{len(found.unread)} file(s) git ignores are over {limit} MiB and were not searched "
                              f"for the tag (first: {found.unread[0]})")


# -- staging, proof and publishing -------------------------------------------------------------


def _stage(s: _State, where: Path, name: str) -> None:
    where.mkdir(parents=True)
    for e in s.entries:
        if e.content is not None:
            dest = where / "files" / e.info.path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(e.content)
    head = {"name": name, "description": f"Captured from {s.report.fork} against {s.report.base} on "
            f"{_dt.date.today().isoformat()} by patchctl capture", "tag": s.tag, "format": 1}
    (where / MANIFEST).write_text(manifest.render(head, [e.doc for e in s.entries]), encoding="utf-8")


def _prove(s: _State, staged: Path, name: str) -> None:
    """Stage the patchset and prove it on BASE. A patch the proof blames is left out with the
    cause, the other edits of its file kept; what remains is staged and proven again (each round
    leaves out at least one patch, so this ends). With no patch left nothing is staged."""
    target = Target(s.base.root, s.base.version, s.base.label, None, False)
    while s.entries:
        _stage(s, staged, name)
        alone = {e.info.id: (e.info.path, _alone(s, e)) for e in s.entries}
        blamed = {b.patch: b for b in proof.blame(load_patchset(staged), target, s.expected, alone)}
        if not blamed:
            return
        shutil.rmtree(staged)
        for e in s.entries:
            if e.info.id in blamed:
                s.report.left_out.append(LeftOut(e.info.path, e.info.line or 1, f"patch {e.info.id} ({e.info.kind}) "
                                                 f"does not reproduce its edit from BASE: {blamed[e.info.id].cause}; "
                                                 "this edit is left out, the file's other captured edits are kept"))
        s.entries = [e for e in s.entries if e.info.id not in blamed]
        for rel in {b.path for b in blamed.values()}:
            _expect(s, rel)


def _publish(staged: Path, out: Path) -> None:
    """Swap the staged patchset in with two renames; :func:`_recover_out` mends a kill in between."""
    if out.exists():
        if any(out.iterdir()) and not (out / MANIFEST).is_file():
            raise PatchctlError(f"--out {out}: exists and is not a patchset directory; choose a new or empty directory")
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        journal.step()
        os.replace(out, old)
        journal.step()
        os.replace(staged, out)
        journal.step()
        shutil.rmtree(old, ignore_errors=True)
    else:
        journal.step()
        os.replace(staged, out)


def _recover_out(out: Path) -> str | None:
    """Undo what a capture killed half-way left beside ``out``: its staging folder, and the old
    patchset it had moved aside (put back when ``out`` is missing, dropped when the new one is in)."""
    said = None
    for stale in sorted(out.parent.glob(f".{out.name}.capture-*")):
        shutil.rmtree(stale, ignore_errors=True)
        said = f"--out {out}: removed the staging folder of an interrupted capture; {out} is as it was"
    for old in sorted(out.parent.glob(f".{out.name}.old-*")):
        if out.exists():
            shutil.rmtree(old, ignore_errors=True)
            said = f"--out {out}: an interrupted capture had written the new patchset; finished its clean-up"
        else:
            os.replace(old, out)
            said = f"--out {out}: an interrupted capture was rolled back; the previous patchset is back"
    return said


def capture(fork: Path, base: str, out: Path | None, *, tag: str = "Uky", all_: bool = False,
            include: set[tuple[str, int]] | None = None, name: str | None = None) -> Report:
    """Capture FORK's edits against BASE into ``out`` (None: report only, write nothing)."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", tag):
        raise PatchctlError(f"--tag {tag!r}: use letters, digits, '_', '.' or '-' (the word after '#')")
    if out is not None and out.exists() and out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).is_file():
        raise PatchctlError(f"--out {out}: exists and is not a patchset directory; choose a new or empty directory")
    fork_tree = open_fork(fork)
    parent = (out.resolve().parent if out is not None else None)
    recovered = None
    if parent is not None and out is not None:
        parent.mkdir(parents=True, exist_ok=True)
        recovered = _recover_out(out.resolve())
    prefix = f".{out.name}.capture-" if out is not None else ".patchctl-capture-"
    with tempfile.TemporaryDirectory(prefix=prefix, dir=parent) as tmp:
        base_tree = open_base(base, fork_tree.root, Path(tmp))
        label = f"verl {base_tree.version}" if base_tree.version else base_tree.label
        report = Report(str(fork), label, out)
        if recovered:
            report.notes.append(recovered)
        s = _State(fork_tree, base_tree, tag, all_, include or set(), tag_regex({tag}), report)
        for rel in sorted(fork_tree.files):
            _file(s, rel)
        _ignored(s)
        if all_:
            gone = sorted(base_tree.files - fork_tree.files)
            if gone:
                report.notes.append(f"{len(gone)} file(s) of BASE are not in FORK (first: {gone[0]}); "
                                    "no patch kind deletes files, so deletions are not captured")
        staged = Path(tmp) / "patchset"
        _prove(s, staged, name or (out.name if out is not None else "captured"))
        report.patches = [e.info for e in s.entries]
        if out is not None and s.entries:
            _publish(staged, out.resolve())
        elif out is not None:
            report.out = None
            report.notes.append("nothing was captured, so --out was not written")
    return report
