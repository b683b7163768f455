"""A file BASE and FORK both have, its edits drafted as in-place patches.

The file's changed runs of lines come from :func:`patchctl.capture.hunks.diff`. Python edits
are widened to whole statements (:mod:`patchctl.capture.pyunits`) and become the narrowest kind
that reproduces them (prelude, keyword-rename, else structural); shell edits become shell-env
when they only add tagged exports. Each function returns what it found for its file; nothing
is shared between files but the ids already taken.
"""

from __future__ import annotations

import ast
from collections.abc import Set
from dataclasses import replace
from pathlib import Path
from typing import Any

from patchctl.capture import narrow, nested, pyunits
from patchctl.capture.hunks import Hunk, diff, why_from
from patchctl.capture.model import Classified, Draft, LeftOut, Request, new_id, splice
from patchctl.patchsets import upstream
from patchctl.patchsets.placement.anchors import same_code
from patchctl.patchsets.placement.pyparse import split_lines


def changed(req: Request, rel: str, base_data: bytes, fork_data: bytes, taken: Set[str]) -> Classified:
    """The edits of ``rel``, a Python or shell file that differs between BASE and FORK; untagged ones
    only with ``--all``. Other files go to :mod:`patchctl.capture.othertypes`."""
    try:
        base_text, fork_text = base_data.decode("utf-8"), fork_data.decode("utf-8")
    except UnicodeDecodeError:
        return Classified(notes=(f"{rel}: changed, but not UTF-8 text; not captured",))
    found = diff(split_lines(base_text), split_lines(fork_text), req.rx)
    chosen = [h for h in found if h.tagged or req.all_]
    loose = [h for h in found if h not in chosen]
    carried: list[Hunk] = []
    if not chosen:
        done = Classified()
    elif rel.endswith(".py"):
        done = _python(req, rel, base_text, fork_text, chosen, taken, loose, carried)
    else:
        done = _shell(req, rel, base_text, fork_text, chosen, taken)
    # the count is of what the patchset really lacks: an untagged change a tagged edit's statement
    # took along (only comments or blank lines, or one --include'd) is captured with it
    skipped = len([h for h in loose if h not in carried])
    said = Classified(
        notes=(f"{rel}: {skipped} untagged change(s) not captured (pass --all to capture them)",) if skipped else ()
    )
    return Classified.join([said, done])


def _swallowed(unit: pyunits.Unit, loose: list[Hunk]) -> list[Hunk]:
    """The untagged changes that lie inside the lines ``unit`` re-writes: a statement widened from
    a tagged line can reach an untagged edit next to it, which would then travel unasked."""
    f1, f2 = unit.fork_span
    b1, b2 = unit.base_span
    out = []
    for h in loose:
        if h.fork[1] > h.fork[0]:
            hit = f1 <= h.fork[0] + 1 and h.fork[1] <= f2
        else:  # a pure deletion: where it sits in BASE
            hit = b1 <= h.base[0] + 1 and h.base[1] <= b2
        if hit:
            out.append(h)
    return out


