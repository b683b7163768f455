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

A file's sha256 and tagged lines are remembered in ``.patchctl/hashes.json`` (see ``agent_cache``) and
reused while its size, mtime, ctime and inode stay as they were when it was read: a no-change
re-run then costs a ``stat`` per file, like rsync's quick check, not a read of every byte. Its
file operations (confinement to the root, the walk, writes, deletions) are in ``agent_files``,
its comparisons in ``agent_check``, its seal of a verified tree in ``agent_seal``, its JSON
without json's import in ``agent_io``; the six files travel as one program.

Deletions only ever touch files an earlier migrate placed (listed in ``.patchctl/manifest.json``),
so outputs the host made itself (checkpoints, logs) are never at risk.
"""

import gc
import os
import stat
import sys
import time

if False:  # typing only: the host's python3 may predate the typing module
    from collections.abc import Iterable  # noqa: F401 - named in type comments only
    from typing import Any, Optional  # noqa: F401 - named in type comments only

# here, where patchctl is installed; on a host the source of agent_cache, agent_files,
# agent_check and agent_seal has just run before this one
try:  # not contextlib.suppress: its import (functools, collections) is no sealed answer's
    from patchctl.migrate.agent_cache import MAX_SCAN, Cache, compile_rule, fs_now, load_cache  # noqa: F401 - see above
    from patchctl.migrate.agent_check import problems, tags_here
    from patchctl.migrate.agent_files import (  # noqa: F401 - see above
        CACHE,
        MANIFEST,
        PROVENANCE,
        SKIP_DIRS,
        TRANSFER_LOCK,
        delete,
        differs,
        hold_transfer_lock,
        inside,
        read_json,
        skipped,
        stale,
        survey,
        write_atomic,
        write_changed,
    )
    from patchctl.migrate.agent_io import dumps, loads, quote
    from patchctl.migrate.agent_seal import sealed_answer, unseal, write_seal
except ImportError:
    pass


class Prescan:
    """The host's half of the check, started before the request arrives: ``migrate`` sends the
    root and the tag rule first (one JSON line), and while the source is still being listed and
    hashed there, this reads the host's cache, then in one walk (``survey``) stats its files,
    hashes those the last migrate placed and tagged-line scans them. The check then only stats
    each file again, in its own walk: a record is carried over only while its stat is unchanged
    and it is older than this scan's start."""

    def __init__(self, order, since=None, walk=None):
        # type: (dict[str, Any], Optional[int], Optional[dict[str, os.stat_result]]) -> None
        """``since`` and ``walk``: the file-system clock and the walk taken after it by a prescan
        that looked for a seal (``agent_seal.sealed_answer``) and did not find the tree sealed."""
        self.order, self.carried = order, None  # type: dict[str, Any], Optional[Cache]
        self.thread = None  # type: Optional[threading.Thread]
        root = order["root"]
        kept = inside(root, CACHE) if os.path.isdir(root) else None
        if kept is None or not os.path.isdir(os.path.dirname(kept)):
            return  # a fresh root: nothing to scan
        # here, not on the thread: it writes (and removes) a file
        self.since = fs_now(os.path.dirname(kept)) if since is None else since
        import threading  # here: a sealed tree (or a plan) never starts one

        self.thread = threading.Thread(target=self.scan, args=(root, kept, walk))
        self.thread.daemon = True  # an agent that is not asked after all exits at once
        self.thread.start()

    def scan(self, root, kept, walk):
        # type: (str, str, Optional[dict[str, os.stat_result]]) -> None
        placed = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
        placed = placed if isinstance(placed, list) else []  # the host's file: anything may be there
        pattern, needles = self.order["rule"]
        cache = load_cache(
            kept, self.order["rule"], self.since, not self.order["rehash"], (64 << 20) + 4096 * len(placed)
        )
        rx, words, base = compile_rule(pattern), [n.encode() for n in needles], os.path.join(root, "")
        placed = set(p for p in placed if isinstance(p, str))
        for rel, st in (survey(root) if walk is None else walk).items():
            if stat.S_ISREG(st.st_mode):
                if rel in placed:
                    cache.digest(rel, base + rel, st)
                cache.tags(rel, base + rel, rx, words, st)
        self.carried = cache

    def cache(self, root, rule, rehash, since):
        # type: (str, Any, bool, int) -> Optional[Cache]
        """The check's cache, from this scan's records (None when it scanned something else)."""
        asked = {k: self.order.get(k) for k in ("root", "rule", "rehash")}  # not "seal": that is no scan's
        if self.thread is None or asked != {"root": root, "rule": rule, "rehash": rehash}:
            return None
        self.thread.join()
        if self.carried is None:
            return None
        cache = Cache(self.carried.document()["files"], rule, since)
        cache.on_disk = self.carried.on_disk
        cache.read = self.carried.read  # the files this check read, in its prescan or after
        return cache


