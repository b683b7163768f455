"""The hash caches (the hosts' ``.patchctl/hashes.json``, the source's under patchctl's cache):
a remembered sha256 spares reading an unchanged file, and never hides a changed one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_helpers import agent, entry, req
from migrate_fixtures import Site
from migrate_helpers import make_repo

from patchctl.clusters import load_cluster
from patchctl.migrate import HostStatus, Options, agent_cache, migrate, state, verify_remote
from patchctl.migrate.hashcache import cache_file
from patchctl.migrate.prepare import Pending, Prepared, prepare
from patchctl.remote import ssh

FILES = {f"pkg/m{i}.py": f"value = {i:04d}\n" for i in range(6)}


def aged_files(root: Path) -> list[list[object]]:
    """FILES under ``root``, left to age past the file-system clock's tick, and their manifest."""
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    time.sleep(0.05)  # a file changed in the current tick is never remembered (racily clean)
    return [entry(root, rel) for rel in FILES]


def same_size_same_mtime(path: Path, text: str) -> None:
    """Write ``text`` (as long as the old content) and put the old mtime back: rsync's quick check
    and a cache keyed by size and mtime alone both miss it."""
    st = path.stat()
    assert len(text) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_a_remembered_hash_spares_the_read_and_checksum_reads_again(tmp_path: Path) -> None:
    manifest = aged_files(tmp_path)
    first = agent(req(tmp_path, "finish", manifest))
    assert (first["problems"], first["read"]) == ([], len(FILES))
    again = agent(req(tmp_path, "finish", manifest))
    assert (again["problems"], again["read"]) == ([], 0)
    forced = agent(req(tmp_path, "finish", manifest, rehash=True))
    assert (forced["problems"], forced["read"]) == ([], len(FILES))


def test_a_change_that_kept_size_and_mtime_is_caught(tmp_path: Path) -> None:
    manifest = aged_files(tmp_path)
    agent(req(tmp_path, "finish", manifest))
    same_size_same_mtime(tmp_path / "pkg/m3.py", "value = 9999\n")
    reply = agent(req(tmp_path, "finish", manifest))
    assert reply["problems"] == [["pkg/m3.py", "content differs (sha256)"]] and reply["read"] == 1


def test_a_file_replaced_by_rename_is_caught(tmp_path: Path) -> None:
    manifest = aged_files(tmp_path)
    agent(req(tmp_path, "finish", manifest))
    victim = tmp_path / "pkg/m2.py"
    st = victim.stat()
    other = tmp_path / "pkg/.new"
    other.write_text("value = 7777\n")
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, victim)
    assert victim.stat().st_ino != st.st_ino and victim.stat().st_size == st.st_size
    reply = agent(req(tmp_path, "finish", manifest))
    assert reply["problems"] == [["pkg/m2.py", "content differs (sha256)"]]


def test_a_tagged_line_added_with_size_and_mtime_kept_is_caught(tmp_path: Path) -> None:
    manifest = aged_files(tmp_path)
    agent(req(tmp_path, "finish", manifest))
    extra = tmp_path / "pkg/extra.py"  # not the source's: only the tag walk sees it
    extra.write_text("x = 1  # Note\n")
    time.sleep(0.05)
    assert agent(req(tmp_path, "finish", manifest))["tags_only_here"] == []
    same_size_same_mtime(extra, "x = 1  # Uky \n")
    assert agent(req(tmp_path, "finish", manifest))["tags_only_here"] == [["pkg/extra.py", 1, "x = 1  # Uky"]]


def _cache_doc(root: Path, manifest: list[list[object]], digest: object = "0" * 64) -> str:
    """A well-formed cache that vouches for every file of ``manifest`` as it is now, with
    ``digest`` for each (a wrong one: trusted, it would report them all) and no tagged lines."""
    files = {}
    for e in manifest:
        st = (root / str(e[0])).stat()
        files[str(e[0])] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, digest, []]
    return json.dumps({"format": 1, "rule": [r"#\s*(Uky)\b", ["Uky"]], "files": files})


def _damaged(kind: str, root: Path, manifest: list[list[object]]) -> bytes:
    doc = json.loads(_cache_doc(root, manifest))
    right = {str(e[0]): e[2] for e in manifest}
    if kind == "garbage":
        return b"\x00{not json"
    if kind in ("format", "rule"):
        doc[kind] = 2 if kind == "format" else ["x", ["Other"]]
    elif kind == "outside":
        doc["files"]["../../etc/passwd"] = [0, 0, 0, 0, None, None]
    elif kind == "digest":
        for rec in doc["files"].values():
            rec[4] = 5
    elif kind == "lines":  # right digests, tagged lines that are no lines
        for rel, rec in doc["files"].items():
            rec[4], rec[5] = right[rel], "xy"
    return json.dumps(doc).encode()


