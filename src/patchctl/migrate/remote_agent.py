"""patchctl's agent on a cluster host: one JSON request on stdin, one JSON reply on stdout.

It is sent as source on each call (``python3 -c``), so nothing is installed on the host; it
needs only python3 >= 3.6 and its standard library, and never imports patchctl. Actions:

- ``plan``: read-only, for ``--dry-run``: which files differ, what would be deleted, which
  generated files would change.
- ``finish``: create the root, apply the delete guard (above ``max_delete`` nothing at all is
  written), write the generated files, delete (within the root), check every manifest entry's
  sha256 and the tagged-line inventory, and record the manifest and the provenance under
  ``.patchctl/``. migrate runs it before rsync (when it finds nothing to send, that was the
  whole run) and again after rsync to verify what arrived.

A file's sha256 and tagged lines are remembered in ``.patchctl/hashes.json`` (see ``Cache``) and
reused while its size, mtime, ctime and inode stay as they were when it was read: a no-change
re-run then costs a ``stat`` per file, like rsync's quick check, not a read of every byte.

Deletions only ever touch files an earlier migrate placed (listed in ``.patchctl/manifest.json``),
so outputs the host made itself (checkpoints, logs) are never at risk.
"""

import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import threading
import time

if False:  # typing only: the host's python3 may predate the typing module
    from typing import Any, Dict, Iterable, List, Optional, Pattern, Tuple  # noqa: F401

MANIFEST = ".patchctl/manifest.json"
PROVENANCE = ".patchctl/provenance.json"
CACHE = ".patchctl/hashes.json"
TRANSFER_LOCK = ".patchctl/transfer.lock"  # remote/lock_agent.py's TRANSFER: rsync holds it too
SKIP_DIRS = {".git", ".hg", ".patchctl", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache",
             ".rsync-partial", ".~tmp~", "checkpoints", "outputs", "logs", "wandb"}
MAX_SCAN = 4 << 20  # tagged lines live in source files; larger files are data


_INSIDE = {}  # type: Dict[Tuple[str, str], bool]


def _folder_inside(root, folder):
    # type: (str, str) -> bool
    """Whether the folder ``folder`` (relative, "" for the root) stays inside ``root`` once
    symbolic links are followed, remembered: every file of a folder shares its answer, and a
    check of 100k files must not cost 100k realpath calls."""
    key = (root, folder)
    if key not in _INSIDE:
        if folder and any(p in ("", ".", "..") for p in folder.split("/")):
            _INSIDE[key] = False
        else:
            real_root = os.path.realpath(root)
            parent = os.path.realpath(os.path.join(root, folder)) if folder else real_root
            _INSIDE[key] = parent == real_root or parent.startswith(real_root + os.sep)
    return _INSIDE[key]


def inside(root, rel):
    # type: (str, str) -> Optional[str]
    """The absolute path of ``rel`` under ``root``, or None if it could leave the root."""
    folder, _, name = rel.rpartition("/")
    if rel.startswith("/") or name in ("", ".", "..") or not _folder_inside(root, folder):
        return None
    return os.path.join(root, rel)


