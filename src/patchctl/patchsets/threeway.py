"""The 3-way fallback: a patch whose anchors lead nowhere, merged from its base text as git does.

A patch is placed by its own anchors first (every kind's ``apply``). When they fail (upstream
rewrote the function, added an import beside the edit, moved a statement), ``git apply -3``
still merges the fork's change from the base blob, and often rightly (issue 38 req 7). This
module does the same for one patch, from the base text capture keeps (:mod:`~patchctl.patchsets.bases`):

1. ``mine``: the patch applied by its kind to the base text of its file (where it was captured,
   so it fits there);
2. the change from base to ``mine`` merged into the target's text (:func:`merge`: the history
   walk's in-process merge, else ``git merge-file``), accepted only when it merges cleanly;
3. the merged change must sit where the fork had it: in Python, in the same innermost def or
   class (placement's scope finder, :func:`~patchctl.patchsets.placement.scopes.enclosing`); in
   YAML, each new line under the same key path; and the file must still load as its type
   (:func:`~patchctl.patchsets.loads.check`);
4. what it wrote is recorded as a text hunk (the changed lines with enough context to be found
   once): ``verify`` finds it there, ``revert`` puts the target's lines back; a placement whose
   record would not lead back to it exactly is refused.

A patch the fallback refuses stays what its kind said (a conflict), with the fallback's reason
added, so the user knows what a merge would have hit. :class:`ThreeWay` wraps every in-place
kind in the registry, so apply, matrix, markers, drift and the history walk all get it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchctl.errors import PatchctlError
from patchctl.patchsets import bases, loads
from patchctl.patchsets.kinds.base import Check, Context, Edit, EditStatus, PatchKind
from patchctl.patchsets.kinds.bom import strip_bom
from patchctl.patchsets.model import Patch, Presence
from patchctl.records import replace

if TYPE_CHECKING:
    import tempfile

    from patchctl.patchsets.kinds.text_hunk import TextHunk

#: the record key of a placement made by the fallback
KEY = "merged"
#: statuses of a kind's own apply that the fallback tries to do better than
RETRY = (EditStatus.CONFLICT, EditStatus.AMBIGUOUS, EditStatus.NOT_APPLICABLE)
#: context lines around the merged change in its record, at least and at most
CONTEXT = (3, 12)


@functools.cache
def _hunk() -> TextHunk:
    """The text-hunk kind a fallback placement is recorded as; imported on first use, as are the
    key-path helpers: every in-place kind is wrapped, and `verify` of a patchset that never
    needed the fallback should not pay for them."""
    from patchctl.patchsets.kinds.text_hunk import TextHunk

    return TextHunk()


def merge(mine: str, old: str, new: str) -> str | None:
    """The change from ``old`` to ``mine`` carried into ``new``; None when it does not merge cleanly.

    The history walk's in-process merge (:func:`~patchctl.patchsets.history.upstream.away`) when
    ``new`` left the code around the change alone, its sure-conflict test
    (:func:`~patchctl.patchsets.history.upstream.clash`), and ``git merge-file`` for the rest."""
    if old == new:
        return mine
    if mine == old:
        return new
    # imported here: every in-place kind is wrapped, and verify of a tree with no base texts
    # must not load git, subprocess and the history walk (tests/cli/test_startup_imports.py)
    from patchctl import git
    from patchctl.patchsets.history.upstream import away, clash

    fast = away(mine, old, new)
    if fast is not None:
        return fast
    if clash(mine, old, new):
        return None
    folder = _scratch()
    names = []
    for i, text in enumerate((mine, old, new)):
        path = folder / f"{i}.txt"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        names.append(str(path))
    try:
        child = git.spawn(folder, "merge-file", "-p", "-q", *names)
    except (OSError, PatchctlError):
        return None
    out, _ = child.communicate()
    return out.decode("utf-8", "surrogateescape") if child.returncode == 0 else None


_folder: list[tempfile.TemporaryDirectory[str]] = []


def _scratch() -> Path:
    """One scratch folder per process for the merges' three files (as the history walk keeps
    one): git's per-folder config look-up is made once, not once per merge."""
    if not _folder:
        import tempfile

        _folder.append(tempfile.TemporaryDirectory(prefix="patchctl-merge-"))
    return Path(_folder[0].name)


