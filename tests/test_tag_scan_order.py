"""The tag inventory (``tags.scan``, verify's ``grep -rn``): every tagged line of the tree's
regular source files in ``os.walk``'s order (folders and files by name, a folder's files before
its subfolders), never inside SKIP_DIRS, through a link, or from a FIFO."""

from __future__ import annotations

import os
from pathlib import Path

from patchctl.tags import scan


def test_tagged_lines_in_walk_order_and_only_from_regular_files(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    files = {
        "z.py": "x = 1  # Uky: top\n",
        "a/x.py": "\n# Uky a\n",
        "a/deep/y.py": "y = 2  # Uky\n",
        "b/w.sh": "export A=1  # Uky\n",
        "__pycache__/c.py": "# Uky cached\n",
        ".git/d.py": "# Uky git\n",
        "b/plain.py": "nothing here\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "link.py").symlink_to(root / "z.py")
    os.mkfifo(root / "fifo.py")  # opened, it would block the scan
    hits = [(h.path, h.line, h.text) for h in scan(root, {"Uky"})]
    assert hits == [
        ("z.py", 1, "x = 1  # Uky: top"),
        ("a/x.py", 2, "# Uky a"),
        ("a/deep/y.py", 1, "y = 2  # Uky"),
        ("b/w.sh", 1, "export A=1  # Uky"),
    ]
