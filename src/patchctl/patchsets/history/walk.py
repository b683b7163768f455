"""One edit carried along upstream's commits, from the patch's base to the target, in steps.

As git-imerge does for a merge: rather than one 3-way merge across the whole jump (what
``git apply -3`` does, and what conflicts as soon as upstream rewrote the code around the
edit), upstream's history is replayed onto the patched file commit by commit, each step a
``git merge-file`` of upstream's change into the patched text. Only commits that change the
edit's file are steps; runs of them are merged in one go and split in halves only where the
run conflicts, so a walk over hundreds of commits costs a few dozen merges.

The edit is followed as upstream moves it: a file renamed (``git diff -M``) is followed to its
new name; a function or class (the edit's scope) that a commit takes out of the file is looked
for in the files that commit wrote, by name and by how alike its body is, and the edit is
merged into it there (a split of a module is a move of each of its parts). A scope or a file
that a commit removed with no new home, or lines under the edit that a commit deleted, end
the walk with that commit named. Which scope an edit sits in, and where a scope went, are
placement's answers (:mod:`patchctl.patchsets.placement.scopes`), as apply's scopes are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from patchctl.patchsets.history.upstream import Commit, Upstream
from patchctl.patchsets.placement import scopes


@dataclass(frozen=True)
class State:
    """The edit at one upstream commit: upstream's file there and the file with the edit in it."""

    commit: str
    path: str
    upstream: str
    patched: str
    #: the innermost def or class holding the edit (Python), None at module level
    scope: str | None
    #: merges done to get here, and the moves followed ("a.py renamed to b.py in <commit>")
    merges: int = 0
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class Carried:
    """Where the walk ended: ``placed`` (``state`` is the edit at the target), ``removed``
    (``commit`` took away what the edit sits in), ``conflict`` (``commit``'s change and the edit
    overlap), or ``lost`` (the walk could not start: ``reason`` says why)."""

    status: str
    state: State
    commit: Commit | None = None
    #: where the removed code went, when a file of the removing commit holds it
    where: str | None = None
    reason: str = ""
    #: what ``commit`` removed: the file, the scope, or the lines the edit changes
    what: str = ""


def walk(up: Upstream, base: str, target: str, path: str, upstream: str, patched: str) -> Carried:
    """Carry the edit (``upstream`` -> ``patched`` in ``path`` at commit ``base``) to ``target``."""
    scope = scopes.enclosing(upstream, patched, path) if path.endswith(".py") else None
    state = State(base, path, upstream, patched, scope)
    if not up.is_ancestor(base, target):
        # verl cuts releases on their own branches: a base on one reaches the target through the
        # merge base, upstream's changes on the base's branch undone in one step
        fork = up.merge_base(base, target)
        if fork is None:
            return Carried("lost", state, reason="the base and the target share no history")
        back = _jump(up, state, fork)
        if isinstance(back, Carried):
            return back
        state = back
    while True:
        commits = up.touching(state.commit, target, state.path)
        if not commits:
            return Carried("placed", state)
        out = _segment(up, state, commits)
        if isinstance(out, Carried):
            return out
        state = out


def _jump(up: Upstream, state: State, to: str) -> State | Carried:
    new = up.read(to, state.path)
    if new is None or (state.scope and not scopes.has(new, state.scope, state.path)):
        return Carried("lost", state, reason=f"{state.path} is not at the merge base {to[:12]} as at the base")
    merged = up.merge(state.patched, state.upstream, new)
    if not merged.clean:
        return Carried(
            "conflict",
            state,
            up.info(to),
            reason="upstream changed the lines under the edit on the base's release branch",
        )
    return replace(state, commit=to, upstream=new, patched=merged.text, merges=state.merges + 1)


def _first(gone: Callable[[str], bool], commits: list[str]) -> int:
    """The index of the first commit for which ``gone`` holds (it holds from there on), else len."""
    if not commits or not gone(commits[-1]):
        return len(commits)
    lo, hi = -1, len(commits) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if gone(commits[mid]):
            hi = mid
        else:
            lo = mid
    return hi


