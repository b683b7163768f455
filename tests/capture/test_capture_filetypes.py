"""capture, apply, verify and revert of a fork that changed every file type (issue 27.4), on real
verl releases: 0.6.1 as the fork's base, 0.9.1 as the next upstream."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.capture.shapesfork import DELETED, PNG, PNG_BYTES, RENAMED, REQUIREMENTS, YAML, make_fork, upstream
from tests.clirun import run
from tests.conftest import snapshot

from patchctl import releases

KINDS = {
    "ppo-trainer-uky-smoke": "config-key",
    "ppo-trainer-total-epochs": "config-key",
    "pyproject-line-length": "config-key",
    "requirements-numpy": "requirement",
    "requirements-math-verify": "requirement",
    "requirements-wandb": "requirement",
    "readme-hunk": "text-hunk",
    "gitignore-hunk": "text-hunk",
    "delete-print-cfg-py": "delete-file",
    "move-diagnose-env-py": "rename-file",
    "diagnose-env-module": "structural",
    "uky-arch-png": "blob",
}


@pytest.fixture
def fork(release_tree) -> Path:
    tree = release_tree("0.6.1")
    upstream(tree)
    make_fork(tree)
    return tree


def tree_of(version: str, dest: Path) -> Path:
    shutil.copytree(releases.materialize(version), dest, symlinks=True)
    return dest


@pytest.fixture(scope="module")
def captured(release_cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fork captured once with --all (every test below only reads it)."""
    tmp = tmp_path_factory.mktemp("captured")
    fork = tree_of("0.6.1", tmp / "fork")
    upstream(fork)
    make_fork(fork)
    code, out = run("capture", "--from", str(fork), "--base", "upstream", "--out", str(tmp / "mine"), "--all", "--json")
    assert code == 0, out
    doc = json.loads(out)
    assert {p["id"]: p["kind"] for p in doc["patches"]} == KINDS
    assert doc["left_out"] == [] and doc["outside"] == []
    return tmp / "mine"


def test_every_file_type_is_captured_and_proven_byte_identical(fork: Path, tmp_path: Path) -> None:
    code, out = run("capture", "--from", str(fork), "--base", "upstream", "--out", str(tmp_path / "mine"), "--all")
    assert code == 0, out
    assert "proven byte-identical on" in out, out


def test_without_all_the_proof_names_what_is_outside_the_captured_scope(fork: Path, tmp_path: Path) -> None:
    code, out = run("capture", "--from", str(fork), "--base", "upstream", "--out", str(tmp_path / "mine"))
    assert code == 0, out
    assert "byte-identical" not in out
    assert (
        "outside the captured scope: 5 file(s) the fork changed are not re-created by it: .gitignore, README.md, "
        f"{PNG}, requirements.txt, {DELETED} (the notes above say why)"
    ) in " ".join(out.split())
    code, out = run("capture", "--from", str(fork), "--base", "upstream", "--dry-run", "--json")
    assert json.loads(out)["outside"] == [".gitignore", "README.md", PNG, "requirements.txt", DELETED]


def test_the_patchset_carries_to_the_next_release(captured: Path, release_tree) -> None:
    """verl 0.9.1 moved the trainer block, rewrote the README's top and reordered requirements."""
    tree = release_tree("0.9.1")
    reordered = "".join(sorted(REQUIREMENTS.splitlines(keepends=True)[1:])) + "vllm>=0.8\n"
    (tree / RENAMED[0]).chmod(0o755)  # upstream made it executable: the move keeps that
    upstream(tree, reordered, "*.pyc\noutputs\ntmp/\nwandb/\n")
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--patchset", str(captured), "--json")
    assert code == 0, out
    assert {r["patch"]: r["status"] for r in json.loads(out)["results"]} == dict.fromkeys(KINDS, "applied")
    assert (tree / PNG).read_bytes() == PNG_BYTES
    assert not (tree / DELETED).exists() and not (tree / RENAMED[0]).exists()
    assert "import sys  # Uky: the exit code" in (tree / RENAMED[1]).read_text()
    assert (tree / RENAMED[1]).stat().st_mode & 0o777 == 0o755
    reqs = (tree / "requirements.txt").read_text()
    assert "numpy==1.26.4  # Uky\n" in reqs and "math-verify==0.7.0  # Uky\n" in reqs and "wandb" not in reqs
    assert (tree / ".gitignore").read_text() == "*.pyc\noutputs\ntmp/\ncheckpoints/\nwandb/\n"

    code, out = run("apply", "--target", str(tree), "--patchset", str(captured), "--json")
    assert code == 0 and set(r["status"] for r in json.loads(out)["results"]) == {"already-applied"}
    code, out = run("verify", "--target", str(tree), "--patchset", str(captured))
    assert code == 0, out

    code, out = run("revert", "--target", str(tree), "--patchset", str(captured))
    assert code == 0, out
    after = snapshot(tree)
    assert {k: v for k, v in after.items() if not k.startswith(".patchctl")} == before


