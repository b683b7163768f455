"""The host's seal (``.patchctl/seal.json``): what a verified ``finish`` saw, so that a no-change
re-run is answered by one walk of the tree instead of a full check.

A ``finish`` asked to (``seal_as``: the source's opaque digest of what it asked the host to hold)
that ends with everything verified records ``tree``: a sha256 of the stat state (mode, size,
mtime, ctime, inode) of every entry of the walk it was judged by, and of ``extra``: the paths the
walk does not cover but the verdict depended on (manifest entries in skipped folders, the
generated files, the two records). Any change to a file sets its ctime to the clock's now, which
``utime`` cannot put back, so an unchanged stat state is an unchanged tree, as git's index trusts
it, provided no recorded stat is racily clean (see ``write_seal``). The next prescan that asks
(``"seal": true``) walks once and answers the seal's digest when the state is the same; the source
then need not send its request at all.

Like the agent it is sent as source to each host (``verify_remote._agent_b64`` puts it just before
the agent), so it needs only python3 >= 3.6 and its standard library and never imports patchctl.
"""

import hashlib
import operator
import os
import stat
import struct
import time

if False:  # typing only: the host's python3 may predate the typing module
    from typing import Any, Optional  # noqa: F401 - named in type comments only

# here, where patchctl is installed; on a host the source of the other agent files has just run
try:  # not contextlib.suppress: its import (functools, collections) is no sealed answer's
    from patchctl.migrate.agent_cache import MAX_SCAN, compile_rule, contents, fs_now, lines_of, sha256
    from patchctl.migrate.agent_files import TRANSFER_LOCK, inside, survey, write_atomic
    from patchctl.migrate.agent_io import dumps, loads
except ImportError:
    pass

SEAL = ".patchctl/seal.json"
MAX_SEAL = 16 << 20  # a bigger seal is not read (and not written): the host's file, anything may be there
SETTLE = 0.05  # seconds a finish waits for the file-system clock to pass its racy files' tick
_FIELDS = struct.Struct("<QqqqQ").pack  # mode, size, mtime_ns, ctime_ns (before 1970: negative), inode
_stat_key = operator.attrgetter("st_mode", "st_size", "st_mtime_ns", "st_ctime_ns", "st_ino")


def state_digest(stats, extras):
    # type: (dict[str, os.stat_result], dict[str, os.stat_result]) -> str
    """T: the sha256 of the walk's entries and then the extra paths', each part their paths (sorted)
    joined by NUL, two NULs, and the five stat fields of each, packed. No path is empty or holds a
    NUL, so each part ends at its first two NULs and its fields' length follows from its count: no
    tree's state reads as another's. (Packed, not formatted: a 100k tree's fields cost 0.06 s so,
    0.11 s as text; 0.035 s once ``survey`` gives each folder's files in order, as the sort does,
    so their stats are read in the order they were made, not scattered.)"""
    h = hashlib.sha256()
    for part in (stats, extras):
        paths = sorted(part)
        h.update("\0".join(paths).encode("utf-8", "surrogateescape") + b"\0\0")
        ordered = map(part.__getitem__, paths)
        try:
            fields = b"".join([_FIELDS(s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino) for s in ordered])
        except struct.error:  # a time past 2262 or before 1678 (utime sets one): not in 64 bits
            fields = b"".join([_clamped(part[rel]) for rel in paths])
        h.update(fields)
    return h.hexdigest()


def in_64_bits(ns):
    # type: (int) -> int
    """A file time clamped into 64 bits of nanoseconds (1678-2262), as the seals pack it: ``utime``
    can date a file 2300. A change from one such mtime to another keeps the clamped value, but not
    the ctime, which is the kernel's clock: still seen. (The source's walk packs the same way.)"""
    return min(max(ns, -(1 << 63)), (1 << 63) - 1)


def _clamped(s):
    # type: (os.stat_result) -> bytes
    """``_FIELDS`` of a stat whose mtime or ctime lies outside 64 bits of nanoseconds."""
    return _FIELDS(s.st_mode, s.st_size, in_64_bits(s.st_mtime_ns), in_64_bits(s.st_ctime_ns), s.st_ino)


def extra_state(root, extra):
    # type: (str, list[str]) -> Optional[dict[str, os.stat_result]]
    """The ``lstat`` of each extra path, or None when one is missing or could leave the root."""
    out = {}
    for rel in extra:
        full = inside(root, rel) if "\0" not in rel else None
        if full is None:
            return None
        try:
            out[rel] = os.lstat(full)
        except OSError:
            return None
    return out


def read_seal(root):
    # type: (str) -> Optional[dict[str, Any]]
    """The seal, or None where there is none that could be used: a link, a FIFO or a folder there,
    an oversized, damaged or foreign file (opened without following a link or blocking on a FIFO)."""
    path = inside(root, SEAL)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(MAX_SEAL + 1)
        doc = loads(raw.decode("utf-8")) if len(raw) <= MAX_SEAL else None
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(doc, dict) or doc.get("format") != 1 or type(doc.get("verified")) is not str:
        return None
    tree, extra = doc.get("tree"), doc.get("extra")
    if type(tree) is not str or len(tree) != 64 or type(extra) is not list:
        return None
    return doc if all(type(p) is str for p in extra) else None


