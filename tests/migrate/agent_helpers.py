"""Running the host-side agent here exactly as ssh runs it there: ``python3 -c BOOTSTRAP`` + JSON stdin."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from patchctl.migrate import verify_remote
from patchctl.remote import ssh


def agent(request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """The agent's reply to ``request``, run as ssh runs it on a host; ``timeout``: seconds after
    which a hung agent fails the test (subprocess.TimeoutExpired) instead of hanging it."""
    python = shutil.which("python3") or "python3"
    argv = [python, "-c", ssh._BOOTSTRAP.format(code=verify_remote._agent_b64())]
    done = subprocess.run(argv, input=json.dumps(request), capture_output=True, text=True, check=False, timeout=timeout)
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def entry(root: Path, rel: str) -> list[object]:
    return [rel, "f", hashlib.sha256((root / rel).read_bytes()).hexdigest(), False]


def req(root: Path, action: str, manifest: list[list[object]], **kw: Any) -> dict[str, Any]:
    base = {
        "root": str(root),
        "action": action,
        "manifest": manifest,
        "rendered": {},
        "delete": False,
        "max_delete": 100,
        "tags": {"pattern": r"#\s*(Uky)\b", "needles": ["Uky"], "expected": []},
        "provenance": {"commit": "abc"},
    }
    return {**base, **kw}


def placed(root: Path, files: list[str]) -> None:
    (root / ".patchctl").mkdir(parents=True, exist_ok=True)
    (root / ".patchctl" / "manifest.json").write_text(json.dumps({"format": 1, "files": files}))
