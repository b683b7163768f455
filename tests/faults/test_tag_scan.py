"""The tag inventory (``verify``'s stray tags, migrate's source check) reads only what can hold a
tag: regular source files inside the tree. ``migrate`` runs ``verify`` on every run (#19), so a
tree with gigabytes of data was read whole on each one (#23), a FIFO hung it, and a symlink led
the scan outside the tree."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from patchctl.tags import MAX_SCAN, scan


def test_sources_are_scanned_but_data_fifos_and_symlinks_are_not(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir(), outside.mkdir()
    (tree / "code.py").write_text("x = 1  # Uky\n")
    (tree / "big.jsonl").write_bytes(b"a" * MAX_SCAN + b"\nx = 2  # Uky\n")
    (outside / "secret.py").write_text("y = 3  # Uky\n")
    (tree / "link.py").symlink_to(outside / "secret.py")
    os.mkfifo(tree / "pipe.py")

    hits: list = []
    worker = threading.Thread(target=lambda: hits.extend(scan(tree, {"Uky"})), daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "the scan blocked on a FIFO"
    assert [(h.path, h.line) for h in hits] == [("code.py", 1)]


def test_a_file_at_the_bound_is_still_scanned(tmp_path: Path) -> None:
    line = b"x = 2  # Uky\n"
    (tmp_path / "edge.py").write_bytes(b"#" * (MAX_SCAN - len(line) - 1) + b"\n" + line)
    assert [(h.path, h.line) for h in scan(tmp_path, {"Uky"})] == [("edge.py", 2)]