def sealed_answer(order):
    # type: (dict[str, Any]) -> tuple[Optional[str], int, Optional[dict[str, os.stat_result]]]
    """A prescan's answer to ``"seal": true``: the seal's digest when one fresh walk finds the tree
    in the sealed state, else None; with the file-system clock taken before that walk and the walk
    itself, for the prescan to go on from (both 0 / None when there was no usable seal: nothing
    walked). --checksum (``rehash``) asks for every byte read, so it is never answered by a seal;
    nor is a tree that a transfer (rsync, a finish) is writing into right now."""
    root = order["root"]
    doc = None if order.get("rehash") or not os.path.isdir(root) else read_seal(root)
    if doc is None or _transfer_running(root):
        return None, 0, None
    since = fs_now(os.path.join(root, ".patchctl"))  # read_seal found a file in it: a folder inside the root
    walk = survey(root)
    extras = extra_state(root, doc["extra"])
    same = extras is not None and state_digest(walk, extras) == doc["tree"]
    return (doc["verified"] if same else None), since, walk


def _transfer_running(root):
    # type: (str) -> bool
    """Whether someone holds the root's transfer lock (see agent_files.hold_transfer_lock): a probe
    with a shared lock, let go at once, never a wait."""
    import fcntl

    path = inside(root, TRANSFER_LOCK)
    try:
        fd = os.open(path or "", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # no lock file yet, no transfer ever; or a .patchctl that leads out: not sealed
        return path is None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def unseal(root):
    # type: (str) -> None
    """Remove the seal (a finish begins with this: only one that ends verified writes one)."""
    path = inside(root, SEAL)
    if path is not None:
        # a folder there reads as no seal (see read_seal) and is never replaced by one: left as it is
        try:  # noqa: SIM105 - see the imports above: no contextlib
            os.unlink(path)
        except (FileNotFoundError, IsADirectoryError):
            pass


def write_seal(root, req, stats, since, here, written):
    # type: (str, dict[str, Any], dict[str, os.stat_result], int, set[tuple[str, int, str]], dict[str, bytes]) -> bool
    """Seal a verified finish as ``req["seal_as"]``; False (and no seal) where that cannot be done.

    ``stats``: the finish's walk; ``since``: the file-system clock at its start; ``here``: the
    tagged lines it found; ``written``: the records' paths and the bytes it put there. A stat whose
    ctime or mtime is not older than ``since`` is racily clean: its file may have changed again in
    the same clock tick and kept every stat field. So the finish waits (at most SETTLE) until the
    clock has passed those files' ctime (the time of their last change: an mtime is whatever
    ``utime`` put there), and then confirms each again, by its stat and its bytes; any change after
    that gives it a new ctime."""
    path = inside(root, SEAL)
    rendered = req.get("rendered", {})
    extra = sorted(set([e[0] for e in req["manifest"] if e[0] not in stats]).union(rendered, written))
    extras = extra_state(root, extra)
    if path is None or extras is None:
        return False
    racy = [
        (rel, st)
        for part in (stats, extras)
        for rel, st in part.items()
        if st.st_mtime_ns >= since or st.st_ctime_ns >= since
    ]
    if racy:
        deadline, last = time.monotonic() + SETTLE, max(st.st_ctime_ns for _, st in racy)
        while fs_now(os.path.dirname(path)) <= last:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        lines = {}  # type: dict[str, list[list[Any]]]
        for rel, n, text in sorted(here):
            lines.setdefault(rel, []).append([n, text])
        facts = ({e[0]: e for e in req["manifest"]}, rendered, written, lines, req["tags"])
        if not all(_confirm(root, rel, st, rel in stats, facts) for rel, st in racy):
            return False
    doc = {"format": 1, "verified": req["seal_as"], "tree": state_digest(stats, extras), "extra": extra}
    data = dumps(doc).encode("utf-8")
    if len(data) > MAX_SEAL:
        return False
    try:
        write_atomic(path, data)
    except OSError:  # a folder in the seal's place: no seal, and the next run checks in full
        return False
    return True


def _confirm(root, rel, st, walked, facts):
    # type: (str, str, os.stat_result, bool, tuple[Any, ...]) -> bool
    """Whether the racy ``rel`` still has the stat ``st`` the verdict was given for and what the
    verdict found there: a record's bytes, a generated file's text, a manifest entry's digest or
    link target, the tagged lines the walk's files gave."""
    manifest, rendered, written, lines, tags = facts
    full = os.path.join(root, rel)  # the walk's paths and the extras all came through inside()
    try:
        if _stat_key(os.lstat(full)) != _stat_key(st):
            return False
        if rel in written or rel in rendered:
            expected = written[rel] if rel in written else rendered[rel].encode("utf-8")  # type: bytes
            return contents(full) == expected
        entry = manifest.get(rel)  # type: Optional[list[Any]]
        if entry is not None and entry[1] == "l":
            return stat.S_ISLNK(st.st_mode) and os.readlink(full) == entry[2]
        if not stat.S_ISREG(st.st_mode):
            return entry is None  # a link, FIFO or socket the source does not have: its stat is all
        if st.st_size > MAX_SCAN:  # a data file: no tagged lines
            return entry is None or sha256(full) == entry[2]
        data = contents(full)
    except OSError:
        return False
    if entry is not None and hashlib.sha256(data).hexdigest() != entry[2]:
        return False
    if not walked:  # a manifest entry in a skipped folder: its digest is all the verdict used
        return True
    found = lines_of(data, compile_rule(tags["pattern"]), [w.encode() for w in tags["needles"]])
    return bool(found == lines.get(rel, []))