def sha256(path):
    # type: (str) -> str
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Cache(object):
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
        # type: (Dict[str, List[Any]], Any, int) -> None
        self.old, self.rule, self.since = old, rule, since
        #: what the cache file holds now (``old`` may come from a prescan instead)
        self.on_disk = old
        #: this pass's record of each regular file it met: [size, mtime, ctime, inode, sha256, lines]
        self.seen = {}  # type: Dict[str, List[Any]]
        self.read = 0

    def record_for(self, rel, st):
        # type: (str, os.stat_result) -> List[Any]
        """This pass's record for the regular file ``rel``: the remembered one while its stat
        matches, else a fresh one (nothing known yet)."""
        rec = self.seen.get(rel)
        if rec is None:
            key = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
            hit = self.old.get(rel)
            rec = list(hit) if hit is not None and hit[:4] == key else key + [None, None]
            self.seen[rel] = rec
        return rec

    def digest(self, rel, full, st):
        # type: (str, str, os.stat_result) -> str
        rec = self.record_for(rel, st)
        if rec[4] is None:
            rec[4] = sha256(full)
            self.read += 1
        digest = rec[4]  # type: str
        return digest

    def tags(self, rel, full, rx, needles):
        # type: (str, str, Pattern[str], List[bytes]) -> List[List[Any]]
        """The tagged lines of ``rel`` (a regular file of at most MAX_SCAN bytes; none otherwise);
        a file this pass has met already is not looked at again."""
        rec = self.seen.get(rel)
        if rec is None:
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
        lines = rec[5]  # type: List[List[Any]]
        return lines

    def document(self):
        # type: () -> Dict[str, Any]
        """What the next pass may trust: the records of files older than this pass."""
        files = dict((rel, rec) for rel, rec in self.seen.items() if max(rec[1], rec[2]) < self.since)
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
    return lines is None or (type(lines) is list and (not lines or all(
        type(x) is list and len(x) == 2 and type(x[0]) is int and type(x[1]) is str for x in lines)))


def load_cache(path, rule, since, trust, limit):
    # type: (Optional[str], Any, int, bool, int) -> Cache
    """The cache kept in ``path``, or an empty one when ``trust`` is off (--checksum) or it cannot
    be used. ``limit``: the most bytes a cache for this tree may take (a bigger one is not read)."""
    old = {}  # type: Dict[str, List[Any]]
    if trust and path is not None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                raw = f.read(limit + 1)
            doc = json.loads(raw.decode("utf-8")) if len(raw) <= limit else {}
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
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".patchctl-")
    try:
        return os.fstat(fd).st_mtime_ns
    finally:
        os.close(fd)
        os.unlink(tmp)


def problem(root, entry, cache):
    # type: (str, List[Any], Cache) -> Optional[str]
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
    if cache.digest(path, full, st) != digest:
        return "content differs (sha256)"
    if bool(st.st_mode & 0o100) != bool(executable):
        return "executable bit differs"
    return None


def skipped(rel):
    # type: (str) -> bool
    return any(part in SKIP_DIRS for part in rel.split("/")[:-1])


def scan(full, rx, needles):
    # type: (str, Pattern[str], List[bytes]) -> List[List[Any]]
    """``[line, text]`` for each tagged line of one file (none in a binary or unreadable one)."""
    try:
        with open(full, "rb") as f:
            data = f.read()
    except OSError:
        return []
    if not any(n in data for n in needles) or b"\0" in data[:1024]:
        return []
    return [[n, line.rstrip()] for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1)
            if rx.search(line)]


def tag_lines(root, paths, pattern, needles, cache=None):
    # type: (str, Iterable[str], str, List[str], Optional[Cache]) -> List[List[Any]]
    """``[path, line, text]`` for each line whose comment carries a tag (as ``patchctl verify``);
    regular files of at most MAX_SCAN bytes only: tagged lines live in source files."""
    rx = re.compile(pattern)
    words = [n.encode() for n in needles]
    cache = cache or Cache({}, None, 0)
    out = []  # type: List[List[Any]]
    for rel in paths:
        out.extend([rel, n, text] for n, text in cache.tags(rel, os.path.join(root, rel), rx, words))
    return out


def walk(root, leave_out):
    root = root.rstrip(os.sep)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        prefix = dirpath[len(root) + 1:].replace(os.sep, "/")
        for name in sorted(filenames):
            rel = prefix + "/" + name if prefix else name
            if rel not in leave_out:
                yield rel


