"""Issue 41 req 5: the storage probe writes only its own files, in its own folder, and hands fio
no path of the cluster config (fio reads ``:`` in ``--filename`` as a list separator).

The host side's three phases (mark, measure, clean) run here as validate runs them on a host,
with the real fio: a ``checkpoint_dir`` of ``X/ck:1`` beside a user's file ``X/ck`` once made fio
write over ``X/ck`` and health still said PASS.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from patchctl.validate.host import storage
from realparts import require


def probe(dirs: dict[str, str]) -> dict[str, Any]:
    """``mark``, ``measure`` and ``clean`` on node 0 of run ``r1``; the measure phase's reply."""
    replies: list[dict[str, Any]] = []
    for phase in ("mark", "measure", "clean"):
        request = {"dirs": dirs, "run": "r1", "node": 0, "phase": phase, "bytes": 2 << 20, "seconds": 60}
        assert storage.run(request, replies.append) == 0
    assert all(not v for v in replies[0]["marked"].values()), replies[0]
    return replies[1]["dirs"]


def test_fio_never_writes_over_the_file_a_colon_in_the_path_names(tmp_path: Path) -> None:
    require("fio")
    x = tmp_path / "x"
    (x / "tree:1").mkdir(parents=True)
    (x / "tree:1" / "train.py").write_text("the user's code\n")
    (x / "ck").write_bytes(user := os.urandom(4096))  # smaller than the probe: fio "lays it out" with zeros
    (x / "tree").write_bytes(b"the user's other file\n")
    got = probe({"tree": str(x / "tree:1"), "checkpoint": str(x / "ck:1")})
    assert (x / "ck").read_bytes() == user
    assert (x / "tree").read_bytes() == b"the user's other file\n"
    for name in ("tree", "checkpoint"):
        assert got[name]["method"] == "fio 1 MiB direct I/O; checksum by python", got[name]  # fio ran, and passed
        assert got[name]["checksum_ok"] is True and got[name]["bytes"] == 2 << 20
    # nothing left behind but the checkpoint folder a run would make anyway, empty
    assert sorted(os.listdir(x)) == ["ck", "ck:1", "tree", "tree:1"]
    assert os.listdir(x / "ck:1") == [] and os.listdir(x / "tree:1") == ["train.py"]


def test_the_probe_works_in_a_folder_of_its_own_and_removes_it(tmp_path: Path) -> None:
    """Whatever another run left in the shared marker folder is never opened: each measurement
    makes a new folder there (a planted link under any fixed name cannot be reached)."""
    (tmp_path / storage.SUBDIR).mkdir()
    for name in (storage.FIO_FILE, "python.bin", f"probe-{os.getpid()}"):
        (tmp_path / storage.SUBDIR / name).symlink_to(tmp_path / "victim")
    (tmp_path / "victim").write_text("the user's\n")
    got = storage.measure_one(str(tmp_path), 1 << 20, 60)
    assert got["checksum_ok"] is True, got
    assert (tmp_path / "victim").read_text() == "the user's\n"
    assert sorted(os.listdir(tmp_path / storage.SUBDIR)) == sorted(
        [storage.FIO_FILE, "python.bin", f"probe-{os.getpid()}"]
    )  # the planted links only: the probe's folder is gone
