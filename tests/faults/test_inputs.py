"""Inputs (issue 18, requirement 5): empty path options, BOM files, control characters in names."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.faults.helpers import make_tree, snapshot

from patchctl.cli.main import cli

EMPTY_PATHS = [
    ["apply", "--target", ""],
    ["verify", "-t", ""],
    ["revert", "-t", ""],
    ["apply", "-p", ""],
    ["list", "-p", ""],
    ["capture", "--from", "", "--base", "tree"],
    ["capture", "--from", "tree", "--base", ""],
    ["capture", "--from", "tree", "--base", "tree", "--out", ""],
    ["matrix", "--versions", "0.6.1", "--repo", ""],
    ["train", "-t", "tree", "--out", ""],
    ["train", "-t", "tree", "--python", ""],
    ["migrate", "gpu", "--config", ""],
    ["verify", "--env", "--config", ""],
    ["validate", "gpu", "--out", ""],
    ["validate", "gpu", "--compare", ""],
    ["doctor", ""],
    ["doctor", "--signatures", ""],
]


@pytest.mark.parametrize("argv", EMPTY_PATHS, ids=lambda a: " ".join(x or "''" for x in a))
def test_an_empty_path_option_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    """click reads '' as '.': ``capture --out ''`` replaced the current folder with a patchset."""
    monkeypatch.chdir(tmp_path)
    make_tree(tmp_path / "tree", git=False)
    before = snapshot(tmp_path)
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 2, result.output
    assert "an empty path names nothing; pass a path (. is the current folder)" in result.output
    assert snapshot(tmp_path) == before


# -- a UTF-8 byte-order mark --------------------------------------------------------------------

BOM = "\ufeff"
#: per Python kind: params, a module before, and the same module after the patch
PY_KINDS: dict[str, tuple[dict[str, object], str, str]] = {
    "prelude": (
        {"block": "import os  # T"},
        '"""Doc."""\nimport sys\n',
        '"""Doc."""\n\nimport os  # T\n\nimport sys\n',
    ),
    "guard-import": (
        {"module": "flash_attn"},
        "import sys\nfrom flash_attn import f\n",
        ("import sys\ntry:  # T\n    from flash_attn import f  # T\nexcept ImportError:  # T\n    pass  # T\n"),
    ),
    "keyword-rename": (
        {"call": "make", "old_keyword": "a", "new_keyword": "b", "new_value": "1"},
        "x = make(\n    a=1,\n)\n",
        "x = make(\n    # a=1, # T\n    b=1, # T\n)\n",
    ),
    "keyword-value": (
        {"keyword": "k", "calls": ["make"], "old_value": "1", "value": "2"},
        "x = make(\n    k=1,\n)\n",
        "x = make(\n    # k=1,  # T\n    k=2,  # T\n)\n",
    ),
    "structural": (
        {"scope": "f", "indent": "    ", "above": ["a()"], "before": "    b()\n", "after": "    c()  # T\n"},
        "def f():\n    a()\n    b()\n",
        "def f():\n    a()\n    c()  # T\n",
    ),
}


@pytest.mark.parametrize("kind", sorted(PY_KINDS))
def test_a_bom_is_kept_by_every_python_kind(kind: str) -> None:
    """Python compiles a file that starts with a BOM; patching it must neither refuse it as a
    syntax error nor drop the BOM (the file would differ from upstream in a byte no diff shows)."""
    from patchctl.patchsets.kinds import KINDS
    from patchctl.patchsets.kinds.base import Context, EditStatus
    from patchctl.patchsets.model import Patch, Presence

    params, before, after = PY_KINDS[kind]
    impl = KINDS[kind]
    patch = Patch("p", "t", "w", "T", kind, ("m.py",), impl.parse_params(params, Path("."), Path("x"), "p"))
    ctx = Context(Path("."), "m.py")
    plain = impl.apply(before, patch, ctx)
    assert (plain.status, plain.text) == (EditStatus.CHANGED, after), plain.reason  # the pair itself is right
    edit = impl.apply(BOM + before, patch, ctx)
    assert (edit.status, edit.text) == (EditStatus.CHANGED, BOM + after), edit.reason
    compile((BOM + after).encode(), "m.py", "exec")
    assert impl.check(BOM + after, patch, ctx).presence is Presence.PRESENT
    assert impl.check(BOM + before, patch, ctx).presence is Presence.MISSING
    back = impl.revert(BOM + after, patch, Context(Path("."), "m.py", edit.undo))
    assert back.text == BOM + before


def test_a_bom_file_is_applied_verified_and_reverted_byte_for_byte(tmp_path: Path) -> None:
    from tests.faults.helpers import make_patchset

    tree = make_tree(tmp_path / "tree", git=False)
    init = tree / "verl" / "__init__.py"
    init.write_bytes(b"\xef\xbb\xbf" + init.read_bytes())
    original = init.read_bytes()
    ps = make_patchset(tmp_path / "ps", n_files=0)
    runner = CliRunner()
    result = runner.invoke(cli, ["apply", "-t", str(tree), "-p", str(ps)])
    assert result.exit_code == 0, result.output
    assert b'os.environ.setdefault("FAULT_TEST", "1")' in init.read_bytes()
    assert init.read_bytes().startswith(b"\xef\xbb\xbf") and init.read_bytes().count(b"\xef\xbb\xbf") == 1
    compile(init.read_bytes(), str(init), "exec")
    result = runner.invoke(cli, ["verify", "-t", str(tree), "-p", str(ps)])
    assert result.exit_code == 0 and "verify: ok" in result.output, result.output
    result = runner.invoke(cli, ["revert", "-t", str(tree), "-p", str(ps)])
    assert result.exit_code == 0, result.output
    assert init.read_bytes() == original


def test_an_upstream_rule_sees_through_a_bom() -> None:
    from patchctl.patchsets import upstream
    from patchctl.patchsets.model import UpstreamRule

    rule = UpstreamRule("python-name", ("enable_log_requests",))
    text = BOM + "x = make(enable_log_requests=True)\n"
    assert upstream.find(rule, "m.py", lambda rel: text, "T") is not None


# -- names with control characters --------------------------------------------------------------

FORGED = "evil\nverify: ok\n.py"


def test_a_file_name_cannot_forge_verify_ok(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", git=False)
    (tree / FORGED).write_text("x = 1  # Uky\n")
    result = CliRunner().invoke(cli, ["verify", "-t", str(tree)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert "verify: ok" not in lines and lines[-1] == "verify: FAILED", result.output
    assert '  stray tag  "evil\\nverify: ok\\n.py":1: x = 1  # Uky' in lines


def test_every_output_quotes_the_name_as_git_does(tmp_path: Path) -> None:
    """git status shows such a file as "evil\\nverify: ok\\n.py"; so do list, apply and errors."""
    import subprocess

    tree = make_tree(tmp_path / "tree")
    (tree / FORGED).write_text("x = (\n")  # not valid Python: the error names it
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    shown = subprocess.run(
        ["git", "-C", str(tree), "-c", "core.quotePath=false", "diff", "--cached", "--name-only"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shown == '"evil\\nverify: ok\\n.py"'
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "q"\ntag = "T"\n[[patch]]\nid = "p"\ntitle = "t"\nwhy = "w"\n'
        'kind = "prelude"\ntarget = ["evil\\nverify: ok\\n.py"]\n[patch.params]\n'
        'block = "import os  # T"\n'
    )
    result = CliRunner().invoke(cli, ["list", "-p", str(ps)])
    assert f"    target: {shown}" in result.output.splitlines(), result.output
    result = CliRunner().invoke(cli, ["apply", "-t", str(tree), "-p", str(ps)])
    assert result.exit_code == 2
    assert (
        result.output == f"error: {shown}:1: not valid Python ('(' was never closed); fix the file or restore it "
        "with git checkout\n"
    )


def test_a_table_cell_is_text_not_markup(tmp_path: Path) -> None:
    """``[/]`` in a reason made rich raise (an internal error); ``[red]`` would have styled it."""
    tree = make_tree(tmp_path / "tree", git=False)
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "q"\ntag = "T"\n[[patch]]\nid = "p"\ntitle = "t"\nwhy = "w"\n'
        'kind = "prelude"\ntarget = ["a[/]b\\u0007.py"]\n[patch.params]\n'
        'block = "import os  # T"\n'
    )
    result = CliRunner().invoke(cli, ["verify", "-t", str(tree), "-p", str(ps)])
    assert result.exit_code == 0, result.output
    assert "a[/]b\\a.py" in result.output and "\a" not in result.output


def test_names_a_host_reports_are_quoted() -> None:
    """The agent's reply comes from the host: its names and lines must not add lines either."""
    from patchctl.migrate.verify_remote import AgentReply, mismatches

    reply = AgentReply(
        {"problems": [[FORGED, "missing"]], "tags_only_here": [[FORGED, 3, "x  # Uky\rok"]], "tags_missing_here": []}
    )
    assert mismatches(reply) == (
        '"evil\\nverify: ok\\n.py": missing',
        '"evil\\nverify: ok\\n.py":3: tagged line on the host that the source lacks: x  # Uky\\rok',
    )


def test_a_dry_run_diff_quotes_its_header_as_git_does(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", git=False)
    ps = tmp_path / "ps"
    (ps / "files").mkdir(parents=True)
    (ps / "files" / "x").write_text("x\n")
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "q"\ntag = "T"\n[[patch]]\nid = "p"\ntitle = "t"\nwhy = "w"\n'
        'kind = "add-file"\ntarget = ["new\\n+++ b/README.md"]\n[patch.params]\n'
        'source = "files/x"\n'
    )
    result = CliRunner().invoke(cli, ["apply", "-t", str(tree), "-p", str(ps), "--dry-run", "--diff"])
    assert result.exit_code == 0, result.output
    assert '+++ "b/new\\n+++ b/README.md"' in result.output.splitlines()
    assert "+++ b/README.md" not in result.output.splitlines()
