"""The few git questions patchctl asks, answered by the git CLI that no repository can make run a program.

A repository handed in (FORK, a directory BASE, ``--repo``, a ``--target`` checkout) is data, not
code (issue 41). Its own config can name programs that git starts as a side effect of a read:
``core.fsmonitor`` on every index refresh, hooks on checkout and commit, ``diff.external`` and
``diff.X.textconv`` on a diff, the clean/smudge/process filter that ``.gitattributes`` or
``.git/info/attributes`` assigns on status, add and archive, ``core.sshCommand`` or
``remote.X.uploadpack`` when a partial clone fetches a missing blob. Every git command is
therefore built by :func:`command`, the one place that adds the overrides below, and
:mod:`patchctl.proc` refuses a git argv that did not come from here. The user's own config
(system, global, ``-c`` in ``GIT_CONFIG_PARAMETERS``) is trusted: git-lfs set up in
``~/.gitconfig`` still works; the repository's (local, worktree, and the files they include) is
not. Hooks stay off on the user's own checkout too: ``apply --commit`` commits patchctl's files,
not the user's.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, NoReturn

from patchctl import proc
from patchctl.errors import BranchExists, CommandFailed, CommitFailed, PatchctlError, ToolMissing

#: ``-c`` overrides every git command carries, each closing a way repository config runs a program
_FIXED = (
    *proc.GIT_FIRST,  # core.hooksPath=/dev/null: no hook runs, from .git/hooks or anywhere else
    "-c",
    "core.fsmonitor=false",  # a program git would start on every refresh of the index
    "-c",
    "diff.external=",  # empty: no external diff program (diff.X.command is switched off per driver)
    "-c",
    # no transport at all, so neither core.sshCommand, remote.X.uploadpack, an ext:: URL nor a remote
    # helper is ever started: a partial clone's lazy fetch of a missing blob would start them
    "protocol.allow=never",
    "-c",
    "submodule.recurse=false",  # a submodule's config is not listed below; git must not go in
    "-c",
    "commit.gpgSign=false",  # gpg.program is not run to sign patchctl's commits,
    "-c",
    "log.showSignature=false",  # nor to check a signature
    "-c",
    "core.editor=false",  # nothing patchctl runs opens an editor; should one, it fails instead
    "-c",
    "sequence.editor=false",
    "-c",
    "core.quotePath=false",  # names as they are (every listing is read with -z anyway)
)

#: options put right after a subcommand: what its own flags switch off (a submodule's status runs
#: git inside it, where its own filters apply; ``=dirty`` still reports a moved submodule commit)
_PER_COMMAND = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty"),
    "log": ("--no-ext-diff", "--no-textconv", "--no-show-signature"),
    "status": ("--ignore-submodules=dirty",),
    "grep": ("--no-textconv",),
}

#: subcommands that never start a driver of ``_DRIVERS``: they read refs and paths, never a blob's
#: content, and fetch nothing. They go without the per-repository ``git config --list`` (a process of
#: its own), which was a third of the git time of a ``verify`` (``rev-parse`` twice, to find the tree)
_NO_DRIVERS = frozenset({"rev-parse"})

#: config scopes a repository brings along: its .git/config (and the files it includes), config.worktree
_UNTRUSTED = frozenset({"local", "worktree"})

#: (section, variable) of a named driver that holds a program -> the value that switches it off.
#: An empty clean/smudge/process is no filter (git 2.39 convert.c: ``if (cmd && *cmd)``); an empty
#: diff command or textconv is never consulted under --no-ext-diff/--no-textconv and fails, rather
#: than runs anything, where a command would; a required filter switched off would fail every read.
_DRIVERS = {
    ("filter", "clean"): "",
    ("filter", "smudge"): "",
    ("filter", "process"): "",
    ("filter", "required"): "false",
    ("diff", "command"): "",
    ("diff", "textconv"): "",
    ("merge", "driver"): "",
    ("protocol", "allow"): "never",
}


class UntrustedConfig(PatchctlError):
    """A driver whose name ``-c`` cannot spell (it splits at the first ``=``), so it cannot be switched off."""

    def __init__(self, repo: Path, key: str) -> None:
        self.repo, self.key = repo, key
        super().__init__(
            f"{repo}: its git config sets {key!r}, a program patchctl cannot switch off (the driver's name "
            "holds '='); remove or rename it in the repository's .git/config"
        )


_cache: dict[tuple[str, tuple[int, ...]], tuple[str, ...]] = {}
_cache_lock = threading.Lock()


def command(repo: Path, *args: str) -> list[str]:
    """``git -C repo ARGS`` with every override: the only way patchctl builds a git command."""
    at = 0
    while at < len(args) and args[at] == "-c":  # a caller's own ``-c k=v`` before the subcommand
        at += 2
    before, sub, rest = args[:at], args[at : at + 1], args[at + 1 :]
    more = _PER_COMMAND.get(sub[0], ()) if sub else ()
    drivers = () if sub and sub[0] in _NO_DRIVERS else _overrides(repo)
    return ["git", *_FIXED, *drivers, *before, "-C", str(repo), *sub, *more, *rest]


def run(repo: Path, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """:func:`proc.run` of :func:`command`."""
    return proc.run(command(repo, *args), check=check, input=input)


def spawn(
    repo: Path, *args: str, stdin: proc.Stream = subprocess.DEVNULL, stderr: proc.Stream = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """:func:`proc.spawn` of :func:`command`, its output piped (bytes): for output read as it
    comes, or names that need not be UTF-8."""
    return proc.spawn(command(repo, *args), stdin=stdin, stdout=subprocess.PIPE, stderr=stderr)


def _overrides(repo: Path) -> tuple[str, ...]:
    """``-c`` pairs switching off every driver the repository's own config defines (cached per
    repository and its .git/config's state: one ``git config`` per repository, not per command)."""
    key = (str(repo), _stamp(repo))
    with _cache_lock:
        found = _cache.get(key)
        if found is None:
            found = _cache[key] = _untrusted_drivers(repo)
    return found


