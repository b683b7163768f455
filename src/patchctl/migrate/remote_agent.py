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

Deletions only ever touch files an earlier migrate placed (listed in ``.patchctl/manifest.json``),
so outputs the host made itself (checkpoints, logs) are never at risk.
"""

import hashlib
import json
import os
import re
import sys
import tempfile

# typing is imported for mypy alone (which takes any TYPE_CHECKING as true): the host never pays for it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

MANIFEST = ".patchctl/manifest.json"
PROVENANCE = ".patchctl/provenance.json"
TRANSFER_LOCK = ".patchctl/transfer.lock"  # remote/lock_agent.py's TRANSFER: rsync holds it too
SKIP_DIRS = {".git", ".hg", ".patchctl", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache",
             ".rsync-partial", ".~tmp~", "checkpoints", "outputs", "logs", "wandb"}
MAX_SCAN = 4 << 20  # tagged lines live in source files; larger files are data


_REAL = {}  # type: dict[str, str]


def _realpath(path: str) -> str:
    """realpath, remembered: every file of a directory shares its answer."""
    if path not in _REAL:
        _REAL[path] = os.path.realpath(path)
    return _REAL[path]


def inside(root: str, rel: str) -> "str | None":
    """The absolute path of ``rel`` under ``root``, or None if it could leave the root."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None
    full = os.path.join(root, *parts)
    parent = _realpath(os.path.dirname(full))
    real_root = _realpath(root)
    if parent != real_root and not parent.startswith(real_root + os.sep):
        return None
    return full


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def problem(root: str, entry: "list[Any]") -> "str | None":
    """Why the host's copy of a manifest entry differs, or None when it matches."""
    path, kind, digest, executable = entry
    full = inside(root, path)
    if full is None:
        return "unsafe path"
    if kind == "l":
        if not os.path.islink(full):
            return "missing" if not os.path.lexists(full) else "not a symbolic link"
        return None if os.readlink(full) == digest else "link target differs"
    if os.path.islink(full) or (os.path.lexists(full) and not os.path.isfile(full)):
        return "not a regular file"
    if not os.path.exists(full):
        return "missing"
    if sha256(full) != digest:
        return "content differs (sha256)"
    if bool(os.stat(full).st_mode & 0o100) != bool(executable):
        return "executable bit differs"
    return None


def skipped(rel: str) -> bool:
    return any(part in SKIP_DIRS for part in rel.split("/")[:-1])


def tag_lines(root: str, paths: "Iterable[str]", pattern: str, needles: "list[str]") -> "list[list[Any]]":
    """``[path, line, text]`` for each line whose comment carries a tag (as ``patchctl verify``)."""
    rx = re.compile(pattern)
    raw = [n.encode() for n in needles]
    out = []  # type: list[list[Any]]
    for rel in paths:
        full = os.path.join(root, rel)
        try:
            if os.path.islink(full) or os.path.getsize(full) > MAX_SCAN:
                continue
            with open(full, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if not any(n in data for n in raw) or b"\0" in data[:1024]:
            continue
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if rx.search(line):
                out.append([rel, n, line.rstrip()])
    return out


def walk(root: str, leave_out: "set[str]") -> "Iterator[str]":
    root = root.rstrip(os.sep)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        prefix = dirpath[len(root) + 1:].replace(os.sep, "/")
        for name in sorted(filenames):
            rel = prefix + "/" + name if prefix else name
            if rel not in leave_out:
                yield rel


def read_json(path: str, default: "Any") -> "Any":
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_atomic(path: str, data: bytes) -> None:
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


def stale(root: str, req: "dict[str, Any]") -> "list[str]":
    """Files an earlier migrate placed that the source no longer has, still present here."""
    placed = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
    keep = set(e[0] for e in req["manifest"])
    out = []
    for rel in placed:
        full = inside(root, rel) if rel not in keep else None
        if full is not None and (os.path.islink(full) or os.path.isfile(full)):
            out.append(rel)
    return sorted(out)


def delete(root: str, paths: "list[str]") -> None:
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


def differs(root: str, rendered: "dict[str, str]") -> "list[str]":
    out = []
    for rel, text in sorted(rendered.items()):
        full = inside(root, rel)
        if full is None:
            raise ValueError(f"{rel} leads out of the root")
        try:
            with open(full, "rb") as f:
                same = f.read() == text.encode("utf-8")
        except OSError:
            same = False
        if not same:
            out.append(rel)
    return out


def hold_transfer_lock(root: str) -> int:
    """Hold the root's transfer lock until this process exits (see remote/lock_agent.py): a
    ``finish`` writes and records, and one still running for a killed migrate must end before a
    newer migrate looks at the root."""
    import fcntl
    import time

    os.makedirs(os.path.join(root, ".patchctl"), exist_ok=True)
    path = inside(root, TRANSFER_LOCK)
    if path is None:  # a .patchctl symlinked elsewhere on the host: nothing is made there
        raise ValueError(f"{root}/.patchctl leads out of the root; make it a folder there")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + 60
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} stayed held by another transfer for 60 s") from None
            time.sleep(0.05)


