"""Small verl-like git repositories with the history shapes drift and bisect must handle."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

from click.testing import CliRunner, Result

from patchctl.cli.main import cli

SERVER = "verl/server.py"

OLD = """\
def start(config, engine_args):
    return AsyncLLM.from_vllm_config(
        config,
        disable_log_requests=engine_args.disable_log_requests,
    )
"""
NEW = """\
def start(config, engine_args):
    return AsyncLLM.from_vllm_config(
        config,
        enable_log_requests=engine_args.enable_log_requests,
    )
"""

MANIFEST = """
[patchset]
name = "t"
tag = "T"

[[patch]]
id = "log-requests"
title = "enable_log_requests"
why = "vLLM renamed the flag"
kind = "keyword-rename"
target = ["verl/server.py"]
applied_upstream = "{applied}"
drop_when = "{drop}"

[patch.params]
call = "AsyncLLM.from_vllm_config"
old_keyword = "disable_log_requests"
new_keyword = "enable_log_requests"
old_value = "engine_args.disable_log_requests"
new_value = "engine_args.enable_log_requests"

[patch.upstream]
kind = "call-keyword"
call = "AsyncLLM.from_vllm_config"
old_keyword = "disable_log_requests"
new_keyword = "enable_log_requests"
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def patchset(where: Path, applied: str = "0.2.0", drop: str = ">=0.2.0") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "patchset.toml").write_text(MANIFEST.format(applied=applied, drop=drop))
    return where


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


class Repo:
    """A git repository whose commits write whole files: ``commit({"verl/x.py": "..."}, "msg")``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        git(root, "init", "-q", "-b", "main")
        self.commit({"verl/__init__.py": "", "verl/version/version": "0.1.0\n", SERVER: OLD}, "initial")

    def commit(self, files: dict[str, str | None], message: str, tag: str | None = None) -> str:
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                git(self.root, "rm", "-q", rel)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "--allow-empty", "-m", message)
        if tag:
            git(self.root, "tag", tag)
        return git(self.root, "rev-parse", "HEAD")

    def filler(self, n: int, prefix: str = "chore") -> list[str]:
        return [self.commit({f"docs/{prefix}{i}.md": f"{i}\n"}, f"{prefix} {i}") for i in range(n)]
