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
        {"key": None, "reason": "line 0 is no line", "owned": [3, 0]},
        {"key": None, "reason": "owned not a list", "owned": 3},
        "not an entry",
    ],
    ids=["another key", "no key", "reason not text", "owned not lines", "line 0", "owned not a list", "not a table"],
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


@pytest.mark.parametrize(("longer", "ran"), [(0, 1), (1, 2)], ids=["at-the-threshold", "one-under"])
def test_a_text_under_the_threshold_is_checked_every_time(
    case: Case, cache: Path, monkeypatch: pytest.MonkeyPatch, longer: int, ran: int
) -> None:
    """MIN_TEXT set to the patched file's length: that file is proven once; with a threshold one
    character longer it is checked every time, and nothing is kept."""
    monkeypatch.setattr(proofs, "MIN_TEXT", len(case.after) + longer)
    kind = Counting(case.kind)
    for _ in range(2):
        assert proofs.check(kind, case.after, case.patch, case.ctx()).presence is Presence.PRESENT  # type: ignore[arg-type]
    assert kind.ran == ran and cache.exists() == (ran == 1)


@pytest.mark.parametrize("says", ["nothing", "False"])
def test_a_kind_that_does_not_say_proof_cached_is_checked_every_time(case: Case, cache: Path, says: str) -> None:
    kind = Counting(case.kind)
    if says == "nothing":
        del kind.proof_cached
    else:
        kind.proof_cached = False
    for _ in range(2):
        assert proofs.check(kind, case.after, case.patch, case.ctx()).presence is Presence.PRESENT  # type: ignore[arg-type]
    assert kind.ran == 2 and not cache.exists()


def test_proven_is_its_kind_with_the_check_through_the_cache(case: Case, cache: Path) -> None:
    """The registry's wrapper answers for its kind (name, apply, ...) and proves through the cache."""
    counting = Counting(case.kind)
    proven = proofs.Proven(counting)  # type: ignore[arg-type]
    assert proven.name == case.kind.name and proven.ran == 0
    for _ in range(2):
        assert proven.check(case.after, case.patch, case.ctx()).presence is Presence.PRESENT
    assert counting.ran == 1


@pytest.mark.parametrize(("over", "served"), [(0, True), (1, False)], ids=["at-the-limit", "one-byte-over"])
def test_an_entry_past_its_size_limit_is_not_read(case: Case, cache: Path, over: int, served: bool) -> None:
    """An entry of MAX_ENTRY bytes is read whole and trusted (here one saying present, on the
    unpatched file, that a check would call missing); one byte more and the check runs."""
    name = proofs.key(case.kind, case.before, case.patch, case.ctx())
    bare = json.dumps({"key": name, "owned": [1], "reason": ""})
    body = json.dumps({"key": name, "owned": [1], "reason": "x" * (proofs.MAX_ENTRY + over - len(bare))})
    assert len(body) == proofs.MAX_ENTRY + over
    cache.mkdir(parents=True)
    (cache / name).write_text(body)
    found = proofs.check(case.kind, case.before, case.patch, case.ctx())
    if served:
        assert (found.presence, found.owned_lines) == (Presence.PRESENT, frozenset({1}))
    else:
        assert found.presence is Presence.MISSING


def test_proofs_are_kept_where_only_the_user_can_read_them(case: Case, cache: Path) -> None:
    assert proofs.check(case.kind, case.after, case.patch, case.ctx()).presence is Presence.PRESENT
    (entry,) = cache.iterdir()
    assert (cache.stat().st_mode & 0o777, entry.stat().st_mode & 0o777) == (0o700, 0o600)


def test_an_entry_that_cannot_be_written_leaves_the_cache_as_it_was(case: Case, cache: Path) -> None:
    """A folder where the entry would go: the check answers each time, and no temp file is left."""
    kind = Counting(case.kind)
    name = proofs.key(kind, case.after, case.patch, case.ctx())  # type: ignore[arg-type]
    (cache / name).mkdir(parents=True)
    for _ in range(2):
        assert proofs.check(kind, case.after, case.patch, case.ctx()).presence is Presence.PRESENT  # type: ignore[arg-type]
    assert kind.ran == 2 and os.listdir(cache) == [name]
