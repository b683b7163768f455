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

Without a shared root validate reaches a job's nodes only through steps of that job (``srun
--jobid``), since neither the login node's home nor its tree need be visible there:
``stage ROOT`` unpacks patchctl's package (a tar on stdin, the same checks as ``unpack``) into
the node's ``ROOT/.patchctl/validate/pkg``, where validate's steps import it from; ``request ROOT
RUN`` writes the run's request (stdin, holding the token) as ``ROOT/RUN/job.json``, 0600, whole
or not at all (the job's script waits for it); ``collect RUN NAME...`` writes a tar of the run
folder's named files (regular files only, no link followed) to stdout, then ``RUN/.fetched``,
which lets the job's driver end the job.
"""

import hashlib
import io
import json
import os
import shutil
import stat
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


PKG = ".patchctl/validate/pkg"


def stage(root, data):
    # type: (str, bytes) -> dict[str, Any]
    """The package's archive unpacked beside the old copy, then swapped in (a step started after
    this answer imports the new one whole)."""
    pkg = os.path.join(root, PKG)
    if not os.path.isdir(os.path.join(root, ".patchctl")):
        return {"node": node_name(), "root": root, "error": f"no migrated tree at {root} (run patchctl migrate)"}
    try:
        return _stage(root, pkg, data)
    except OSError as exc:
        why = f"patchctl's package could not be written into {pkg}: {exc}"
        return {"node": node_name(), "root": root, "error": why}


def _stage(root, pkg, data):
    # type: (str, str, bytes) -> dict[str, Any]
    os.makedirs(pkg, exist_ok=True)
    new = os.path.join(pkg, f"patchctl.new-{os.getpid()}")
    old = os.path.join(pkg, f"patchctl.old-{os.getpid()}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        for member in tar.getmembers():
            name = os.path.normpath(member.name)
            if name.startswith(("/", "..")) or name.split(os.sep)[0] != "patchctl":
                return {"node": node_name(), "root": root, "error": f"refused archive member {member.name!r}"}
            if not (member.isfile() or member.isdir()):
                continue
            dest = os.path.join(new, os.path.relpath(name, "patchctl"))
            if member.isdir():
                os.makedirs(dest, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            src = tar.extractfile(member)
            with open(dest, "wb") as out:
                out.write(src.read() if src is not None else b"")
    current = os.path.join(pkg, "patchctl")
    if os.path.lexists(current):
        os.rename(current, old)
    os.rename(new, current)
    shutil.rmtree(old, ignore_errors=True)
    return {"node": node_name(), "root": root, "staged": current}


def request(root, run, data):
    # type: (str, str, bytes) -> dict[str, Any]
    folder = os.path.join(root, run)
    old = os.umask(0o077)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = os.path.join(folder, ".job.json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, os.path.join(folder, "job.json"))
    finally:
        os.umask(old)
    return {"node": node_name(), "root": root, "request": os.path.join(folder, "job.json")}


def collect(run, names, out):
    # type: (str, list[str], Any) -> int
    top = os.path.realpath(run)
    found = []  # type: list[str]
    for name in names:
        path = os.path.join(top, os.path.normpath(name))
        if not path.startswith(top + os.sep) or os.path.islink(path):
            continue
        if os.path.isdir(path):
            for here, dirs, files in os.walk(path):
                dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(here, d))]
                found += [os.path.join(here, f) for f in files]
        elif os.path.lexists(path):
            found.append(path)
    with tarfile.open(fileobj=out, mode="w|") as tar:
        for one in found:
            if stat.S_ISREG(os.lstat(one).st_mode):
                tar.add(one, arcname=os.path.relpath(one, top), recursive=False)
    with open(os.path.join(top, ".fetched"), "w"):
        pass
    return 0


def main(argv):
    # type: (list[str]) -> int
    here = node_name()
    if argv[0] == "digest":
        answer = digest(argv[1].replace("%n", here))
    elif argv[0] == "pack":
        answer = pack(argv[1].replace("%n", here), argv[2])
    elif argv[0] == "unpack":
        answer = unpack(argv[1], argv[2].replace("%n", here))
    elif argv[0] == "stage":
        answer = stage(argv[1].replace("%n", here), sys.stdin.buffer.read())
    elif argv[0] == "request":
        answer = request(argv[1].replace("%n", here), argv[2], sys.stdin.buffer.read())
    elif argv[0] == "collect":
        sys.stdout.flush()
        return collect(argv[1].replace("%n", here), argv[2:], sys.stdout.buffer)
    else:
        answer = {"node": here, "error": f"unknown action {argv[0]!r}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