class ThreeWay:
    """``kind`` with the 3-way fallback for its apply, and its check and revert reading a
    placement the fallback made (the record's ``merged`` text hunk) before the kind's own."""

    def __init__(self, kind: PatchKind) -> None:
        self._kind = kind
        self._mine: dict[Any, Edit] = {}
        #: the fallback's answer per patch and target text: the planner plans again in rounds
        #: (a patch held back for its partner), and matrix meets the same text in each round
        self._done: dict[Any, Edit | str] = {}

    def __getattr__(self, name: str) -> Any:  # name, description, params_schema, parse_params, ...
        return getattr(self._kind, name)

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        hunk = recorded(patch, ctx)
        if hunk is not None:
            found = _hunk().check(text, hunk, ctx)
            if found.presence is Presence.PRESENT:
                return replace(found, reason=f"{found.reason} (placed by the 3-way merge from its base text)")
        return self._kind.check(text, patch, ctx)

    def revert(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        hunk = recorded(patch, ctx)
        if hunk is not None and _hunk().check(text, hunk, ctx).presence is Presence.PRESENT:
            return _hunk().revert(text, hunk, replace(ctx, undo=None))
        return self._kind.revert(text, patch, ctx)

    def apply(self, text: str | None, patch: Patch, ctx: Context) -> Edit:
        edit = self._kind.apply(text, patch, ctx)
        # a set-add puts an import at the end of the module's imports; the merge, where it is
        # clean, puts it where the fork had it, as git does (issue 38)
        soft = edit.status is EditStatus.CHANGED and "imports_added" in (edit.undo or {})
        if (edit.status not in RETRY and not soft) or text is None or ctx.undo:
            return edit
        base = _base_text(patch, ctx)
        if base is None:
            return edit
        key = _key(patch, ctx, base)
        done = self._done.get((key, text)) if key is not None else None
        if done is None:
            done = self._fallback(text, base, patch, ctx)
            if key is not None:
                if len(self._done) > 1024:
                    self._done.clear()
                self._done[(key, text)] = done
        if isinstance(done, Edit) and not (soft and done.status is not EditStatus.CHANGED):
            return done
        if soft:
            return edit
        return replace(edit, reason=f"{edit.reason}; the 3-way merge from its base text: {done}")

    def _fallback(self, text: str, base: str, patch: Patch, ctx: Context) -> Edit | str:
        """The patch merged into ``text`` from ``base``, or why not (a reason for the user)."""
        own = self._on_base(base, patch, ctx)
        if own.status is not EditStatus.CHANGED or own.text is None or own.also:
            return f"the patch does not apply to the base text it was captured from ({own.reason})"
        mine = own.text
        first: Edit | str | None = None
        if ctx.path.endswith(".py"):
            # by logical lines the merge is blind to how either side is formatted (issue 38 req 3):
            # a target run through ruff or black merges as the original does
            from patchctl.patchsets import logical

            first = _accepted(ctx.path, base, mine, text, logical.merge(mine, base, text), " by logical lines")
            if isinstance(first, Edit):
                return first
        # by physical lines, as git merges: a fork's edit and upstream's on the same multi-line
        # statement, on lines of their own, merge there
        second = _accepted(ctx.path, base, mine, text, merge(mine, base, text))
        return second if isinstance(second, Edit) or first is None else first

    def _on_base(self, base: str, patch: Patch, ctx: Context) -> Edit:
        """The kind's own apply on the base text: the same for every target, so done once."""
        key = _key(patch, ctx, base)
        if key is not None and key in self._mine:
            return self._mine[key]
        plain = Context(ctx.patchset_root, ctx.path, read=ctx.read, mode_of=ctx.mode_of)
        try:
            own = self._kind.apply(base, patch, plain)
        except PatchctlError as exc:
            own = Edit(EditStatus.CONFLICT, str(exc))
        if key is not None:
            if len(self._mine) > 4096:
                self._mine.clear()
            self._mine[key] = own
        return own


def _accepted(path: str, base: str, mine: str, text: str, merged: str | None, how: str = "") -> Edit | str:
    """The merge's result as an edit when it passes the fallback's checks (same place as in the
    fork, the file still loads, a record that leads back), else why not."""
    if merged is None:
        return "upstream changed the lines it edits too (the merge conflicts); resolve it by hand"
    if merged == text:
        return Edit(EditStatus.UNCHANGED, "already there (the 3-way merge from its base text adds nothing)")
    wrong = misplaced(path, base, mine, text, merged)
    if wrong:
        return wrong
    broken = loads.check(path, merged, text)
    if broken is not None and not broken.already:
        return f"the merged file would not load: {broken}"
    hunk = record_of(text, merged)
    if hunk is None:
        return "the merged lines could not be told apart from the rest of the file again, so revert could not"
    return Edit(
        EditStatus.CHANGED,
        f"placed by a 3-way merge from its base text{how} at line {hunk['line']} (its own anchors led nowhere)",
        merged,
        undo={KEY: hunk},
    )


def _key(patch: Patch, ctx: Context, base: str) -> Any:
    """What the fallback's answer depends on besides the target's text; None when the patch's
    params cannot be a key (then nothing is cached)."""
    key = (str(ctx.patchset_root), patch.id, ctx.path, patch.params, patch.resolutions, base)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _base_text(patch: Patch, ctx: Context) -> str | None:
    found = bases.load(ctx.patchset_root)
    for rel in (ctx.path, *patch.target):
        if rel in found:
            return strip_bom(found[rel])
    return None


def recorded(patch: Patch, ctx: Context) -> Patch | None:
    """The fallback's placement of ``patch`` as the record has it, as a text-hunk patch; else None."""
    got = (ctx.undo or {}).get(KEY)
    if not isinstance(got, dict):
        return None  # no fallback placement recorded (verify's usual case): text_hunk not loaded
    from patchctl.patchsets.kinds import text_hunk as th

    was, now, line = got.get("was"), got.get("now"), got.get("line")
    if not isinstance(was, str) or not isinstance(now, str) or not isinstance(line, int) or line < 1:
        return None
    return replace(patch, kind=th.TextHunk.name, params=th.Params(was, now, line, 0), resolutions=(), kept=())


def record_of(text: str, merged: str) -> dict[str, Any] | None:
    """The lines ``merged`` changes in ``text``, with context enough to be found once in each:
    ``was``, ``now`` and the 1-based ``line``; checked to lead back to ``text`` exactly. None
    when no context up to :data:`CONTEXT` does."""
    from patchctl.patchsets.kinds import text_hunk as th

    a, b = text.splitlines(keepends=True), merged.splitlines(keepends=True)
    top, bottom = th.shared_ends(a, b)
    for n in range(CONTEXT[0], CONTEXT[1] + 1):
        lo = max(0, top - n)
        was, now = "".join(a[lo : len(a) - bottom + n]), "".join(b[lo : len(b) - bottom + n])
        if not was.strip() or not now.strip() or th._rows(was) == th._rows(now):
            continue
        hunk = {"was": was, "now": now, "line": lo + 1}
        probe = replace_patch(hunk)
        ctx = Context(Path("."), "merged")
        if _hunk().check(merged, probe, ctx).presence is not Presence.PRESENT:
            continue
        if _hunk().check(text, probe, ctx).presence is not Presence.MISSING:
            continue
        back = _hunk().revert(merged, probe, ctx)
        if back.status is EditStatus.CHANGED and back.text == text and _once(b, now) and _once(a, was):
            return hunk
    return None


def replace_patch(hunk: dict[str, Any]) -> Patch:
    """A bare text-hunk patch of a record, for checking it."""
    from patchctl.patchsets.kinds import text_hunk as th

    return Patch(
        "merged", "", "", "", th.TextHunk.name, ("merged",), th.Params(hunk["was"], hunk["now"], hunk["line"], 0)
    )


def _once(lines: list[str], piece: str) -> bool:
    want = piece.splitlines(keepends=True)
    n = len(want)
    return sum(lines[i : i + n] == want for i in range(len(lines) - n + 1)) == 1


def misplaced(path: str, base: str, mine: str, text: str, merged: str) -> str | None:
    """Why the merged change sits elsewhere than the fork's, else None: in Python another
    innermost def or class; in YAML a new line under another key path."""
    from patchctl.patchsets.kinds import keypath

    if path.endswith(".py"):
        from patchctl.patchsets.placement import scopes

        want, got = scopes.enclosing(base, mine, path), scopes.enclosing(text, merged, path)
        if want != got:
            return (
                f"the merge puts the change in {got or 'module level or across definitions'}, where the fork "
                f"has it in {want or 'module level or across definitions'}; place it by hand"
            )
        return None
    if keypath.fmt_of(path) == "yaml":
        want_keys, got_keys = _new_keys(base, mine), _new_keys(text, merged)
        if want_keys is not None and got_keys is not None and sorted(want_keys) != sorted(got_keys):
            line, parent = next((x for x in sorted(got_keys) if x not in want_keys), sorted(got_keys or want_keys)[0])
            return (
                f"the merge puts {line.strip()[:60]!r} under {keypath.under(parent)}, not where the fork has it; "
                "place it by hand"
            )
    return None


def _new_keys(old: str, new: str) -> list[tuple[str, tuple[str, ...]]] | None:
    """Each content line ``new`` adds to ``old`` (a YAML text) with the key path it sits under."""
    import difflib

    from patchctl.patchsets.kinds import keypath

    a, b = old.splitlines(), new.splitlines()
    out = []
    try:
        for op, _, _, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if op in ("insert", "replace"):
                out += [(b[j], keypath.parent_at(b, j)) for j in range(j1, j2) if keypath.content(b[j])]
    except Exception:
        return None
    return out
