"""The hash cache of ``migrate``'s host agent (``remote_agent``), also used at the source (``hashcache``).

Like the agent it is sent as source to each host (``verify_remote._agent_b64`` puts this file's
source before the agent's), so it needs only python3 >= 3.6 and its standard library and
never imports patchctl. A file's sha256 and tagged lines are reused while its size, mtime,
ctime and inode stay as they were when it was read: a no-change re-run then costs a ``stat``
per file, like rsync's quick check, not a read of every byte.
"""

import hashlib
import os
import stat

if False:  # typing only: the host's python3 may predate the typing module
    from re import Pattern  # noqa: F401 - named in type comments only
    from typing import Any, Optional  # noqa: F401 - named in type comments only

# here, where patchctl is installed; on a host the source of agent_io has just run before this one
try:  # noqa: SIM105 - not contextlib.suppress: its import (functools, collections) is no sealed answer's
    from patchctl.migrate.agent_io import loads, temp_file
except ImportError:
    pass

MAX_SCAN = 4 << 20  # tagged lines live in source files; larger files are data


def sha256(path):
    # type: (str) -> str
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def contents(path):
    # type: (str) -> bytes
    """A small file's bytes, read to its end through the bare file descriptor: for a file of a
    few kB, ``open()``'s buffered reader costs more than the read."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []  # type: list[bytes]
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


class Cache:
    """sha256 and tagged lines per path, reused only while the file's (size, mtime_ns, ctime_ns,
    inode) are those seen when it was read, as git's index does. ``utime`` can put back a size
    and an mtime but never a ctime: any write or rename sets ctime to the clock's now.

    A file whose ctime or mtime is not older than ``since`` (the file system's clock when this
    pass began, see ``fs_now``) is not remembered: it may change again within the same clock
    tick and keep all four values (git's "racily clean" entries). A cache that is damaged,
    of another format or tag rule, or that names an unsafe path is dropped whole: the files are
    read again. Lookups go by the caller's paths only, so an entry never names what is read.
    """

    def __init__(self, old, rule, since):
        # type: (dict[str, list[Any]], Any, int) -> None
        self.old, self.rule, self.since = old, rule, since
        #: what the cache file holds now (``old`` may come from a prescan instead)
        self.on_disk = old
        #: this pass's record of each regular file it met: [size, mtime, ctime, inode, sha256, lines]
        self.seen = {}  # type: dict[str, list[Any]]
        self.read = 0
        #: the tag rule compiled, for the tagged lines of a file read for its digest
        self.scanner = None if not rule else (compile_rule(rule[0]), [n.encode() for n in rule[1]])

    def record_for(self, rel, st):
        # type: (str, os.stat_result) -> list[Any]
        """This pass's record for the regular file ``rel``: the remembered one while its stat
        matches, else a fresh one (nothing known yet). A complete remembered record is shared,
        not copied (nothing is filled into it, so ``old`` stays as it was read): a no-change pass
        allocates nothing per file."""
        rec = self.seen.get(rel)
        if rec is None:
            hit = self.old.get(rel)
            if (
                hit is not None
                and hit[0] == st.st_size
                and hit[1] == st.st_mtime_ns
                and hit[2] == st.st_ctime_ns
                and hit[3] == st.st_ino
            ):
                rec = hit if hit[4] is not None and hit[5] is not None else list(hit)
            else:
                rec = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, None, None]
            self.seen[rel] = rec
        return rec

    def digest(self, rel, full, st):
        # type: (str, str, os.stat_result) -> str
        """The sha256 of the regular file ``rel``: remembered while its stat matches, else read
        (see ``fill``)."""
        rec = self.record_for(rel, st)
        if rec[4] is None:
            self.fill(rec, full)
        digest = rec[4]  # type: str
        return digest

    def fill(self, rec, full):
        # type: (list[Any], str) -> str
        """Read the file ``full`` into its record ``rec``: its sha256, and for a file small enough
        to carry tagged lines, those lines scanned from the same bytes (under the cache's own rule,
        the one its records are kept for), so that the tag walk does not open it again."""
        if rec[0] > MAX_SCAN:
            rec[4] = sha256(full)
        else:
            data = contents(full)
            rec[4] = hashlib.sha256(data).hexdigest()
            if rec[5] is None and self.scanner is not None:
                rec[5] = lines_of(data, *self.scanner)
        self.read += 1
        digest = rec[4]  # type: str
        return digest

    def tags(self, rel, full, rx, needles, st=None):
        # type: (str, str, Pattern[str], list[bytes], Optional[os.stat_result]) -> list[list[Any]]
        """The tagged lines of ``rel`` (a regular file of at most MAX_SCAN bytes; none otherwise);
        a file this pass has met already is not looked at again. ``st``: its ``lstat``, if taken."""
        rec = self.seen.get(rel)
        if rec is None:
            if st is None:
                try:
                    st = os.lstat(full)
                except OSError:
                    return []
            if not stat.S_ISREG(st.st_mode):
                return []
            rec = self.record_for(rel, st)
        if rec[0] > MAX_SCAN:
            return []
        if rec[5] is None:
            rec[5] = scan(full, rx, needles)
        lines = rec[5]  # type: list[list[Any]]
        return lines

    def document(self):
        # type: () -> dict[str, Any]
        """What the next pass may trust: the records of files older than this pass."""
        since = self.since
        files = {rel: rec for rel, rec in self.seen.items() if rec[1] < since and rec[2] < since}
        return {"format": 1, "rule": self.rule, "files": files}


def valid_record(rel, rec):
    # type: (str, Any) -> bool
    """Whether a cache entry is well formed and names a path that stays inside the root (checked
    for every entry of every load: kept to a few string tests)."""
    bounded = "/" + rel + "/"
    if "//" in bounded or "/./" in bounded or "/../" in bounded or type(rec) is not list or len(rec) != 6:
        return False
    digest, lines = rec[4], rec[5]
    if digest is not None and not (type(digest) is str and len(digest) == 64):
        return False
    return lines is None or (
        type(lines) is list
        and (
            not lines or all(type(x) is list and len(x) == 2 and type(x[0]) is int and type(x[1]) is str for x in lines)
        )
    )


def load_cache(path, rule, since, trust, limit):
    # type: (Optional[str], Any, int, bool, int) -> Cache
    """The cache kept in ``path``, or an empty one when ``trust`` is off (--checksum) or it cannot
    be used. ``limit``: the most bytes a cache for this tree may take (a bigger one is not read)."""
    old = {}  # type: dict[str, list[Any]]
    if trust and path is not None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                raw = f.read(limit + 1)
            doc = loads(raw.decode("utf-8")) if len(raw) <= limit else {}
            if isinstance(doc, dict) and doc.get("format") == 1 and doc.get("rule") == rule:
                files = doc.get("files")
                if isinstance(files, dict) and all(valid_record(k, v) for k, v in files.items()):
                    old = files
        except (OSError, ValueError):
            pass
    return Cache(old, rule, since)


def fs_now(folder):
    # type: (str) -> int
    """The file system's clock now: the mtime of a file made for it in ``folder`` (file times come
    from a coarser clock than ``time``, and from the server's on NFS)."""
    fd, tmp = temp_file(folder)
    try:
        return os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)
        os.unlink(tmp)


def compile_rule(pattern):
    # type: (str) -> Pattern[str]
    """The tag rule's pattern compiled; ``re`` imported only here, where a file is to be scanned
    (json's import brought it before: see agent_io)."""
    import re

    return re.compile(pattern)


def scan(full, rx, needles):
    # type: (str, Pattern[str], list[bytes]) -> list[list[Any]]
    """``[line, text]`` for each tagged line of one file (none in a binary or unreadable one)."""
    try:
        data = contents(full)
    except OSError:
        return []
    return lines_of(data, rx, needles)


def lines_of(data, rx, needles):
    # type: (bytes, Pattern[str], list[bytes]) -> list[list[Any]]
    """``[line, text]`` for each tagged line of a file's bytes (none in a binary file)."""
    if not any(n in data for n in needles) or b"\0" in data[:1024]:
        return []
    return [
        [n, line.rstrip()] for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1) if rx.search(line)
    ]
