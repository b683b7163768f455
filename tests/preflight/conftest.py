"""Helpers for building environments the CPU machine does not have: a minimal variable set,
fake packages on PYTHONPATH, a temporary CUDA prefix, a fake ldconfig."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from patchctl.preflight import Context, Status, run
from patchctl.preflight.model import CheckResult


@pytest.fixture
def make_ctx(tmp_path: Path) -> Callable[..., Context]:
    """A context whose variables are only PATH and HOME (plus ``env``), so nothing from the machine
    running the tests leaks into a constructed case."""

    def make(env: dict[str, str] | None = None, **fields: object) -> Context:
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home")}
        fields.setdefault("timeout", 60.0)
        return Context(env={**base, **(env or {})}, **fields)

    return make


@pytest.fixture
def fake_site(tmp_path: Path) -> Callable[[dict[str, str]], str]:
    """``fake_site({"vllm/__init__.py": "..."})``: a directory of stand-in packages for PYTHONPATH."""
    count = [0]

    def make(files: dict[str, str]) -> str:
        count[0] += 1
        root = tmp_path / f"site{count[0]}"
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        return str(root)

    return make


def _one(ctx: Context, name: str) -> CheckResult:
    (result,) = run(ctx, only=[name]).results
    assert "Traceback" not in result.value, result.value  # missing parts are stated, never a traceback
    if result.status in (Status.WARN, Status.FAIL):
        assert result.fix, f"{name}: a {result.status.value} must say what to do"
    return result


@pytest.fixture
def one() -> Callable[[Context, str], CheckResult]:
    """``one(ctx, "torch")``: run a single registered check, its probes included."""
    return _one
