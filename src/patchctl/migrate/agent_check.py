"""The check of ``migrate``'s host agent (``remote_agent``): how a host's file differs from its
manifest entry, and the host's tagged lines (also the source's: ``verify_remote.tags_request``
scans them with this same code, so both sides apply one rule).

Like the agent it is sent as source to each host (``verify_remote._agent_b64`` puts it between
the file operations and the agent), so it needs only python3 >= 3.6 and its standard library and
never imports patchctl.
"""

import os
import stat

if False:  # typing only: the host's python3 may predate the typing module
    from collections.abc import Iterable  # noqa: F401 - named in type comments only
    from typing import Any, Optional  # noqa: F401 - named in type comments only

# here, where patchctl is installed; on a host the source of agent_cache and agent_files has just
# run before this one
try:  # not contextlib.suppress: its import (functools, collections) is no sealed answer's
    from patchctl.migrate.agent_cache import Cache, compile_rule
    from patchctl.migrate.agent_files import inside
except ImportError:
    pass


def problem(root, entry, cache):
    # type: (str, list[Any], Cache) -> Optional[str]
    """Why the host's copy of a manifest entry differs, or None when it matches."""
    path, kind, digest, executable = entry
    full = inside(root, path)
    if full is None:
        return "unsafe path"
    if kind == "l":
        if not os.path.islink(full):
            return "missing" if not os.path.lexists(full) else "not a symbolic link"
        return None if os.readlink(full) == digest else "link target differs"
    try:
        st = os.lstat(full)
    except OSError:
        return "missing"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return file_problem(path, full, st, digest, executable, cache)


def file_problem(rel, full, st, digest, executable, cache):
    # type: (str, str, os.stat_result, str, bool, Cache) -> Optional[str]
    """Why the regular file ``rel`` (at ``full``, whose ``lstat`` is ``st``) differs from its
    manifest entry's digest and executable bit, or None when it matches."""
    if cache.digest(rel, full, st) != digest:
        return "content differs (sha256)"
    if bool(st.st_mode & 0o100) != bool(executable):
        return "executable bit differs"
    return None


def problems(root, manifest, stats, cache):
    # type: (str, list[list[Any]], dict[str, os.stat_result], Cache) -> list[list[str]]
    """``[path, why]`` for each manifest entry that differs on the host. A regular file the walk
    met (``stats``, see ``survey``: taken after the request arrived) is judged by that one stat;
    anything else (links, files in folders the walk leaves out, missing or unsafe paths) by
    ``problem``, which looks again."""
    base = os.path.join(root, "")
    out = []
    for entry in manifest:
        st = stats.get(entry[0]) if entry[1] == "f" else None
        if st is None or not stat.S_ISREG(st.st_mode):
            why = problem(root, entry, cache)
        else:
            why = file_problem(entry[0], base + entry[0], st, entry[2], entry[3], cache)
        if why:
            out.append([entry[0], why])
    return out


def tags_here(root, stats, leave_out, rule, cache):
    # type: (str, dict[str, os.stat_result], Iterable[str], list[Any], Cache) -> set[tuple[str, int, str]]
    """The tagged lines of the regular files the walk met (``stats``), but ``leave_out``."""
    rx, words, base = compile_rule(rule[0]), [n.encode() for n in rule[1]], os.path.join(root, "")
    out = set()  # type: set[tuple[str, int, str]]
    for rel, st in stats.items():
        if stat.S_ISREG(st.st_mode) and rel not in leave_out:
            lines = cache.tags(rel, base + rel, rx, words, st)
            if lines:  # most files have none: no generator made for them
                out.update((rel, n, text) for n, text in lines)
    return out


def tag_lines(root, paths, pattern, needles, cache=None):
    # type: (str, Iterable[str], str, list[str], Optional[Cache]) -> list[list[Any]]
    """``[path, line, text]`` for each line whose comment carries a tag (as ``patchctl verify``);
    regular files of at most MAX_SCAN bytes only: tagged lines live in source files."""
    rx = compile_rule(pattern)
    words = [n.encode() for n in needles]
    cache = cache or Cache({}, None, 0)
    out = []  # type: list[list[Any]]
    base = os.path.join(root, "")
    for rel in paths:
        out.extend([rel, n, text] for n, text in cache.tags(rel, base + rel, rx, words))
    return out