@pytest.mark.parametrize("damage", ["garbage", "format", "rule", "digest", "lines", "outside", "symlink"])
def test_a_damaged_or_foreign_cache_is_dropped_whole(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "root"
    manifest = aged_files(root)
    agent(req(root, "finish", manifest))  # makes .patchctl/
    cache = root / ".patchctl" / "hashes.json"
    if damage == "symlink":
        target = tmp_path / "elsewhere.json"
        target.write_text(_cache_doc(root, manifest))
        cache.unlink()
        cache.symlink_to(target)
    else:
        cache.write_bytes(_damaged(damage, root, manifest))
    reply = agent(req(root, "finish", manifest))
    # every file read again, none reported wrong on the cache's word
    assert (reply.get("error"), reply["problems"], reply["read"]) == (None, [], len(FILES))
    assert not cache.is_symlink() and set(json.loads(cache.read_text())["files"]) >= set(FILES)
    if damage == "symlink":
        assert target.read_text() == _cache_doc(root, manifest)  # nothing written through it


def test_a_file_changed_in_the_pass_tick_is_not_remembered(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_text("a")
    st = path.stat()
    young = agent_cache.Cache({}, None, max(st.st_mtime_ns, st.st_ctime_ns))  # the pass began in its tick
    old = agent_cache.Cache({}, None, max(st.st_mtime_ns, st.st_ctime_ns) + 1)
    for cache in (young, old):
        cache.digest("f", str(path), st)
    assert young.document()["files"] == {} and list(old.document()["files"]) == ["f"]


def test_the_source_cache_never_hides_a_local_change(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", **FILES})
    cluster = site.cluster(aliases=["node1"])
    time.sleep(0.05)
    assert migrate(cluster, tree, ()).ok
    assert cache_file(tree).is_file()
    same_size_same_mtime(tree / "pkg/m1.py", "value = 8888\n")
    (host,) = migrate(cluster, tree, ()).hosts
    # rsync's quick check skips it; the host's check against the new digest finds it and repairs it
    assert host.status is HostStatus.REPAIRED and host.repaired == ("pkg/m1.py: content differs (sha256)",)
    assert (site.root("node1") / "pkg/m1.py").read_text() == "value = 8888\n"
    cache_file(tree).write_bytes(b"damaged")
    assert migrate(cluster, tree, ()).hosts[0].status is HostStatus.OK


def test_a_host_change_that_kept_size_and_mtime_is_repaired_past_the_cache(site: Site, tmp_path: Path) -> None:
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", **FILES})
    cluster = site.cluster(aliases=["node1", "node2"])
    assert migrate(cluster, tree, ()).ok
    again = migrate(cluster, tree, ())
    assert [(h.status, h.files_sent, h.files_read) for h in again.hosts] == [(HostStatus.OK, 0, 0)] * 2
    same_size_same_mtime(site.root("node1") / "pkg/m4.py", "value = 6666\n")
    victim = site.root("node2") / "pkg/m5.py"
    st = victim.stat()
    (victim.parent / "swap").write_text("value = 5555\n")
    os.utime(victim.parent / "swap", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(victim.parent / "swap", victim)  # replaced by rename: a new inode
    node1, node2 = migrate(cluster, tree, ()).hosts
    assert (node1.status, node1.repaired) == (HostStatus.REPAIRED, ("pkg/m4.py: content differs (sha256)",))
    assert (node2.status, node2.repaired) == (HostStatus.REPAIRED, ("pkg/m5.py: content differs (sha256)",))
    assert (site.root("node1") / "pkg/m4.py").read_text() == FILES["pkg/m4.py"]
    assert victim.read_text() == FILES["pkg/m5.py"]


def _agent_with_prescan(root: Path, request: dict[str, object], between: Callable[[], None]) -> dict[str, object]:
    """The agent as migrate runs a host's first one: the prescan order at once, ``between`` while
    the host scans (as the source is hashed here), then the request."""
    python = shutil.which("python3") or "python3"
    argv = [python, "-c", ssh._BOOTSTRAP.format(code=verify_remote._agent_b64())]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None
    order = {"prescan": {"root": str(root), "rule": [r"#\s*(Uky)\b", ["Uky"]], "rehash": False}}
    p.stdin.write(json.dumps(order).encode() + b"\n")
    p.stdin.flush()
    between()
    out, err = p.communicate(json.dumps(request).encode())
    assert p.returncode == 0, err
    return json.loads(out)


def test_the_prescan_does_the_reading_and_never_hides_a_later_change(tmp_path: Path) -> None:
    manifest = aged_files(tmp_path)
    agent(req(tmp_path, "finish", manifest))
    same_size_same_mtime(tmp_path / "pkg/m0.py", "value = 1111\n")  # before the prescan: it reads it
    reply = _agent_with_prescan(tmp_path, req(tmp_path, "finish", manifest), lambda: time.sleep(0.5))
    assert reply["problems"] == [["pkg/m0.py", "content differs (sha256)"]]
    assert reply["read"] == reply["read_early"] == 1  # read once, before the request came

    def change_during_the_scan() -> None:
        time.sleep(0.5)  # the prescan has begun (on a loaded machine it may begin later: either way)
        same_size_same_mtime(tmp_path / "pkg/m1.py", "value = 2222\n")

    reply = _agent_with_prescan(tmp_path, req(tmp_path, "finish", manifest), change_during_the_scan)
    assert reply["problems"] == [["pkg/m0.py", "content differs (sha256)"], ["pkg/m1.py", "content differs (sha256)"]]


def must(tree: Prepared | None) -> Prepared:
    assert tree is not None
    return tree


@pytest.mark.parametrize("checksum", [False, True])
def test_checksum_reads_every_source_file_whatever_the_cache_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checksum: bool
) -> None:
    monkeypatch.setattr(state, "state_dir", lambda: tmp_path / "state")
    tree = make_repo(tmp_path / "src", {"verl/__init__.py": "a = 1\n", **FILES})
    time.sleep(0.05)
    config = tmp_path / "patchctl.toml"
    config.write_text('[clusters.c]\nhosts = ["n1"]\nroot = "/r"\n')
    cluster = load_cluster("c", config)
    prepare(tree, (), (), tmp_path, Pending(cluster, tree, Options()))
    doc = json.loads(cache_file(tree).read_text())
    doc["files"]["pkg/m2.py"][4] = "0" * 64  # the cache vouches for a digest the file does not have
    cache_file(tree).write_text(json.dumps(doc))
    again = must(prepare(tree, (), (), tmp_path, Pending(cluster, tree, Options(checksum=checksum))))
    digests = {e.path: e.digest for e in again.fs.entries}
    assert (digests["pkg/m2.py"] == "0" * 64) is not checksum