def _untagged_code_lines(hunks: list[Hunk], lines: list[str], free: set[int]) -> list[int]:
    """Fork lines of ``hunks`` that hold code (not blank, not a comment); a deleted run counts as
    code at the line after it, since what it removed is not known to be a comment."""
    out = []
    for h in hunks:
        if h.fork[1] == h.fork[0]:
            out.append(h.fork[0] + 1)
            continue
        out += [n for n in h.fork_lines if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#")]
    return [n for n in out if n not in free or n > len(lines)]


def _python(
    req: Request,
    rel: str,
    base_text: str,
    fork_text: str,
    hunks: list[Hunk],
    taken: Set[str],
    untagged: list[Hunk],
    carried: list[Hunk],
) -> Classified:
    """Drafts of the tagged ``hunks``; ``untagged`` are the other changes of the file, and those a captured
    statement takes along are appended to ``carried``."""
    try:
        fork_tree, base_tree = ast.parse(fork_text), ast.parse(base_text)
    except SyntaxError as exc:
        return Classified(left_out=(LeftOut(rel, exc.lineno or 0, f"does not parse ({exc.msg}); fix it in the fork"),))
    flines, blines = split_lines(fork_text), split_lines(base_text)

    def forced_of(u: pyunits.Unit) -> bool:
        return any(f == rel and (n == u.line or any(n in h.fork_lines for h in u.hunks)) for f, n in req.include)

    units = nested.split([pyunits.find_unit(fork_tree, flines, h) for h in hunks], flines)
    placed = nested.settle(units, flines, base_tree, blines, forced_of)
    free = pyunits.comment_free_lines(fork_text)
    drafts: list[Draft] = []
    left: list[LeftOut] = []
    notes: list[str] = []
    for u, problem in placed:
        forced = forced_of(u)
        tagged = any(h.tagged for h in u.hunks)
        loose = pyunits.untagged_code(u, flines, free, req.rx) if tagged else []
        if loose and not forced:
            left.append(
                LeftOut(
                    rel,
                    loose[0],
                    f"line {loose[0]} changes code without the tag inside a "
                    f"tagged edit (line {u.line}); tag it, or pass --include {rel}:{u.line}",
                )
            )
            continue
        if problem:
            left.append(LeftOut(rel, problem.line, problem.reason.replace("FILE:LINE", f"{rel}:{problem.line}")))
            continue
        inside = _swallowed(u, untagged)
        stray = _untagged_code_lines(inside, flines, free)
        if stray and not forced:
            left.append(
                LeftOut(
                    rel,
                    stray[0],
                    f"line {stray[0]} changes code without the tag inside a tagged edit's statement "
                    f"(line {u.line}); tag it, or pass --include {rel}:{u.line}",
                )
            )
            continue
        carried += inside
        before, after = str(u.params["before"]), str(u.params["after"])
        if whitespace_only(before, after):
            notes.append(
                f"{rel}:{u.line}: an edit of only blank lines or trailing spaces; not captured, since it "
                "changes no code"
            )
            continue
        kind, params = _narrowest(
            req.tag, rel, u, before, after, base_text, base_tree, splice(blines, [(u.base_span, after)])
        )
        why = why_from(flines, sorted(n for h in u.hunks for n in h.tagged_lines), req.tag)
        scope = u.scope or "module"
        what = {
            "structural": f"{'header of ' if u.mode == 'header' else ''}{scope}",
            "prelude": "prelude block",
            "keyword-rename": f"{params.get('old_keyword')}= -> {params.get('new_keyword')}=",
        }[kind]
        pid = new_id(f"{Path(rel).stem}-{scope.split('.')[-1]}", taken)
        taken = taken | {pid}
        draft = Draft(
            pid,
            kind,
            rel,
            u.line,
            tagged,
            f"{rel}: {what}",
            why,
            params,
            part=(u.base_span, after),
            base_lines=blines,
            fork_lines=frozenset(n for h in u.hunks for n in h.fork_lines),
        )
        if kind == "keyword-rename":
            rule, note = _call_rule(draft, base_text, req.tag)
            draft = replace(draft, upstream=rule)
            notes += [note] if note else []
        pieces = _one_per_import(params, u.fork_span[0]) if kind == "structural" else []
        b1, b2 = u.base_span
        for k, (raw, line, written) in enumerate(pieces):
            if k:
                pid = new_id(f"{Path(rel).stem}-{scope.split('.')[-1]}", taken)
                taken = taken | {pid}
            # what each adds to BASE, in order: the first replaces the place, the others follow it
            part = ((b1, b2) if k == 0 else (b2 + 1, b2), written)
            drafts.append(replace(draft, id=pid, line=line, params=raw, part=part, fork_lines=frozenset({line})))
        if not pieces:
            drafts.append(draft)
    return Classified(tuple(drafts), tuple(left), tuple(notes))


def _one_per_import(params: dict[str, Any], first: int) -> list[tuple[dict[str, Any], int, str]]:
    """A run of import statements the fork inserted at module level, one patch per statement, each
    with the fork line its statement starts at (``first``: the line the run's place starts at) and
    the fork's lines it accounts for, in order; [] for any other edit.

    One patch for the run made every use of any of its names need all of them: one import held
    back held back the users of the others (issue 38 requirement 2). The first piece replaces the
    place's blank lines and comments with the fork's lines up to its statement; each next piece
    goes right after the one before it (its anchors above are the run's own statements before
    it, not the module's lines above the run: where upstream inserted an import between those and
    the run, the first piece lands by the 3-way merge and the others follow it, as git places the
    run), with the lines the fork has above it, the last with the lines that end the run. On
    BASE they land in the fork's order, byte for byte; elsewhere a piece whose anchors lead
    nowhere is set-added to the module's imports (:mod:`patchctl.patchsets.kinds.imports`).
    """
    after, before = str(params.get("after", "")), str(params.get("before", ""))
    if params.get("mode") != "statements" or params.get("scope") or params.get("blocks"):
        return []
    try:
        body, old = ast.parse(after).body, ast.parse(before).body
    except SyntaxError:
        return []
    if old or len(body) < 2 or not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in body):
        return []
    lines = split_lines(after)
    ends = [0] + [s.end_lineno or s.lineno for s in body]
    gaps = ["".join(lines[ends[k] : s.lineno - 1]) for k, s in enumerate(body)]  # the lines above each
    texts = ["".join(lines[s.lineno - 1 : s.end_lineno]) for s in body]
    tail = "".join(lines[ends[-1] :])
    heads = [lines[s.lineno - 1].strip() for s in body]
    out: list[tuple[dict[str, Any], int, str]] = []
    for k, s in enumerate(body):
        written = gaps[k] + texts[k] + (tail if k == len(body) - 1 else "")
        raw = {**params, "after": written, "before": before if k == 0 else ""}
        if k:
            raw["above"] = heads[:k][-3:]
        if not raw["before"]:
            raw.pop("before")
        out.append((raw, first + s.lineno - 1, written))
    return out


