"""What a Slurm node (or the login node) runs for migrate: the tree's content digest, and the
unpacking of the login node's archive into a node's own root. Sent as source to the node's
python3 (``-I -S``), like migrate's agent, so it needs only python3 >= 3.6's standard library.

``digest ROOT``: one JSON line, the sha256 over every file migrate placed (``.patchctl/manifest.json``)
and migrate's own records, by content, so a node whose mount shows another tree (a stale NFS
cache, a different file system at the same path) answers another digest. ``%n`` in ROOT is this
node's name (``SLURMD_NODENAME``; ``login`` outside a job).

``pack ROOT ARCHIVE``: on the login node, a tar of those same files. ``unpack ARCHIVE ROOT``: on
a node, the archive's regular files and links written under ROOT (a member leading outside it is
refused, the archive is the login node's own but never trusted), then its digest.
"""

import hashlib
import json
import os
import sys
import tarfile

if False:  # typing only: the node's python3 may predate the typing module
    from typing import Any  # noqa: F401 - named in type comments only

RECORDS = (".patchctl/manifest.json", ".patchctl/provenance.json", ".patchctl/env.sh")


def node_name():
    # type: () -> str
    return os.environ.get("SLURMD_NODENAME") or "login"


def files_of(root):
    # type: (str) -> list[str]
    with open(os.path.join(root, ".patchctl", "manifest.json"), "rb") as f:
        listed = json.loads(f.read().decode("utf-8")).get("files", [])
    return sorted(set(p for p in listed if isinstance(p, str)) | set(RECORDS))


def digest(root):
    # type: (str) -> dict[str, Any]
    try:
        files = files_of(root)
    except (OSError, ValueError) as exc:
        return {"node": node_name(), "root": root, "error": f"no migrated tree there ({exc})"}
    whole = hashlib.sha256()
    missing = []
    for rel in files:
        path = os.path.join(root, rel)
        try:
            if os.path.islink(path):
                part = hashlib.sha256(b"link:" + os.readlink(path).encode("utf-8", "surrogateescape")).hexdigest()
            else:
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                part = h.hexdigest()
        except OSError:
            part = "missing"
            missing.append(rel)
        whole.update(rel.encode("utf-8", "surrogateescape") + b"\0" + part.encode() + b"\0")
    commit = None
    try:
        with open(os.path.join(root, ".patchctl", "provenance.json"), "rb") as f:
            commit = json.loads(f.read().decode("utf-8")).get("commit")
    except (OSError, ValueError, AttributeError):
        pass
    return {
        "node": node_name(),
        "root": root,
        "tree": whole.hexdigest(),
        "files": len(files),
        "missing": missing[:5],
        "commit": commit,
    }


def pack(root, archive):
    # type: (str, str) -> dict[str, Any]
    files = files_of(root)
    with tarfile.open(archive, "w") as tar:
        for rel in files:
            if os.path.lexists(os.path.join(root, rel)):
                tar.add(os.path.join(root, rel), arcname=rel, recursive=False)
    return {"node": node_name(), "archive": archive, "files": len(files)}


def unpack(archive, root):
    # type: (str, str) -> dict[str, Any]
    top = os.path.realpath(root)
    with tarfile.open(archive, "r") as tar:
        for member in tar.getmembers():
            name = os.path.normpath(member.name)
            if name.startswith(("/", "..")) or not (member.isfile() or member.issym() or member.isdir()):
                return {"node": node_name(), "root": root, "error": f"refused archive member {member.name!r}"}
            dest = os.path.join(top, name)
            parent = os.path.realpath(os.path.dirname(dest))
            if parent != top and not parent.startswith(top + os.sep):
                return {"node": node_name(), "root": root, "error": f"archive member {member.name!r} leads outside"}
            if member.isdir():
                os.makedirs(dest, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.lexists(dest) and (os.path.islink(dest) or not os.path.isfile(dest)):
                os.unlink(dest)
            if member.issym():
                os.symlink(member.linkname, dest)
                continue
            tmp = dest + ".patchctl-tmp"
            src = tar.extractfile(member)
            with open(tmp, "wb") as out:
                out.write(src.read() if src is not None else b"")
            os.chmod(tmp, member.mode & 0o777)
            os.utime(tmp, (member.mtime, member.mtime))
            os.replace(tmp, dest)
    return digest(root)


def main(argv):
    # type: (list[str]) -> int
    here = node_name()
    if argv[0] == "digest":
        answer = digest(argv[1].replace("%n", here))
    elif argv[0] == "pack":
        answer = pack(argv[1].replace("%n", here), argv[2])
    elif argv[0] == "unpack":
        answer = unpack(argv[1], argv[2].replace("%n", here))
    else:
        answer = {"node": here, "error": f"unknown action {argv[0]!r}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
