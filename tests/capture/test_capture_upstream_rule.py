"""capture's upstream rule for a keyword rename is the call's, and its proof blames one patch, not a file.

Issue 15, on real releases: transformers renamed ``torch_dtype`` to ``dtype``, and verl 0.6.1's
``transformer_impl.py`` already has ``dtype=torch.int32`` in an unrelated call (line 809). A rule
"``dtype`` appears in the file" held on BASE, so the proof failed and the whole file was left out.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git, snapshot

from patchctl import releases
from patchctl.capture import inplace

ENGINE = "verl/workers/engine/fsdp/transformer_impl.py"
VLLM = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
RENAME = (
    "                torch_dtype=torch_dtype,\n",
    "                # torch_dtype=torch_dtype, # Uky\n                dtype=torch_dtype, # Uky\n",
)
MODE = ("        self.mode = None\n", '        self.mode = "init"  # Uky: a named mode from the start\n')
RULE = (
    '{ kind = "call-keyword", call = "auto_class.from_pretrained", old_keyword = "torch_dtype", new_keyword = "dtype" }'
)


def edit(tree: Path, rel: str, *pairs: tuple[str, str]) -> None:
    path = tree / rel
    text = path.read_text()
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)


@pytest.fixture
def fork(release_tree) -> Path:
    """verl 0.6.1 with the uky vLLM rename and, in FSDPEngine, torch_dtype= -> dtype= and one more edit."""
    tree = release_tree("0.6.1")
    code, out = run("apply", "--target", str(tree), "--only", "vllm-enable-log-requests")
    assert code == 0, out
    edit(tree, ENGINE, RENAME, MODE)
    return tree


def capture(fork: Path, out: Path) -> tuple[int, dict]:
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out), "--json")
    return code, json.loads(text)


def apply(tree: Path, patchset: Path) -> dict[str, dict]:
    code, out = run("apply", "--target", str(tree), "--patchset", str(patchset), "--json")
    assert code == 0, out
    return {r["patch"]: r for r in json.loads(out)["results"]}


def test_rename_whose_new_name_occurs_elsewhere_is_captured(fork: Path, tmp_path: Path) -> None:
    code, doc = capture(fork, tmp_path / "mine")
    assert code == 0 and doc["left_out"] == [], doc
    kinds = {p["id"]: (p["kind"], p["path"]) for p in doc["patches"]}
    assert kinds["transformer-build-module"] == ("keyword-rename", ENGINE)
    assert kinds["transformer-impl-init"] == ("structural", ENGINE)
    manifest = (tmp_path / "mine" / "patchset.toml").read_text()
    assert f"upstream = {RULE}" in manifest
    assert "python-name" not in manifest
    pristine = tmp_path / "pristine"
    shutil.copytree(releases.materialize("0.6.1"), pristine, symlinks=True)
    assert {r["status"] for r in apply(pristine, tmp_path / "mine").values()} == {"applied"}
    assert snapshot(pristine)[ENGINE] == snapshot(fork)[ENGINE]


@pytest.mark.parametrize("version", ["0.6.0", "0.7.0"])
def test_applied_where_only_an_unrelated_use_of_the_name_exists(
    fork: Path, release_tree, tmp_path: Path, version: str
) -> None:
    """Both releases have `dtype=torch.int32` in another call of the file, and the call still passes torch_dtype=."""
    capture(fork, tmp_path / "mine")
    other = release_tree(version)
    assert "dtype=torch.int32" in (other / ENGINE).read_text()
    result = apply(other, tmp_path / "mine")["transformer-build-module"]
    assert result["status"] == "applied", result
    assert "                dtype=torch_dtype, # Uky\n" in (other / ENGINE).read_text()


def test_superseded_where_the_call_itself_changed(fork: Path, release_tree, tmp_path: Path) -> None:
    """0.7.0 passes enable_log_requests itself (through a kwargs dict); a 0.7.0 whose from_pretrained
    call passes dtype= is the same change upstream for the other patch."""
    capture(fork, tmp_path / "mine")
    other = release_tree("0.7.0")
    edit(other, ENGINE, ("                torch_dtype=torch_dtype,\n", "                dtype=torch_dtype,\n"))
    git(other, "commit", "-qam", "upstream renames the keyword")
    results = apply(other, tmp_path / "mine")
    assert results["transformer-build-module"]["status"] == "superseded-upstream"
    assert results["transformer-build-module"]["reason"] == (
        f"upstream's auto_class.from_pretrained(...) at {ENGINE}:218 passes dtype= (line 220) and no torch_dtype=; "
        "the patch is not needed"
    )
    assert results["vllm-async-server-run-server"]["status"] == "superseded-upstream"
    assert (
        "passes enable_log_requests= through **kwargs (built at line 414)"
        in results["vllm-async-server-run-server"]["reason"]
    )
    assert results["transformer-impl-init"]["status"] == "applied"


def test_a_failed_proof_blames_the_patch_and_keeps_the_rest_of_the_file(
    fork: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the old rule forced on (the name anywhere in the file), the proof fails for that patch alone."""

    def old_rule(draft, base_text: str, tag: str) -> tuple[dict, None]:
        return {"kind": "python-name", "names": [draft.params["new_keyword"]]}, None

    monkeypatch.setattr(inplace, "_call_rule", old_rule)
    code, doc = capture(fork, tmp_path / "mine")
    assert code == 0  # the proven rest is written; the left-out edit is listed
    assert doc["left_out"] == [
        {
            "path": ENGINE,
            "line": 208,
            "reason": (
                "patch transformer-build-module (keyword-rename) does not reproduce its edit from BASE: "
                "applied to BASE it ends superseded-upstream: upstream already uses dtype "
                f"({ENGINE}:809); the patch is not needed; this edit is left out, the file's other captured "
                "edits are kept"
            ),
        }
    ]
    assert {p["id"] for p in doc["patches"] if p["path"] == ENGINE} == {"transformer-impl-init"}
    pristine = tmp_path / "pristine"
    shutil.copytree(releases.materialize("0.6.1"), pristine, symlinks=True)
    apply(pristine, tmp_path / "mine")
    want = (pristine / ENGINE).read_text()
    assert want == (fork / ENGINE).read_text().replace(RENAME[1], RENAME[0])  # the mode edit, not the rename


def test_a_rule_that_holds_on_base_is_not_attached(fork: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the rule capture writes ever hold on BASE, the patch goes without one, and a note says so."""
    from patchctl.patchsets import upstream

    monkeypatch.setitem(upstream.FINDERS, "call-keyword", lambda rule, rel, text, untagged: "upstream has it (test)")
    code, doc = capture(fork, tmp_path / "mine")
    assert code == 0 and doc["left_out"] == []
    assert "upstream =" not in (tmp_path / "mine" / "patchset.toml").read_text()
    assert (
        f"{ENGINE}:208: patch transformer-build-module has no upstream rule: the one capture writes for it "
        "already holds on BASE (upstream has it (test)); add one by hand if upstream may take this change"
        in doc["notes"]
    )
