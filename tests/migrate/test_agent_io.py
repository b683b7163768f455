"""``agent_io``: the host agent's JSON without json's import, and its temporary files. Checked in a
fresh ``python3 -I -S`` as a host runs it (in pytest, json is imported already, and the C
scanner behaves differently without it), against json itself."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from patchctl.migrate import agent_io

DOCS = [
    '{"prescan": {"root": "/r", "rule": ["#\\\\s*(Uky)\\\\b", ["Uky"]], "rehash": false, "seal": true}}\n',
    ' \t[1, -2.5e3, null, true, false, "\\u00e9\\ud83d\\ude00", {"": []}] \r\n',
    "NaN",
    "-Infinity",
    '"only a string"',
    "12345678901234567890123",
    "   {}",  # an odd count of blanks before it
]
BAD = ["", " ", "{", '"a\x01b"', "{half", '{"a": 1', '"abc', "nul", "1 2", '{"a": 1}{}', "\ufeff{}", "[1,]", "{'a': 1}"]
TEXTS = ["plain", 'quote " and \\ backslash', "new\nline\ttab\x00nul", "é and 😀", "\udcff surrogate"]


NO_C_JSON = "import sys\nsys.modules['_json'] = None  # a python without json's C half\n"


def run_fresh(code: str, before: str = "") -> str:
    """``code`` after agent_io's source, in a fresh isolated python3 like a host's."""
    source = before + Path(agent_io.__file__).read_text() + "\n" + code
    done = subprocess.run([sys.executable, "-I", "-S", "-c", source], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_loads_reads_each_document_as_json_does_without_importing_json() -> None:
    code = f"""
import sys
docs = {DOCS!r}
got = [loads(d) for d in docs]
print(repr("json" in sys.modules or "re" in sys.modules))
import json
for d, g in zip(docs, got):
    want = json.loads(d)
    assert repr(g) == repr(want), (d, g, want)
print("same")
"""
    assert run_fresh(code).split() == ["False", "same"]


@pytest.mark.parametrize("bad", BAD)
def test_loads_refuses_what_json_refuses_with_jsons_error(bad: str) -> None:
    """Each in a fresh process: the first error is the one raised before json.decoder is imported."""
    code = f"""
try:
    loads({bad!r})
except ValueError as exc:
    print(type(exc).__name__)
else:
    print("accepted")
"""
    assert run_fresh(code).split() == ["JSONDecodeError"]


def test_quote_writes_a_string_as_json_does() -> None:
    code = f"""
import sys
quoted = [quote(t) for t in {TEXTS!r}]
print(repr("json" in sys.modules))
import json
assert quoted == [json.dumps(t) for t in {TEXTS!r}], quoted
print("same")
"""
    assert run_fresh(code).split() == ["False", "same"]


def test_without_jsons_c_half_json_itself_reads_and_quotes() -> None:
    code = f"""
import json
assert [repr(loads(d)) for d in {DOCS!r}] == [repr(json.loads(d)) for d in {DOCS!r}]
assert [quote(t) for t in {TEXTS!r}] == [json.dumps(t) for t in {TEXTS!r}]
for d in {BAD!r}:
    try:
        loads(d)
    except ValueError:
        continue
    raise AssertionError(d)
print("same")
"""
    assert run_fresh(code, NO_C_JSON).split() == ["same"]


def test_dumps_is_json_dumps() -> None:
    doc = {"b": [1, None], "a": "é"}
    assert agent_io.dumps(doc, separators=(",", ":")) == json.dumps(doc, separators=(",", ":"))


def test_a_temp_file_is_new_private_and_never_made_through_a_link(tmp_path: Path) -> None:
    fds = set(os.listdir("/proc/self/fd"))
    made = []
    for _ in range(3):
        fd, path = agent_io.temp_file(str(tmp_path))
        os.close(fd)
        made.append(path)
        assert os.path.dirname(path) == str(tmp_path) and os.path.basename(path).startswith(".patchctl-")
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600 and os.path.getsize(path) == 0
    assert len(set(made)) == 3 and set(os.listdir("/proc/self/fd")) == fds


def test_a_taken_name_is_never_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name that exists (a file, or a link someone planted) is passed over, never opened."""
    names = iter([b"\x01" * 8, b"\x01" * 8, b"\x02" * 8])
    monkeypatch.setattr(os, "urandom", lambda n: next(names))
    planted = tmp_path / (".patchctl-" + (b"\x01" * 8).hex())
    os.symlink(tmp_path / "elsewhere", planted)
    fd, path = agent_io.temp_file(str(tmp_path))
    os.close(fd)
    assert path.endswith((b"\x02" * 8).hex()) and not (tmp_path / "elsewhere").exists()


def test_a_folder_whose_every_name_is_taken_is_an_error_not_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "urandom", lambda n: b"\x03" * n)
    (tmp_path / (".patchctl-" + (b"\x03" * 8).hex())).write_text("someone's")
    with pytest.raises(FileExistsError, match="no free temporary name"):
        agent_io.temp_file(str(tmp_path))