def whitespace_only(before: str, after: str) -> bool:
    """Whether two texts differ only in blank lines and trailing spaces, with the same code.

    Such an edit has nothing a structural patch could find it by again (its text may even be
    empty), and it changes no code; it is skipped with a note rather than written as a patch
    the loader refuses (issue 27).
    """

    def lines(text: str) -> list[str]:
        return [ln.rstrip() for ln in text.splitlines() if ln.strip()]

    return lines(before) == lines(after) and same_code(before, after)


def _call_rule(draft: Draft, base_text: str, tag: str) -> tuple[dict[str, Any] | None, str | None]:
    """A keyword-rename's ``call-keyword`` upstream rule (its call passes the new keyword and not
    the old one), or None and a note when that rule already holds on BASE: the patch would then end
    superseded on the very tree it was captured from, and on every release like it (issue 15)."""
    p, rel = draft.params, draft.path
    rule = {"kind": "call-keyword", "call": p["call"], "old_keyword": p["old_keyword"], "new_keyword": p["new_keyword"]}
    holds = upstream.find(upstream.make_rule(rule), rel, lambda path: base_text if path == rel else None, tag)
    if holds:
        return None, (
            f"{rel}:{draft.line}: patch {draft.id} has no upstream rule: the one capture writes for it "
            f"already holds on BASE ({holds}); add one by hand if upstream may take this change"
        )
    return rule, None


def _narrowest(
    tag: str, rel: str, u: pyunits.Unit, before: str, after: str, base_text: str, base_tree: ast.Module, expected: str
) -> tuple[str, dict[str, Any]]:
    if u.mode == "statements" and not u.scope and narrow.before_first_import(base_tree, u.base_span):
        block = narrow.prelude(before, after)
        if block and narrow.reproduces("prelude", block, base_text, expected, rel, tag):
            return "prelude", block
    if u.mode == "statements":
        rename = narrow.keyword_rename(before, after)
        if rename and narrow.reproduces("keyword-rename", rename, base_text, expected, rel, tag):
            return "keyword-rename", rename
    return "structural", dict(u.params)


def _shell(req: Request, rel: str, base_text: str, fork_text: str, hunks: list[Hunk], taken: Set[str]) -> Classified:
    blines, fork_lines = split_lines(base_text), split_lines(fork_text)
    drafts: list[Draft] = []
    left: list[LeftOut] = []
    for h in hunks:
        added = fork_lines[h.fork[0] : h.fork[1]]
        line = h.fork[0] + 1
        want = splice(blines, [((h.base[0] + 1, h.base[0]), "".join(added))]) if h.base[0] == h.base[1] else None
        nxt = blines[h.base[0]] if h.base[0] < len(blines) else None
        for raw in narrow.shell_env(added, nxt, req.tag) if want is not None else []:
            if narrow.reproduces("shell-env", raw, base_text, want, rel, req.tag):  # type: ignore[arg-type] # want is set: the loop runs only then
                pid = new_id(f"{Path(rel).stem}-env", taken)
                taken = taken | {pid}
                drafts.append(
                    Draft(
                        pid,
                        "shell-env",
                        rel,
                        line,
                        h.tagged,
                        f"{rel}: tagged exports",
                        "",
                        raw,
                        part=((h.base[0] + 1, h.base[0]), "".join(added)),
                        base_lines=blines,
                    )
                )
                break
        else:
            left.append(
                LeftOut(
                    rel,
                    line,
                    "no patch kind edits this shell script that way (shell-env "
                    "adds tagged exports only); ship the script whole as a new file instead",
                )
            )
    return Classified(tuple(drafts), tuple(left))