def _segment(up: Upstream, state: State, commits: list[str]) -> State | Carried:
    """Merge up to the first commit that takes the file or the scope away, then follow that commit."""
    k = _first(lambda c: up.read(c, state.path) is None, commits)
    if state.scope is not None:
        scope = state.scope
        k = _first(lambda c: not scopes.has(up.read(c, state.path), scope, state.path), commits[:k])
    out = _blocks(up, state, commits[:k])
    if isinstance(out, Carried) or k == len(commits):
        return out
    return _moved(up, out, commits[k])


#: commits merged in one go before a run is split in halves. Runs start at the same commits for
#: every target on one line of history, so a matrix's versions share their runs, each merged once
BLOCK = 32


def _blocks(up: Upstream, state: State, commits: list[str]) -> State | Carried:
    """:func:`_run` over ``commits`` a block at a time, each block's outcome cached per upstream
    commit range and state (issue 38 req 8)."""
    for i in range(0, len(commits), BLOCK):
        key = (tuple(commits[i : i + BLOCK]), state)
        if key not in up.steps:
            up.steps[key] = _run(up, state, list(key[0]))
        out = up.steps[key]
        if isinstance(out, Carried):
            return out
        assert isinstance(out, State)
        state = out
    return state


def _run(up: Upstream, state: State, commits: list[str]) -> State | Carried:
    """Merge upstream's changes through ``commits`` at once; where that conflicts, in two halves."""
    if not commits:
        return state
    last = commits[-1]
    new = up.read(last, state.path)
    assert new is not None
    merged = up.merge(state.patched, state.upstream, new)
    if merged.clean:
        return replace(state, commit=last, upstream=new, patched=merged.text, merges=state.merges + 1)
    if len(commits) == 1:
        return _stuck(up, state, last, new)
    half = _run(up, state, commits[: len(commits) // 2])
    return half if isinstance(half, Carried) else _run(up, half, commits[len(commits) // 2 :])


def _stuck(up: Upstream, state: State, sha: str, new: str) -> Carried:
    """One commit whose change overlaps the edit: ``removed`` when it deleted every line under the
    edit (none rewritten in their place), else ``conflict`` (upstream rewrote them)."""
    under = _under(state.upstream, state.patched)
    deleted: set[int] = set()
    for op, i1, i2, _j1, _j2 in scopes.opcodes(scopes.lines(state.upstream), scopes.lines(new)):
        if op == "delete":
            deleted.update(range(i1 + 1, i2 + 1))
    if under and set(under) <= deleted:
        gone = "".join(scopes.lines(state.upstream)[i - 1] for i in under)
        inside = f" of {state.scope}" if state.scope else ""
        what = f"the lines{inside} the edit changes ({state.path}:{under[0]})"
        return Carried("removed", state, up.info(sha), _where(up, sha, gone), what=what)
    return Carried(
        "conflict",
        state,
        up.info(sha),
        reason=f"it rewrote the lines under the edit ({state.path}:{under[0] if under else 1})",
    )


def _under(upstream: str, patched: str) -> list[int]:
    """The upstream lines the edit replaces, or the two it inserts between (1-based)."""
    out: list[int] = []
    for r in scopes.edited(upstream, patched):
        out += range(r.first, r.last + 1) if r.inserted is None else [n for n in (r.first, r.first + 1) if n > 0]
    total = len(scopes.lines(upstream))
    return [n for n in out if n <= total]


def _moved(up: Upstream, state: State, sha: str) -> State | Carried:
    """Commit ``sha`` took the file (renamed or deleted) or the edit's scope away: follow it."""
    path, new = state.path, up.read(sha, state.path)
    moves = state.moves
    if new is None:
        renamed = up.renamed(sha, state.path)
        if renamed is not None:
            path, new = renamed, up.read(sha, renamed)
            moves += (f"{state.path} renamed to {renamed} in {sha[:12]}",)
    if new is not None and (state.scope is None or scopes.has(new, state.scope, path)):
        merged = up.merge(state.patched, state.upstream, new)
        if merged.clean:
            return replace(
                state, commit=sha, path=path, upstream=new, patched=merged.text, merges=state.merges + 1, moves=moves
            )
        return _stuck(up, replace(state, moves=moves), sha, new)
    if state.scope is None:
        return Carried("removed", state, up.info(sha), _where(up, sha, state.upstream), what=state.path)
    return _scope_moved(up, replace(state, moves=moves), sha, path, new)


def _scope_moved(up: Upstream, state: State, sha: str, path: str, new: str | None) -> State | Carried:
    """The edit's scope left ``path`` at ``sha``: merge the edit into the scope where ``sha`` put it."""
    assert state.scope is not None
    old = (scopes.table(state.upstream, state.path) or {}).get(state.scope)
    mine = (scopes.table(state.patched, state.path) or {}).get(state.scope)
    if old is None or mine is None:
        return Carried("conflict", state, up.info(sha), reason=f"{state.scope} cannot be read in the patched file")
    candidates = [(path, new)] if new is not None else []
    for status, _old, written in up.changes(sha):
        if status in ("A", "M", "R", "C") and written.endswith(".py") and written != path:
            text = up.read(sha, written)
            if text is not None:
                candidates.append((written, text))
    found = scopes.went(state.upstream, old, candidates, lambda: _before(up, sha, state, candidates))
    if found is None:
        gone = scopes.body(state.upstream, old)
        what = f"{state.scope} ({state.path})"
        return Carried("removed", state, up.info(sha), _where(up, sha, gone, skip=state.scope), what=what)
    where, s = found.path, found.scope
    text = next(t for p, t in candidates if p == where)
    merged = up.merge(scopes.body(state.patched, mine), scopes.body(state.upstream, old), scopes.body(text, s))
    moved = f"{state.path}:{state.scope} moved to {where}:{s.name} in {sha[:12]}{found.why}"
    if not merged.clean:
        went = replace(state, moves=(*state.moves, moved))
        return Carried("conflict", went, up.info(sha), f"{where}:{s.name}", "the edit does not merge into it there")
    return replace(
        state,
        commit=sha,
        path=where,
        upstream=text,
        patched=scopes.splice(text, s, scopes.indented(merged.text, s.indent)),
        scope=s.name,
        merges=state.merges + 1,
        moves=(*state.moves, moved),
    )


def _before(
    up: Upstream, sha: str, state: State, candidates: list[tuple[str, str]]
) -> list[tuple[str, str, frozenset[str]]]:
    """The candidates with the names each file defined before ``sha`` (a file ``sha`` added: none),
    so that a scope is taken for the edit's renamed one only where its name is new."""
    old_paths = {new: old for status, old, new in up.changes(sha) if status in ("M", "R", "C")}
    parent = up.parent(sha)
    out = []
    for path, text in candidates:
        if path == state.path or old_paths.get(path) == state.path:
            was: str | None = state.upstream
        else:
            was = up.read(parent, old_paths[path]) if parent is not None and path in old_paths else None
        out.append((path, text, frozenset(scopes.table(was, path) or {}) if was is not None else frozenset()))
    return out


def _where(up: Upstream, sha: str, gone: str, skip: str | None = None) -> str | None:
    """The file (and scope) of commit ``sha`` that holds most of the ``gone`` lines, when one
    holds at least half of them: where upstream put the code it took away."""
    wanted = {ln.strip() for ln in scopes.lines(gone) if ln.strip() and not ln.strip().startswith("#")}
    if not wanted:
        return None
    best: tuple[int, str] | None = None
    for status, _old, written in up.changes(sha):
        text = up.read(sha, written) if status in ("A", "M", "R", "C") else None
        if text is None:
            continue
        have = [i for i, ln in enumerate(scopes.lines(text), 1) if ln.strip() in wanted]
        found = len({scopes.lines(text)[i - 1].strip() for i in have})
        if have and found * 2 >= len(wanted) and (best is None or found > best[0]):
            holder = scopes.at_line(text, have[0], written) if written.endswith(".py") else None
            best = (found, f"{written}:{holder}" if holder and holder != skip else written)
    return best[1] if best else None
