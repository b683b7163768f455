"""Proofs of presence kept by a hash of all they were drawn from (issue 39.13): verify of an
unchanged tree parses no verl module, and any change to the text, the patch, the file's name,
what apply recorded, the kind's check, patchctl or Python asks the check again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from patchctl.patchsets import proofs
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Check, Context, PatchKind
from patchctl.patchsets.kinds.keyword_rename import KeywordRename
from patchctl.patchsets.kinds.prelude import Prelude
from patchctl.patchsets.loader import load_patchsets
from patchctl.patchsets.model import Patch, Presence
from patchctl.records import replace

SRC = Path(proofs.__file__).resolve().parents[2]


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PATCHCTL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "proofs"


class Case:
    """One uky patch of a kind whose present answers are kept, on its real verl 0.6.1 file."""

    def __init__(self, kind: PatchKind, patch: Patch, path: str, before: str, after: str) -> None:
        self.kind, self.patch, self.path, self.before, self.after = kind, patch, path, before, after

    def ctx(self, path: str | None = None, undo: dict[str, object] | None = None) -> Context:
        return Context(Path("."), path or self.path, undo)


@pytest.fixture(params=["keyword-rename", "prelude"])
def case(request: pytest.FixtureRequest, release_tree: Callable[[str], Path]) -> Case:
    tree = release_tree("0.6.1")
    patch = next(p for p in load_patchsets(("uky",))[0].patches if p.kind == request.param)
    path = next(t for t in patch.target if (tree / t).is_file())
    before = (tree / path).read_text(encoding="utf-8")
    kind: PatchKind = KeywordRename() if request.param == "keyword-rename" else Prelude()
    edit = kind.apply(before, patch, Context(Path("."), path))
    assert edit.text is not None and len(edit.text) >= proofs.MIN_TEXT
    return Case(kind, patch, path, before, edit.text)


class Counting:
    """The real kind, counting the checks that ran (a proof served runs none)."""

    def __init__(self, kind: PatchKind) -> None:
        self.kind, self.ran = kind, 0
        self.name, self.proof_cached = kind.name, True

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        self.ran += 1
        return self.kind.check(text, patch, ctx)


def test_a_present_patch_is_proven_once_and_the_proof_served_after(case: Case, cache: Path) -> None:
    kind = Counting(case.kind)
    first = proofs.check(kind, case.after, case.patch, case.ctx())  # type: ignore[arg-type]
    again = proofs.check(kind, case.after, case.patch, case.ctx())  # type: ignore[arg-type]
    assert first.presence is Presence.PRESENT and first.owned_lines
    assert again == first and kind.ran == 1
    assert [n for n in os.listdir(cache) if not n.startswith(".")] == os.listdir(cache)  # no temp file left


def test_only_present_is_kept(case: Case, cache: Path) -> None:
    kind = Counting(case.kind)
    for _ in range(2):
        assert proofs.check(kind, case.before, case.patch, case.ctx()).presence is Presence.MISSING  # type: ignore[arg-type]
    assert kind.ran == 2 and not cache.exists()


def _changed_patch(case: Case) -> Patch:
    """The same patch asking for another text: its check no longer finds it present."""
    p = case.patch.params
    if case.kind.name == "keyword-rename":
        return replace(case.patch, params=replace(p, new_value=p.new_value + " + 1"))
    return replace(case.patch, params=replace(p, block=p.block.replace("import", "import  ", 1)))


def test_a_changed_text_or_patch_is_checked_again(case: Case, cache: Path) -> None:
    assert proofs.check(case.kind, case.after, case.patch, case.ctx()).presence is Presence.PRESENT
    # the file as upstream shipped it, as long as the patched one: the same length, another text
    reverted = case.before + " " * (len(case.after) - len(case.before))
    assert proofs.check(case.kind, reverted, case.patch, case.ctx()).presence is Presence.MISSING
    assert proofs.check(case.kind, case.after, _changed_patch(case), case.ctx()).presence is not Presence.PRESENT


@pytest.fixture
def everything(case: Case) -> Iterator[dict[str, object]]:
    yield {"kind": case.kind, "text": case.after, "patch": case.patch, "ctx": case.ctx()}


class Rewritten(KeywordRename):
    """The same kind with its check changed (its bytecode differs)."""

    def check(self, text: str | None, patch: Patch, ctx: Context) -> Check:
        return super().check(text, patch, ctx)


@pytest.mark.parametrize(
    "change",
    ["text", "patch", "path", "undo", "kind name", "check's code", "format", "patchctl version", "python"],
)
def test_every_input_of_a_proof_is_in_its_key(
    change: str, case: Case, everything: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    def key() -> str:
        return proofs.key(everything["kind"], everything["text"], everything["patch"], everything["ctx"])  # type: ignore[arg-type]

    before = key()
    if change == "text":
        everything["text"] = case.after + "\n"
    elif change == "patch":
        everything["patch"] = replace(case.patch, title=case.patch.title + "!")
    elif change == "path":
        everything["ctx"] = case.ctx(path="other/" + case.path)
    elif change == "undo":
        everything["ctx"] = case.ctx(undo={"blank_before": 2})
    elif change == "kind name":
        monkeypatch.setattr(type(case.kind), "name", "renamed")
    elif change == "check's code":
        if not isinstance(case.kind, KeywordRename):
            pytest.skip("one kind shows it")
        everything["kind"] = Rewritten()
    elif change == "format":
        monkeypatch.setattr(proofs, "FORMAT", proofs.FORMAT + "x")
    elif change == "patchctl version":
        monkeypatch.setattr(proofs, "__version__", "9.9.9")
    else:
        monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    assert key() != before


@pytest.mark.parametrize(
    "entry",
    [
        {"key": "someone else's", "reason": "present, says a stale entry", "owned": [1]},
        {"reason": "present, says an entry with no key", "owned": [1]},
        {"key": None, "reason": 7, "owned": [1]},
        {"key": None, "reason": "lines that are no lines", "owned": ["1", 0]},
        "not an entry",
    ],
    ids=["another key", "no key", "reason not text", "owned not lines", "not a table"],
)
def test_an_entry_that_is_not_what_was_written_is_not_trusted(
    entry: object, case: Case, cache: Path, everything: dict[str, object]
) -> None:
    name = proofs.key(case.kind, case.before, case.patch, case.ctx())
    if isinstance(entry, dict) and entry.get("key", "") is None:
        entry = {**entry, "key": name}  # a copy: the parameter is shared by both kinds' runs
    cache.mkdir(parents=True)
    (cache / name).write_text(json.dumps(entry))
    assert proofs.check(case.kind, case.before, case.patch, case.ctx()).presence is Presence.MISSING
    (cache / name).write_text(json.dumps({"key": name, "reason": "x", "owned": [3]})[:-5])  # cut short
    assert proofs.check(case.kind, case.before, case.patch, case.ctx()).presence is Presence.MISSING


def test_the_registry_proves_through_the_cache() -> None:
    inner = KINDS["prelude"]
    while not isinstance(inner, proofs.Proven):  # KeepBom(ThreeWay(Replay(Proven(Prelude))))
        inner = inner._kind  # type: ignore[attr-defined]
    assert isinstance(inner._kind, Prelude)


def _verify(tree: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchctl", "verify", "--target", str(tree), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_verify_says_the_same_from_its_proofs_and_sees_an_edit(
    release_tree: Callable[[str], Path], tmp_path: Path
) -> None:
    tree = release_tree("0.6.1")
    env = {**os.environ, "PYTHONPATH": str(SRC), "PATCHCTL_CACHE": str(tmp_path / "cache")}
    subprocess.run(
        [sys.executable, "-m", "patchctl", "apply", "--target", str(tree)], env=env, capture_output=True, check=True
    )
    first, second = _verify(tree, env), _verify(tree, env)
    assert (first.returncode, second.returncode) == (0, 0)
    assert second.stdout == first.stdout
    assert len(os.listdir(tmp_path / "cache" / "proofs")) == 2  # uky's keyword-rename and prelude
    # the tagged keyword edited by hand: verify sees it, whatever it proved before
    target = tree / "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    text = target.read_text(encoding="utf-8")
    assert "enable_log_requests=" in text
    target.write_text(text.replace("enable_log_requests=", "enable_log_requests=not ", 1), encoding="utf-8")
    edited = _verify(tree, env)
    assert edited.returncode == 1
    found = {p["patch"]: p["status"] for p in json.loads(edited.stdout)["patches"]}
    assert "modified" in found.values(), found
