"""Small forks built for the conflict-workflow tests (issue 27.6): a base tree, one edit per kind
as the fork and as upstream make it, and the steps every test shares (capture, read a 3-way view)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.clirun import run

BASE = {
    "verl/__init__.py": "",
    "verl/c.yaml": "trainer:\n  total_epochs: 3\n  project: a\nactor:\n  lr: 1\n",
    "requirements.txt": "numpy\npandas\nray\n",
    "README.md": "# T\n\nline a\nline b\nline c\nline d\n",
    "old.txt": "gone\n",
    "verl/moved.py": "x = 1\n",
}

#: kind -> (the fork's edit, upstream's edit, the file marked, upstream's text there, the
#: patch's original, its change, what the user resolves it to); an edit maps paths to text (None: deleted)
CASES = {
    "config-key": (
        {"verl/c.yaml": BASE["verl/c.yaml"].replace("epochs: 3", "epochs: 5")},
        {"verl/c.yaml": BASE["verl/c.yaml"].replace("epochs: 3", "epochs: 4")},
        "verl/c.yaml",
        "  total_epochs: 4\n",
        "  total_epochs: 3\n",
        "  total_epochs: 5\n",
        "  total_epochs: 6  # ours, past upstream's 4\n",
    ),
    "requirement": (
        {"requirements.txt": "numpy\npandas==2.0\nray\n"},
        {"requirements.txt": "numpy\npandas>=1.5\nray\n"},
        "requirements.txt",
        "pandas>=1.5\n",
        "pandas\n",
        "pandas==2.0\n",
        "pandas>=2.0\n",
    ),
    "text-hunk": (
        {"README.md": BASE["README.md"].replace("line b", "line B fork")},
        {"README.md": BASE["README.md"].replace("line b", "line b upstream")},
        "README.md",
        BASE["README.md"].replace("line b", "line b upstream"),
        BASE["README.md"],
        BASE["README.md"].replace("line b", "line B fork"),
        BASE["README.md"].replace("line b", "line B fork, upstream's too"),
    ),
    "add-file": (
        {"verl/added.txt": "ours\n"},
        {"verl/added.txt": "theirs\n"},
        "verl/added.txt",
        "theirs\n",
        "",
        "ours\n",
        "theirs\nours\n",
    ),
    "rename-file": (
        {"verl/moved.py": None, "verl/new/moved.py": "x = 1\n"},
        {"verl/new/moved.py": "y = 2\n"},
        "verl/new/moved.py",
        "y = 2\n",
        "",
        "x = 1\n",
        "y = 2\nx = 1\n",
    ),
    "delete-file": (
        {"old.txt": None},
        {"old.txt": "gone, but upstream edited it\n"},
        "old.txt",
        "gone, but upstream edited it\n",
        "",
        "",
        None,  # the user deletes it all the same
    ),
}


def build(root: Path, *edits: dict[str, str | None]) -> Path:
    files: dict[str, str | None] = dict(BASE)
    for edit in edits:
        files.update(edit)
    for rel, text in files.items():
        if text is not None:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def capture(
    tmp: Path, fork_edit: dict[str, str | None], kind: str, base_edit: dict[str, str | None] | None = None
) -> Path:
    base, fork = build(tmp / "base", base_edit or {}), build(tmp / "fork", base_edit or {}, fork_edit)
    code, out = run("capture", "--from", str(fork), "--base", str(base), "--all", "--out", str(tmp / "ps"))
    assert code == 0 and f" {kind} " in out, out
    manifest = tmp / "ps" / "patchset.toml"
    if kind == "delete-file":  # the default deletes a changed file all the same; this patch asks first
        text = manifest.read_text(encoding="utf-8")
        manifest.write_text(text.replace("[patch.params]\n", '[patch.params]\nif_changed = "conflict"\n'), "utf-8")
    return tmp / "ps"


def view(text: str) -> tuple[str, str, str, str]:
    """Upstream's side, the original, the change, and the file with the conflict cut out."""
    m = re.search(
        r"<<<<<<< upstream: [^\n]*\n(.*?)\|\|\|\|\|\|\| [^\n]*\n(.*?)=======\n(.*?)>>>>>>> [^\n]*\n", text, re.S
    )
    assert m is not None, text
    return m.group(1), m.group(2), m.group(3), text[: m.start()] + "\0" + text[m.end() :]


MANIFEST = """[patchset]
name = "ps"
tag = "Uky"

[[patch]]
id = "{id}"
title = "t"
why = "w"
kind = "{kind}"
target = ["{target}"]

[patch.params]
{params}
"""