def _stamp(repo: Path) -> tuple[int, ...]:
    """The state of ``repo/.git/config`` (a bare repository's ``config``), so that a config
    rewritten since is listed again (a test does; a command seldom lives that long)."""
    out: tuple[int, ...] = ()
    for path in (repo / ".git" / "config", repo / "config"):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out += (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return out


def _untrusted_drivers(repo: Path) -> tuple[str, ...]:
    done = proc.run(["git", *_FIXED, "-C", str(repo), "config", "--list", "--show-scope", "-z"], check=False)
    if done.returncode != 0:  # no such folder, or a config git cannot read: every command fails the same way
        return ()
    fields = done.stdout.split("\0")
    trusted: dict[str, str] = {}
    untrusted: dict[str, str] = {}
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        name, _, value = entry.partition("\n")
        section, _, rest = name.partition(".")
        driver, _, variable = rest.rpartition(".")
        if not driver or (section.lower(), variable.lower()) not in _DRIVERS:
            continue
        if scope in _UNTRUSTED:
            untrusted[name] = value
        else:
            trusted[name] = value
    out: list[str] = []
    for name, value in untrusted.items():
        if trusted.get(name) == value:
            continue  # the same program the user's own config names: trusted (git-lfs set up twice)
        if "=" in name:
            raise UntrustedConfig(repo, name)
        section, _, rest = name.partition(".")
        off = trusted.get(name, _DRIVERS[(section.lower(), rest.rpartition(".")[2].lower())])
        out += ["-c", f"{name}={off}"]
    return tuple(out)


def toplevel(path: Path) -> Path | None:
    """The work tree root containing ``path``, or None outside a repository (or without git)."""
    try:
        done = run(path, "rev-parse", "--show-toplevel", check=False)
    except ToolMissing:
        return None
    if done.returncode != 0:
        return None
    return Path(done.stdout.strip())


def top_and_head(path: Path) -> tuple[Path | None, str | None]:
    """:func:`toplevel` and :func:`head` of ``path`` in one git process (each costs a fork and
    git's start, ~5 ms): git prints the top, then HEAD, and exits 1 when HEAD is unborn."""
    try:
        done = run(path, "rev-parse", "--show-toplevel", "--verify", "-q", "HEAD", check=False)
    except ToolMissing:
        return None, None
    if done.returncode not in (0, 1) or not done.stdout.strip():
        return None, None
    if done.returncode == 1:
        return Path(done.stdout.strip()), None
    top, _, commit = done.stdout.rstrip("\n").rpartition("\n")  # the top may hold a newline, HEAD never
    return Path(top.strip()), commit.strip() or None


def is_worktree_root(path: Path) -> bool:
    """Whether ``path`` is the top of a git work tree (not a folder inside one, not outside git)."""
    top = toplevel(path)
    return top is not None and top.resolve() == path.resolve()


def worktree_files(root: Path) -> dict[str, bool]:
    """path -> tracked, for the files git sees: tracked ones plus untracked ones it does not ignore.

    Git's answer, not rsync's or a walk's: gitignore rules (anchoring, negation, nested files)
    are git's to apply. Tracked files deleted from the work tree are still listed.
    """
    out: dict[str, bool] = {}
    for item in _ls_files(root, "-t", "--cached", "--others", "--exclude-standard"):
        if len(item) > 2 and not item.endswith("/"):  # "dir/": an untracked nested repository
            out[item[2:]] = out.get(item[2:], False) or item[0] != "?"
    return out


def head(root: Path) -> str | None:
    done = run(root, "rev-parse", "--verify", "-q", "HEAD", check=False)
    return done.stdout.strip() or None


def dirty(root: Path, paths: Iterable[str]) -> list[str]:
    """Those of ``paths`` (relative to ``root``) whose content differs from HEAD or the index.

    Untracked files count as dirty too: overwriting them would lose work git cannot restore.
    """
    wanted = sorted(set(paths))
    if not wanted:
        return []
    return sorted(_status_names(status_porcelain(root, *wanted)))


def _status_names(porcelain: str) -> list[str]:
    """The paths of ``git status --porcelain=v1 -z`` output (a rename's new name only)."""
    out: list[str] = []
    entries = porcelain.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if not entry:
            continue
        code, name = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the rename source follows as its own entry
        out.append(name)
    return out


def _ident(root: Path) -> list[str]:
    """Commit options: the user's identity when git has one, else a neutral patchctl one."""
    return [] if has_identity(root) else ["-c", "user.name=patchctl", "-c", "user.email=patchctl@localhost"]


def init_with_commit(root: Path, message: str) -> str:
    """Make ``root`` a repository whose first commit holds the whole tree; return its sha."""
    run(root, "init", "-q", "-b", "main")
    ident = _ident(root)
    run(root, "add", "-A")
    run(root, *ident, "commit", "-q", "-m", message)
    sha = head(root)
    assert sha is not None
    return sha


def branch_exists(root: Path, name: str) -> bool:
    done = run(root, "rev-parse", "--verify", "-q", f"refs/heads/{name}", check=False)
    return done.returncode == 0


def commit_on_branch(root: Path, branch: str, paths: list[str], message: str) -> str:
    """Create ``branch`` at HEAD, switch to it and commit exactly ``paths``; return the sha.

    No hook runs (see the module). When the commit fails (``git add`` refuses a path git ignores,
    say) the branch is removed again and the previous branch checked out, so the caller can put
    the files back and leave the repository as it was.
    """
    if branch_exists(root, branch):
        raise BranchExists(root, branch)
    previous = run(root, "symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    run(root, "checkout", "-q", "-b", branch)
    try:
        run(root, "add", "-A", "--", *paths)
        run(root, "commit", "-q", "-m", message, "--", *paths)
    except BaseException as exc:
        run(root, "reset", "-q", "--", *paths, check=False)
        run(root, "checkout", "-q", previous or "-", check=False)
        run(root, "branch", "-q", "-D", branch, check=False)
        if isinstance(exc, CommandFailed):
            raise CommitFailed(root, branch, exc.stderr) from None
        raise
    sha = head(root)
    assert sha is not None
    return sha


def has_committer(root: Path) -> bool:
    """Whether git can name an author and committer here (config, environment or host name)."""
    return all(
        run(root, "var", var, check=False).returncode == 0 for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    )


def has_identity(root: Path) -> bool:
    done = run(root, "config", "user.email", check=False)
    return bool(done.stdout.strip())


def diff_file(root: Path, rel: str) -> str:
    """``git diff HEAD -- rel``: how a file differs from its last commit ("" when it cannot tell)."""
    done = run(root, "diff", "--no-color", "HEAD", "--", rel, check=False)
    return done.stdout if done.returncode == 0 else ""


def commit_of(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` names in ``repo`` (a branch, tag, sha or ``HEAD~2``), None when none."""
    done = run(repo, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return done.stdout.strip() or None if done.returncode == 0 else None


def has_file_at(repo: Path, commit: str, rel: str) -> bool:
    return run(repo, "cat-file", "-e", f"{commit}:{rel}", check=False).returncode == 0


class UnsafeTree(PatchctlError):
    """A commit whose tree names a path git itself would never check out."""

    def __init__(self, repo: Path, commit: str, rel: str) -> None:
        self.repo, self.commit, self.rel = repo, commit, rel
        super().__init__(
            f"{repo}: commit {commit[:12]} holds the path {rel!r}, which climbs out of the tree or into .git; "
            "patchctl reads no such tree: name another commit"
        )


class MissingBlob(PatchctlError):
    """A blob the commit names that the repository lacks: a partial clone's, never fetched here."""

    def __init__(self, repo: Path, commit: str, rel: str) -> None:
        self.repo, self.commit, self.rel = repo, commit, rel
        super().__init__(
            f"{repo}: {rel} at commit {commit[:12]} is not in the repository (a partial clone, whose "
            f"missing blobs patchctl never lets git fetch); fetch them first: git -C {repo} fetch --refetch"
        )


#: how much of a blob is held in memory at a time while it is written out
_CHUNK = 1 << 20


def export(repo: Path, commit: str, dest: Path) -> Path:
    """Write the tree of ``commit`` into the new folder ``dest`` and return it, as the blobs are
    stored: ``git cat-file --batch`` applies no filter, unlike ``git archive``, which runs the
    smudge filter a hostile ``.gitattributes`` names (and drops ``export-ignore`` files). The work
    tree and index are not touched. A submodule is an empty folder, as in an archive; a symlink
    is made only where it stays inside the tree (one leading out would hand its target to
    whatever reads the tree next), after every file, so that no file is written through one.
    """
    dest.mkdir(parents=True)
    blobs, links = [], []
    for mode, kind, sha, rel in _tree(repo, commit):
        if kind == "commit":
            (dest / rel).mkdir(parents=True, exist_ok=True)
        elif kind == "blob":
            blobs.append((int(mode, 8), sha, rel))
    import tempfile  # here: the start-up of every command that reads a tree paid for it

    with tempfile.TemporaryFile() as errors:
        reader = spawn(repo, "cat-file", "--batch", stdin=subprocess.PIPE, stderr=errors)
        assert reader.stdin is not None and reader.stdout is not None
        feeder = threading.Thread(target=_feed, args=(reader.stdin, [sha for _, sha, _ in blobs]), daemon=True)
        feeder.start()
        try:
            for bits, _sha, rel in blobs:
                header = reader.stdout.readline().split()
                if len(header) != 3 or header[1] != b"blob":
                    if header[1:] != [b"missing"]:  # git died: no more output, so waiting cannot block
                        reader.wait()
                    errors.seek(0)
                    _gone(repo, commit, rel, header[1:] == [b"missing"], os.fsdecode(errors.read()))
                size = int(header[2])
                if bits & 0o170000 == 0o120000:
                    links.append((rel, reader.stdout.read(size)))
                else:
                    _write(dest / rel, reader.stdout, size, 0o755 if bits & 0o111 else 0o644)
                reader.stdout.read(1)  # the line break after each blob
        finally:
            reader.kill()
            reader.wait()
            feeder.join()
    _links(dest, links)
    return dest


def _tree(repo: Path, commit: str) -> Iterator[tuple[str, str, str, str]]:
    """(mode, type, sha, path) of every entry under ``commit``'s tree, each path checked."""
    child = spawn(repo, "ls-tree", "-r", "-z", "--full-tree", commit, stderr=subprocess.PIPE)
    out, err = child.communicate()
    if child.returncode != 0:
        raise CommandFailed(["git", "-C", str(repo), "ls-tree", "-r", commit], child.returncode, os.fsdecode(err))
    for entry in out.split(b"\0"):
        if not entry:
            continue
        info, _, name = entry.partition(b"\t")
        mode, kind, sha = os.fsdecode(info).split()
        rel = os.fsdecode(name)
        parts = rel.split("/")
        if rel.startswith("/") or any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
            raise UnsafeTree(repo, commit, rel)
        yield mode, kind, sha, rel


def _feed(stdin: IO[bytes], shas: list[str]) -> None:
    try:
        for sha in shas:
            stdin.write(sha.encode() + b"\n")
        stdin.close()
    except (BrokenPipeError, ValueError):  # the reader was stopped early: nothing left to ask
        pass


def _gone(repo: Path, commit: str, rel: str, missing: bool, stderr: str) -> NoReturn:
    """Why ``cat-file --batch`` gave no blob for ``rel``: missing (it says so, or dies asking a
    partial clone's remote, which it may not reach), or git's own error."""
    if missing or "promisor" in stderr:
        raise MissingBlob(repo, commit, rel)
    raise CommandFailed(["git", "-C", str(repo), "cat-file", "--batch"], 128, stderr)


def _write(path: Path, source: IO[bytes], size: int, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        while size > 0:
            chunk = source.read(min(size, _CHUNK))
            if not chunk:
                raise CommandFailed(["git", "cat-file", "--batch"], 128, f"{path.name}: the blob ended early")
            f.write(chunk)
            size -= len(chunk)
        os.fchmod(f.fileno(), mode)


def _links(dest: Path, links: list[tuple[str, bytes]]) -> None:
    """The symlinks, each where it leads to a place inside ``dest`` once all are made (else none).

    Judged on the finished tree, not on each target's text: ``r -> .`` then ``x -> r/..`` reads
    as inside but lands above ``dest``. A link dropped can only make another dangle, so the
    passes end when one drops none.
    """
    root = os.path.realpath(dest)
    made = []
    for rel, target in links:
        text = os.fsdecode(target)
        if not os.path.isabs(text):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(text, dest / rel)
            made.append(dest / rel)
    while True:
        out = [p for p in made if os.path.commonpath([root, os.path.realpath(p)]) != root]
        if not out:
            return
        for p in out:
            p.unlink()
            made.remove(p)


def ignored_files(root: Path) -> list[str]:
    """Untracked files git ignores under ``root`` (build outputs, but also a user's ignored edits)."""
    return [n for n in _ls_files(root, "--others", "--ignored", "--exclude-standard") if n]


def _ls_files(root: Path, *options: str) -> list[str]:
    """``git ls-files`` NUL-separated and unquoted, so every name (spaces, line breaks, non-ASCII)
    comes back exactly as it is on disk; the last item is the empty string after the final NUL."""
    done = run(root, "ls-files", "-z", *options)
    return done.stdout.split("\0")


def ignore_rules(root: Path, names: list[str]) -> dict[str, str]:
    """Each of ``names`` -> the rule that makes git ignore it, as ``SOURCE:LINE: PATTERN``."""
    if not names:
        return {}
    done = run(root, "check-ignore", "--no-index", "-v", "-z", "--stdin", input="\0".join(names) + "\0", check=False)
    fields = done.stdout.split("\0")
    return {
        name: f"{source}:{line}: {pattern}"
        for source, line, pattern, name in zip(fields[0::4], fields[1::4], fields[2::4], fields[3::4], strict=False)
    }


def status_porcelain(root: Path, *paths: str) -> str:
    """``git status --porcelain=v1 -z`` over ``paths`` (all when none), untracked files listed."""
    return run(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *(paths or (".",))).stdout


def changed(root: Path, untracked: bool = True) -> list[str]:
    """Every path under ``root`` that differs from HEAD (modified, added, untracked not ignored):
    the tree is HEAD plus these, which is what ``migrate`` records as a host's provenance.
    ``untracked=False`` leaves out untracked files (a caller that listed them already spares
    git a second walk of the tree)."""
    if untracked:
        return dirty(root, ["."])
    done = run(root, "status", "--porcelain=v1", "-z", "--untracked-files=no")
    return sorted(_status_names(done.stdout))
