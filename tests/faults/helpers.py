"""Trees, patchsets and a strict snapshot for the fault tests, which run patchctl as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PRELUDE = '''
[[patch]]
id = "init-prelude"
title = "a block before the first import"
why = "exercises a rewrite of an existing file"
kind = "prelude"
target = ["verl/__init__.py"]
[patch.params]
block = """
# T: set before anything is imported
import os
os.environ.setdefault("FAULT_TEST", "1")"""
'''

ADD_FILE = """
[[patch]]
id = "{id}"
title = "a shipped file"
why = "exercises a new file{why}"
kind = "add-file"
target = ["{target}"]
[patch.params]
source = "files/{source}"
mode = "{mode}"
"""


def make_tree(root: Path, *, git: bool = True) -> Path:
    """A minimal verl tree (what ``open_tree`` needs), committed to git when ``git``."""
    (root / "verl" / "version").mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text('"""verl."""\n\nimport sys\n\nVALUE = 1\n')
    (root / "verl" / "version" / "version").write_text("0.6.1\n")
    (root / "README.md").write_text("tree\n")
    if git:
        env = {**os.environ, **GIT_IDENT}
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
        subprocess.run(["git", "-C", str(root), "commit", "-qm", "base"], check=True, env=env)
    return root


GIT_IDENT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def make_patchset(root: Path, n_files: int = 2, *, prelude: bool = True) -> Path:
    """A patchset with a prelude edit and ``n_files`` add-files, some in folders that do not exist."""
    (root / "files").mkdir(parents=True)
    parts = ['[patchset]\nname = "fault"\ntag = "T"\n']
    if prelude:
        parts.append(PRELUDE)
    for i in range(n_files):
        target = f"added/deep{i % 3}/f{i:03d}.txt" if i % 2 else f"top{i:03d}.md"
        (root / "files" / f"f{i:03d}").write_text(f"file {i}\n" * (1 + i % 5))
        parts.append(
            ADD_FILE.format(
                id=f"file-{i:03d}", target=target, source=f"f{i:03d}", mode="0755" if i % 4 == 1 else "0644", why=""
            )
        )
    (root / "patchset.toml").write_text("".join(parts))
    return root


KEYWORD = """
[[patch]]
id = "load-mode"
title = "read-only loads"
why = "a second patch in the prelude's file"
kind = "keyword-value"
target = ["verl/__init__.py"]
[patch.params]
keyword = "mode"
calls = ["load"]
old_value = '"a"'
value = '"r"'
"""


def make_shared_file_tree(root: Path) -> Path:
    """A git tree whose verl/__init__.py both patches of :func:`make_shared_file_patchset` change."""
    make_tree(root)
    (root / "verl" / "__init__.py").write_text('"""verl."""\n\nimport sys\n\ncfg = load(path, mode="a")\n')
    env = {**os.environ, **GIT_IDENT}
    subprocess.run(["git", "-C", str(root), "commit", "-qam", "a call the second patch changes"], check=True, env=env)
    return root


def make_shared_file_patchset(root: Path) -> Path:
    """A prelude and a keyword-value patch on one file: a partial revert leaves one in it."""
    root.mkdir(parents=True)
    (root / "patchset.toml").write_text('[patchset]\nname = "fault"\ntag = "T"\n' + PRELUDE + KEYWORD)
    return root


def snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root`` but .git: files by bytes and mode, links by target, folders too,
    so an empty folder or a temp file left behind shows."""
    out: dict[str, object] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d == ".git")]
        rel = os.path.relpath(folder, root)
        out[rel + "/"] = "dir"
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            key = os.path.normpath(os.path.join(rel, name))
            if os.path.islink(path):
                out[key] = ("link", os.readlink(path))
            else:
                st = os.stat(path)
                out[key] = (Path(path).read_bytes(), st.st_mode & 0o7777)
    return out


def without_record(snap: dict[str, object]) -> dict[str, object]:
    """The record holds timestamps: compare it by presence, everything else byte for byte."""
    return {k: (v if k != ".patchctl/applied.json" else "record") for k, v in snap.items()}


def patchctl(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "patchctl", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_IDENT, **(env or {})},
        timeout=timeout,
    )


def run(*args: str) -> tuple[int, str]:
    """patchctl in this process (click's runner): its exit code and everything it printed."""
    from click.testing import CliRunner

    from patchctl.cli.main import cli

    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def one_error(out: str) -> str:
    """The single ``error: ...`` line a refusal must print, and nothing else."""
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    return lines[0]