def main(req: "dict[str, Any]") -> "dict[str, Any]":
    root, rendered, manifest = req["root"], req.get("rendered", {}), req["manifest"]
    reply = {"python": sys.version.split()[0], "root_exists": os.path.isdir(root), "deletions": [],
             "delete_refused": False, "problems": [], "rendered": [], "tags_only_here": [],
             "tags_missing_here": []}  # type: dict[str, Any]
    if req["action"] == "finish":
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
    reply["rendered"] = differs(root, rendered)
    if req["action"] == "finish":
        for rel in reply["rendered"]:
            full = inside(root, rel)
            if full is None:
                raise ValueError(f"{rel} leads out of the root")
            write_atomic(full, rendered[rel].encode("utf-8"))
        delete(root, reply["deletions"])
    for entry in manifest:
        why = problem(root, entry)
        if why:
            reply["problems"].append([entry[0], why])
    if req["action"] != "finish":
        return reply
    for rel in differs(root, rendered):
        reply["problems"].append([rel, "generated file differs"])
    tags = req["tags"]
    here = set(tuple(t) for t in tag_lines(root, walk(root, set(rendered)), tags["pattern"], tags["needles"]))
    there = set(tuple(t) for t in tags["expected"])
    reply["tags_only_here"] = sorted(here - there)
    reply["tags_missing_here"] = sorted(there - here)
    record(root, req, reply)
    return reply


def record(root: str, req: "dict[str, Any]", reply: "dict[str, Any]") -> None:
    """What this host now holds: the files migrate placed (for later deletions) and provenance."""
    placed = set(e[0] for e in req["manifest"])
    if not req.get("delete"):
        old = read_json(os.path.join(root, MANIFEST), {}).get("files", [])
        placed.update(p for p in old if inside(root, p) and os.path.lexists(os.path.join(root, p)))
    ok = not (reply["problems"] or reply["tags_only_here"] or reply["tags_missing_here"])
    manifest, provenance_file = inside(root, MANIFEST), inside(root, PROVENANCE)
    if manifest is None or provenance_file is None:  # a .patchctl symlinked elsewhere on the host
        raise ValueError(f"{root}/.patchctl leads out of the root; make it a folder there")
    write_atomic(manifest, json.dumps({"format": 1, "files": sorted(placed)}).encode())
    provenance = dict(req["provenance"], verified=ok, root=root)
    write_atomic(provenance_file, (json.dumps(provenance, indent=2) + "\n").encode())


def run() -> None:
    raw = sys.stdin.buffer.read()
    if not raw.strip():
        return  # started ahead of time (see verify_remote.Agent) and not needed after all
    try:
        request = json.loads(raw.decode("utf-8"))
        reply = main(request)
    except Exception as exc:  # reported to patchctl as this host's failure, not a traceback
        sys.stdout.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(3)
    sys.stdout.write(json.dumps(reply))


if __name__ == "__main__":
    run()