def main(req, early=None):
    # type: (dict[str, Any], Optional[Prescan]) -> dict[str, Any]
    """One request; ``early``: the prescan started for it, if any."""
    root, rendered, manifest = req["root"], req.get("rendered", {}), req["manifest"]
    reply = {
        "python": sys.version.split()[0],
        "root_exists": os.path.isdir(root),
        "deletions": [],
        "delete_refused": False,
        "problems": [],
        "rendered": [],
        "tags_only_here": [],
        "tags_missing_here": [],
        "read": 0,
        "read_early": 0,
        "render_seconds": 0.0,
    }  # type: dict[str, Any]
    finish = req["action"] == "finish"
    if finish:
        os.makedirs(root, exist_ok=True)
        hold_transfer_lock(root)
        unseal(root)  # written again below only if this finish ends verified
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
    reply["read_early"] = cache.read if cache is not None else 0  # of "read": before the request came
    if cache is None:
        cache = load_cache(kept, rule, since, not rehash, (64 << 20) + 4096 * len(manifest))
    began = time.monotonic()
    reply["rendered"] = differs(root, rendered)
    if finish:
        for rel in reply["rendered"]:
            full = inside(root, rel)
            if full is None:
                raise ValueError(f"{rel} leads out of the root")
            write_atomic(full, rendered[rel].encode("utf-8"))
        delete(root, reply["deletions"])
    reply["render_seconds"] = time.monotonic() - began
    # one walk, after the writes: the file stats the manifest is checked by and the tag inventory
    stats = survey(root) if finish else {}  # a plan looks at the manifest's files only
    reply["problems"] = problems(root, manifest, stats, cache)
    reply["read"] = cache.read
    if not finish:
        return reply
    for rel in differs(root, rendered):
        reply["problems"].append([rel, "generated file differs"])
    here = tags_here(root, stats, set(rendered), rule, cache)
    there = set(tuple(t) for t in tags["expected"])
    reply["tags_only_here"] = sorted(here - there)
    reply["tags_missing_here"] = sorted(there - here)
    written = record(root, req, reply)
    remembered = cache.document()
    if kept is not None and remembered["files"] != cache.on_disk:  # a no-change re-run writes nothing it need not
        write_atomic(kept, dumps(remembered, separators=(",", ":")).encode())
    if "seal_as" in req:  # see agent_seal: the next prescan may then answer with one walk
        verified = not (reply["problems"] or reply["tags_only_here"] or reply["tags_missing_here"])
        reply["sealed"] = (
            verified and type(req["seal_as"]) is str and write_seal(root, req, stats, since, here, written)
        )
    return reply


def record(root, req, reply):
    # type: (str, dict[str, Any], dict[str, Any]) -> dict[str, bytes]
    """What this host now holds: the files migrate placed (for later deletions) and provenance.
    Returns the two records' paths and bytes (a seal confirms them, see agent_seal)."""
    placed = set(e[0] for e in req["manifest"])
    if not req.get("delete"):
        old = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
        placed.update(p for p in old if p not in placed and inside(root, p) and os.path.lexists(os.path.join(root, p)))
    ok = not (reply["problems"] or reply["tags_only_here"] or reply["tags_missing_here"])
    manifest, provenance_file = inside(root, MANIFEST), inside(root, PROVENANCE)
    if manifest is None or provenance_file is None:  # a .patchctl symlinked elsewhere on the host
        raise ValueError(f"{root}/.patchctl leads out of the root; make it a folder there")
    written = {MANIFEST: dumps({"format": 1, "files": sorted(placed)}).encode()}
    write_changed(manifest, written[MANIFEST])
    provenance = dict(req["provenance"], verified=ok, root=root)
    # the time of a migrate that found this very tree verified already is not news: kept as it was
    # (``migrated_at`` says when this tree and outcome were first recorded here); never read via a link
    earlier = {} if os.path.islink(provenance_file) else read_json(provenance_file, {})
    if isinstance(earlier, dict) and "migrated_at" in provenance:
        same = dict(provenance, migrated_at=earlier.get("migrated_at")) == earlier
        provenance = earlier if same else provenance
    written[PROVENANCE] = (dumps(provenance, indent=2) + "\n").encode()
    write_changed(provenance_file, written[PROVENANCE])
    return written


def prescan(order):
    # type: (dict[str, Any]) -> Optional[Prescan]
    """The prescan ``order`` asks for; with ``"seal": true`` first the one line that answers it
    (see agent_seal): a sealed tree needs no prescan, and one that is not is scanned from the walk
    its answer took."""
    if order.get("seal") is not True:
        return Prescan(order)
    try:
        answer, since, walk = sealed_answer(order)
    except Exception:  # the host's tree or seal, anything may be there: "not sealed", never no line
        answer, since, walk = None, 0, None
    sys.stdout.write('{"sealed": %s}\n' % ("null" if answer is None else quote(answer)))  # no json import yet
    sys.stdout.flush()
    return None if answer is not None else Prescan(order, since if walk is not None else None, walk)


def run():
    # type: () -> None
    # A short-lived process that makes no reference cycles: without the cyclic collector, reading
    # a 100k-file request and cache and walking the tree takes a third less time (its passes grew
    # with every object those allocate).
    gc.disable()
    first = sys.stdin.buffer.readline()
    early = None
    try:
        if first.startswith(b'{"prescan"'):  # the root and tag rule, sent ahead of the request
            order = loads(first.decode("utf-8"))["prescan"]
            first = b""
            early = prescan(order)
    except Exception:  # a prescan is only a head start: the check does it all without one
        early = None
    raw = first + sys.stdin.buffer.read()
    if not raw.strip():  # started ahead of time (see verify_remote.Agent) and not needed after all
        # at once: freeing a 100k-file walk object by object took the host ~20 ms at the very end
        # of every migrate its seal settled (see agent_seal); nothing is left to write or flush
        sys.stdout.flush()
        os._exit(0)
    try:
        request = loads(raw.decode("utf-8"))
        reply = main(request, early)
    except Exception as exc:  # reported to patchctl as this host's failure, not a traceback
        sys.stdout.write(dumps({"error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(3)
    sys.stdout.write(dumps(reply))


if __name__ == "__main__":
    run()
