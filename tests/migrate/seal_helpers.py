"""The host agent's seal, driven as migrate drives it: a prescan order with ``"seal": true`` first,
its one-line answer read, then EOF or a request (see agent_seal)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from agent_helpers import entry, req

from patchctl.migrate import verify_remote
from patchctl.remote import ssh

RULE = [r"#\s*(Uky)\b", ["Uky"]]
FILES = {
    **{f"pkg/m{i}.py": f"value = {i:04d}\n" for i in range(5)},
    "pkg/t.py": "y = 2  # Uky\n",
    "logs/run.txt": "a log the source placed\n",  # in a folder the walk leaves out: a seal's extra
}
RENDERED = {"gen/cfg.py": "x = 1\n"}


def tree(root: Path, age: bool = True) -> dict[str, Any]:
    """FILES under ``root`` (left to age past the file-system clock's tick unless ``age`` is off)
    and the finish request that places them, with a generated file, asking for seal "S1"."""
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if age:
        time.sleep(0.05)
    tags = {"pattern": RULE[0], "needles": RULE[1], "expected": [["pkg/t.py", 1, "y = 2  # Uky"]]}
    return req(root, "finish", [entry(root, rel) for rel in FILES], rendered=RENDERED, tags=tags, seal_as="S1")


def start(root: Path, seal: bool = True, rehash: bool = False) -> subprocess.Popen[bytes]:
    """The agent as ssh starts it on a host, its prescan order sent (``rehash``: --checksum)."""
    argv = [shutil.which("python3") or "python3", "-c", ssh._BOOTSTRAP.format(code=verify_remote._agent_b64())]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None
    order: dict[str, Any] = {"root": str(root), "rule": RULE, "rehash": rehash}
    if seal:
        order["seal"] = True
    p.stdin.write(json.dumps({"prescan": order}).encode() + b"\n")
    p.stdin.flush()
    return p


def first_line(p: subprocess.Popen[bytes], timeout: float = 20) -> bytes:
    """The agent's first line, read while its stdin is still open (a hung agent fails the test)."""
    assert p.stdout is not None
    fd, got, deadline = p.stdout.fileno(), b"", time.monotonic() + timeout
    while not got.endswith(b"\n"):
        assert select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0], f"no line in {timeout} s"
        chunk = os.read(fd, 1)  # byte by byte: nothing past the line is taken from the pipe
        assert chunk, "EOF before the first line"
        got += chunk
    return got


def sealed(root: Path, rehash: bool = False) -> str | None:
    """The agent's answer to a prescan seal request; it must then exit on EOF writing nothing more."""
    p = start(root, rehash=rehash)
    answer = json.loads(first_line(p))
    out, err = p.communicate(b"", timeout=20)
    assert (p.returncode, out) == (0, b""), err
    assert list(answer) == ["sealed"]
    value: str | None = answer["sealed"]
    return value


def keep_size_and_mtime(path: Path, text: str) -> None:
    """Write ``text`` (as long as the old content) and put the old mtime back: only ctime tells."""
    st = path.stat()
    assert len(text.encode()) == st.st_size
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
