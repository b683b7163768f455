"""capture refuses to guess: unanchorable and half-tagged edits are named and left out; the
exit code is 1 when nothing was written, 0 when a proven patchset of the rest was."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from patchctl.cli.main import cli

REPEATED = "def f():\n" + "    a = 1\n    b = 2\n" * 4


def tree(root: Path, files: dict[str, str]) -> Path:
    """A small tree; ``verl/__init__.py`` makes it one that ``patchctl apply`` accepts."""
    for rel, text in {"verl/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.output


def capture(tmp: Path, base: dict[str, str], fork: dict[str, str], *extra: str) -> tuple[int, dict, str]:
    b, f = tree(tmp / "base", base), tree(tmp / "fork", fork)
    code, out, _ = run("capture", "--from", str(f), "--base", str(b), "--out", str(tmp / "out"), "--json", *extra)
    _, _, human = run("capture", "--from", str(f), "--base", str(b), "--dry-run", *extra)
    return code, json.loads(out), human


def test_an_anchor_that_fits_several_places_is_left_out(tmp_path: Path) -> None:
    fork = REPEATED.replace("    a = 1\n", "    a = 1\n    c = 3  # Uky\n", 2).replace("    c = 3  # Uky\n", "", 1)
    code, doc, human = capture(
        tmp_path, {"m.py": REPEATED, "keep.py": "x = 1\n"}, {"m.py": fork, "keep.py": "x = 1\ny = 2  # Uky\n"}
    )
    assert code == 0  # a proven patchset was written; the note and the left-out line say what it lacks
    assert "1 edit(s) left out" in doc["notes"][-1]
    assert doc["left_out"] == [{"path": "m.py", "line": 5, "reason": doc["left_out"][0]["reason"]}]
    assert (
        "fit 2 places in BASE even with up to 3 statements" in doc["left_out"][0]["reason"]
        and "--include m.py:5" in human
    )
    assert [p["path"] for p in doc["patches"]] == ["keep.py"]  # the rest is still captured and written
    assert (tmp_path / "out" / "patchset.toml").is_file()


def test_include_takes_the_occurrence_at_that_line(tmp_path: Path) -> None:
    fork = REPEATED.replace("    b = 2\n", "    b = 2\n    c = 3  # Uky\n", 3).replace("    c = 3  # Uky\n", "", 2)
    code, doc, _ = capture(tmp_path, {"m.py": REPEATED}, {"m.py": fork}, "--include", "m.py:8")
    assert code == 0, doc
    manifest = (tmp_path / "out" / "patchset.toml").read_text()
    assert "occurrence = 3" in manifest
    base = tree(tmp_path / "again", {"m.py": REPEATED})
    code, _, out = run("apply", "--target", str(base), "--patchset", str(tmp_path / "out"))
    assert code == 0, out
    assert (base / "m.py").read_text() == fork


def test_a_statement_only_partly_tagged_is_left_out(tmp_path: Path) -> None:
    base = "x = dict(\n    a=1,\n    b=2,\n)\n"
    fork = "x = dict(\n    a=10,\n    b=20,  # Uky\n)\n"
    code, doc, human = capture(tmp_path, {"m.py": base}, {"m.py": fork})
    assert code == 1 and doc["patches"] == []
    assert doc["left_out"][0]["line"] == 2 and "without the tag" in doc["left_out"][0]["reason"]
    assert "left out: m.py:2:" in human
    assert not (tmp_path / "out").exists(), "nothing captured, nothing written"
    code, doc, _ = capture(tmp_path / "2", {"m.py": base}, {"m.py": fork}, "--include", "m.py:3")
    assert code == 0 and [p["kind"] for p in doc["patches"]] == ["structural"]


def test_edits_no_kind_can_express_are_left_out(tmp_path: Path) -> None:
    code, doc, _ = capture(tmp_path, {"m.py": "x = 1\n"}, {"m.py": "x = (1  # Uky\n"})
    assert code == 1 and doc["left_out"][0]["path"] == "m.py"
    assert "does not parse" in doc["left_out"][0]["reason"]


def test_a_doc_edit_is_a_text_hunk(tmp_path: Path) -> None:
    code, doc, _ = capture(tmp_path, {"README.md": "# verl\n"}, {"README.md": "# verl\nforked  <!-- # Uky -->\n"})
    assert code == 0 and [(p["path"], p["kind"]) for p in doc["patches"]] == [("README.md", "text-hunk")]


def test_untagged_edits_are_noted_and_captured_only_with_all(tmp_path: Path) -> None:
    base, fork = {"m.py": "def f():\n    return 1\n"}, {"m.py": "def f():\n    return 2\n", "new.txt": "hello\n"}
    code, doc, _ = capture(tmp_path, base, fork)
    assert code == 0 and doc["patches"] == [] and "1 untagged change(s) not captured" in doc["notes"][0]
    code, doc, _ = capture(tmp_path / "all", base, fork, "--all")
    assert code == 0
    assert {(p["path"], p["kind"], p["tagged"]) for p in doc["patches"]} == {
        ("m.py", "structural", False),
        ("new.txt", "add-file", False),
    }


def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    fork = tree(tmp_path / "fork", {"m.py": "x = 1  # Uky\n"})
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine\n")
    code, _, out = run("capture", "--from", str(fork), "--base", str(fork), "--out", str(tmp_path / "busy"))
    assert code == 2 and out.strip().splitlines() == [
        f"error: --out {tmp_path / 'busy'}: exists and is not a patchset directory; choose a new or empty directory"
    ]
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["notes.txt"]
    code, _, out = run("capture", "--from", str(fork), "--base", "v9.9", "--out", str(tmp_path / "o"))
    assert code == 2 and len(out.strip().splitlines()) == 1 and "--base v9.9" in out
    code, _, out = run(
        "capture", "--from", str(fork), "--base", str(fork), "--out", str(tmp_path / "o"), "--include", "m.py"
    )
    assert code == 2 and "write FILE:LINE" in out
    assert not (tmp_path / "o").exists()