def read_json(path, default):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_atomic(path, data):
    """Temp file beside the destination, then rename: a reader never sees half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".patchctl-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def stale(root, req):
    """Files an earlier migrate placed that the source no longer has, still present here."""
    placed = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
    keep = set(e[0] for e in req["manifest"])
    out = []
    for rel in placed:
        full = inside(root, rel) if rel not in keep else None
        if full is not None and (os.path.islink(full) or os.path.isfile(full)):
            out.append(rel)
    return sorted(out)


def delete(root, paths):
    real_root = os.path.realpath(root)
    for rel in paths:
        full = inside(root, rel)
        if full is None:
            continue
        os.unlink(full)
        parent = os.path.dirname(full)
        while os.path.realpath(parent) != real_root:
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)


def differs(root, rendered):
    out = []
    for rel, text in sorted(rendered.items()):
        full = inside(root, rel)
        try:
            with open(full, "rb") as f:
                same = f.read() == text.encode("utf-8")
        except OSError:
            same = False
        if not same:
            out.append(rel)
    return out


def hold_transfer_lock(root):
    """Hold the root's transfer lock until this process exits (see remote/lock_agent.py): a
    ``finish`` writes and records, and one still running for a killed migrate must end before a
    newer migrate looks at the root."""
    import fcntl

    os.makedirs(os.path.join(root, ".patchctl"), exist_ok=True)
    path = inside(root, TRANSFER_LOCK)
    if path is None:  # a .patchctl symlinked elsewhere on the host: nothing is made there
        raise ValueError("%s/.patchctl leads out of the root; make it a folder there" % root)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + 60
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("%s stayed held by another transfer for 60 s" % path)
            time.sleep(0.05)


class Prescan(object):
    """The host's half of the check, started before the request arrives: ``migrate`` sends the
    root and the tag rule first (one JSON line), and while the source is still being listed and
    hashed there, this reads the host's cache, stats its files and hashes those the last migrate
    placed and tagged-line scans them. The check then only stats each file again: a record is
    carried over only while its stat is unchanged and it is older than this scan's start."""

    def __init__(self, order):
        # type: (Dict[str, Any]) -> None
        self.order, self.carried = order, None  # type: Dict[str, Any], Optional[Cache]
        self.thread = None  # type: Optional[threading.Thread]
        root = order["root"]
        kept = inside(root, CACHE) if os.path.isdir(root) else None
        if kept is None or not os.path.isdir(os.path.dirname(kept)):
            return  # a fresh root: nothing to scan
        self.since = fs_now(os.path.dirname(kept))  # here, not on the thread: it writes (and removes) a file
        self.thread = threading.Thread(target=self.scan, args=(root, kept))
        self.thread.daemon = True  # an agent that is not asked after all exits at once
        self.thread.start()

    def scan(self, root, kept):
        # type: (str, str) -> None
        placed = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
        pattern, needles = self.order["rule"]
        cache = load_cache(kept, self.order["rule"], self.since, not self.order["rehash"],
                           (64 << 20) + 4096 * len(placed))
        rx, words = re.compile(pattern), [n.encode() for n in needles]
        for rel in placed:
            full = inside(root, rel)
            try:
                st = os.lstat(full) if full is not None else None
            except OSError:
                continue
            if st is not None and stat.S_ISREG(st.st_mode):
                cache.digest(rel, full, st)
        for rel in walk(root, ()):
            cache.tags(rel, os.path.join(root, rel), rx, words)
        self.carried = cache

    def cache(self, root, rule, rehash, since):
        # type: (str, Any, bool, int) -> Optional[Cache]
        """The check's cache, from this scan's records (None when it scanned something else)."""
        if self.thread is None or self.order != {"root": root, "rule": rule, "rehash": rehash}:
            return None
        self.thread.join()
        if self.carried is None:
            return None
        cache = Cache(self.carried.document()["files"], rule, since)
        cache.on_disk = self.carried.on_disk
        return cache