@pytest.mark.parametrize(
    "tamper, patch, says",
    [
        (
            lambda t: (t / YAML).write_text(
                (t / YAML).read_text().replace("total_epochs: 3  # Uky", "total_epochs: 9")
            ),
            "ppo-trainer-total-epochs",
            "key trainer.total_epochs is 'total_epochs: 9' here",
        ),
        (
            lambda t: (t / "requirements.txt").write_text(
                (t / "requirements.txt").read_text().replace("==1.26.4", "==2.0")
            ),
            "requirements-numpy",
            "package numpy is 'numpy==2.0  # Uky' here",
        ),
        (
            lambda t: (t / PNG).write_bytes(PNG_BYTES[:-1]),
            "uky-arch-png",
            "is neither the shipped files/docs/uky_arch.png",
        ),
        (
            lambda t: (t / RENAMED[0]).write_text("back\n"),
            "move-diagnose-env-py",
            "both scripts/diagnose.py and scripts/tools/diagnose_env.py exist",
        ),
        (lambda t: (t / DELETED).write_text("x\n"), "delete-print-cfg-py", "is still there"),
        (
            lambda t: (t / "README.md").write_text((t / "README.md").read_text().replace("[Our cluster]", "[Cluster]")),
            "readme-hunk",
            "upstream has '- [Cluster](docs/uky.md)'",
        ),
    ],
)
def test_verify_fails_on_a_tampered_target(captured: Path, tmp_path: Path, tamper, patch: str, says: str) -> None:
    tree = tree_of("0.6.1", tmp_path / "target")
    upstream(tree)
    code, out = run("apply", "--target", str(tree), "--patchset", str(captured))
    assert code == 0, out
    tamper(tree)
    code, out = run("verify", "--target", str(tree), "--patchset", str(captured), "--json")
    assert code != 0
    row = next(r for r in json.loads(out)["patches"] if r["patch"] == patch)
    assert row["status"] in ("modified", "missing") and says in row["reason"], row


def small(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"verl/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_json_config_is_captured_by_key_and_an_edit_no_key_holds_as_hunks(tmp_path: Path) -> None:
    ds = '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2\n  }\n}\n'
    yaml = "# verl's config\ntrainer:\n  epochs: 1\n"
    base = small(tmp_path / "base", {"ds.json": ds, "c.yaml": yaml})
    fork = small(
        tmp_path / "fork",
        {
            "ds.json": ds.replace('"stage": 2\n', '"offload": true,\n    "stage": 3\n'),
            "c.yaml": yaml.replace("epochs: 1", "epochs: 2  # Uky") + "# the end  # Uky\n",  # a line no key holds
        },
    )
    code, out = run(
        "capture", "--from", str(fork), "--base", str(base), "--out", str(tmp_path / "o"), "--all", "--json"
    )
    assert code == 0, out
    doc = json.loads(out)
    assert [(p["id"], p["kind"]) for p in doc["patches"]] == [
        ("c-hunk", "text-hunk"),
        ("ds-offload", "config-key"),
        ("ds-stage", "config-key"),
    ]
    assert doc["notes"] == ["c.yaml: an edit outside any key; the file is carried as text hunks instead"]
    assert doc["outside"] == []


@pytest.mark.parametrize(
    ("rel", "was", "now", "kind"),
    [
        ("requirements.txt", "torch==2.1\nnumpy\nray>=2.0", "torch==2.1\nnumpy\nray>=2.40", "requirement"),
        ("NOTES.md", "# Notes\n\nkeep this\nlast line", "# Notes\n\nkeep this\nlast line, ours", "text-hunk"),
    ],
)
def test_a_last_line_without_a_line_break_is_carried_byte_for_byte(
    tmp_path: Path, rel: str, was: str, now: str, kind: str
) -> None:
    """A file whose last line has no line break, changed on that line: the piece keeps the file
    without one, so the proof holds and apply/revert give the fork's and upstream's exact bytes
    (the piece used to gain a line break, and the file fell outside the captured scope)."""
    base = small(tmp_path / "base", {rel: was})
    fork = small(tmp_path / "fork", {rel: now})
    out = tmp_path / "o"
    code, text = run("capture", "--from", str(fork), "--base", str(base), "--out", str(out), "--all", "--json")
    assert code == 0, text
    doc = json.loads(text)
    assert [p["kind"] for p in doc["patches"]] == [kind] and doc["outside"] == [], doc
    target = shutil.copytree(base, tmp_path / "target")
    assert run("apply", "--patchset", str(out), "--target", str(target))[0] == 0
    assert (target / rel).read_bytes() == now.encode()
    assert run("revert", "--patchset", str(out), "--target", str(target))[0] == 0
    assert (target / rel).read_bytes() == was.encode()