def main(req, early=None):
    """One request; ``early``: the prescan started for it, if any."""
    root, rendered, manifest = req["root"], req.get("rendered", {}), req["manifest"]
    reply = {"python": sys.version.split()[0], "root_exists": os.path.isdir(root), "deletions": [],
             "delete_refused": False, "problems": [], "rendered": [], "tags_only_here": [], "tags_missing_here": [],
             "read": 0, "render_seconds": 0.0}
    finish = req["action"] == "finish"
    if finish:
        os.makedirs(root, exist_ok=True)
        hold_transfer_lock(root)
    if not os.path.isdir(root):  # plan for a host that has no tree yet
        reply["problems"] = [[e[0], "missing"] for e in manifest]
        reply["rendered"] = sorted(rendered)
        return reply
    if req.get("delete"):
        reply["deletions"] = stale(root, req)
        reply["delete_refused"] = len(reply["deletions"]) > req["max_delete"]
        if reply["delete_refused"]:
            return reply  # the guard stops the host before anything is written
    tags = req["tags"]
    # a plan writes nothing, so it remembers nothing (since 0); --checksum (rehash) reads every file
    kept = inside(root, CACHE)  # None only where .patchctl leads out, which a finish has refused
    since = fs_now(os.path.dirname(kept)) if finish and kept is not None else 0
    rule, rehash = [tags["pattern"], tags["needles"]], bool(req.get("rehash"))
    cache = early.cache(root, rule, rehash, since) if early is not None else None
    if cache is None:
        cache = load_cache(kept, rule, since, not rehash, (64 << 20) + 4096 * len(manifest))
    began = time.monotonic()
    reply["rendered"] = differs(root, rendered)
    if finish:
        for rel in reply["rendered"]:
            write_atomic(inside(root, rel), rendered[rel].encode("utf-8"))
        delete(root, reply["deletions"])
    reply["render_seconds"] = time.monotonic() - began
    for entry in manifest:
        why = problem(root, entry, cache)
        if why:
            reply["problems"].append([entry[0], why])
    reply["read"] = cache.read
    if not finish:
        return reply
    for rel in differs(root, rendered):
        reply["problems"].append([rel, "generated file differs"])
    here = set(tuple(t) for t in tag_lines(root, walk(root, set(rendered)), tags["pattern"], tags["needles"], cache))
    there = set(tuple(t) for t in tags["expected"])
    reply["tags_only_here"] = sorted(here - there)
    reply["tags_missing_here"] = sorted(there - here)
    record(root, req, reply)
    remembered = cache.document()
    if remembered["files"] != cache.on_disk:  # a no-change re-run writes nothing it need not
        write_atomic(kept, json.dumps(remembered, separators=(",", ":")).encode())
    return reply


def record(root, req, reply):
    """What this host now holds: the files migrate placed (for later deletions) and provenance."""
    placed = set(e[0] for e in req["manifest"])
    if not req.get("delete"):
        old = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
        placed.update(p for p in old if p not in placed and inside(root, p) and os.path.lexists(os.path.join(root, p)))
    ok = not (reply["problems"] or reply["tags_only_here"] or reply["tags_missing_here"])
    manifest, provenance_file = inside(root, MANIFEST), inside(root, PROVENANCE)
    if manifest is None or provenance_file is None:  # a .patchctl symlinked elsewhere on the host
        raise ValueError("%s/.patchctl leads out of the root; make it a folder there" % root)
    write_atomic(manifest, json.dumps({"format": 1, "files": sorted(placed)}).encode())
    provenance = dict(req["provenance"], verified=ok, root=root)
    write_atomic(provenance_file, (json.dumps(provenance, indent=2) + "\n").encode())


def run():
    first = sys.stdin.buffer.readline()
    early = None
    try:
        if first.startswith(b'{"prescan"'):  # the root and tag rule, sent ahead of the request
            early = Prescan(json.loads(first.decode("utf-8"))["prescan"])
            first = b""
    except Exception:  # a prescan is only a head start: the check does it all without one
        early = None
    raw = first + sys.stdin.buffer.read()
    if not raw.strip():
        return  # started ahead of time (see verify_remote.Agent) and not needed after all
    try:
        request = json.loads(raw.decode("utf-8"))
        reply = main(request, early)
    except Exception as exc:  # reported to patchctl as this host's failure, not a traceback
        sys.stdout.write(json.dumps({"error": "%s: %s" % (type(exc).__name__, exc)}))
        sys.exit(3)
    sys.stdout.write(json.dumps(reply))


if __name__ == "__main__":
    run()
