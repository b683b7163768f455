"""Related patches stay together across files (issue 27 requirement 5): a use in one file needs the
patch of another file that adds what it uses. Each test builds a small fork of one shape, captures
it against its base and reads the ``needs`` capture wrote."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git, snapshot

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

A, B, C, CONFIG = "verl/utils/a.py", "verl/trainer/b.py", "verl/utils/c.py", "verl/trainer/config/ppo.yaml"

BASE = {
    A: (
        "import os\n\n\n"
        "def existing():\n    return os.sep\n\n\n"
        "class Foo:\n    def run(self):\n        return 1\n\n    def stop(self):\n        return 2\n"
    ),
    B: (
        "from verl.utils import a\nfrom verl.utils.a import Foo\n\n\n"
        "class Bar:\n    def __init__(self, config):\n        self.config = config\n        self.x = Foo()\n\n"
        "    def step(self, y):\n        first = a.existing()\n        second = self.x.run()\n"
        "        return first, second\n"
    ),
    CONFIG: "trainer:\n  epochs: 1\n  seed: 7\ndata:\n  path: x\n",
}


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {"verl/__init__.py": "", "verl/utils/__init__.py": "", "setup.py": "# verl\n", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def edited(edits: list[tuple[str, str, str]], new: dict[str, str] | None = None) -> dict[str, str]:
    files = dict(BASE)
    for rel, old, now in edits:
        assert files[rel].count(old) == 1, old
        files[rel] = files[rel].replace(old, now)
    return {**files, **(new or {})}


NEW_HELPER = (A, "\n\nclass Foo:", "\n\ndef helper():  # Uky: one helper\n    return 3  # Uky\n\n\nclass Foo:")
NEW_METHOD = (
    A,
    "    def stop(self):",
    "    def new_method(self):  # Uky\n        return 4  # Uky\n\n    def stop(self):",
)
NEW_KEY = (CONFIG, "  seed: 7\n", "  seed: 7\n  new_key: 3  # Uky\n")
STEP = "        second = self.x.run()\n"


def capture(tmp_path: Path, edits: list[tuple[str, str, str]], new: dict[str, str] | None = None) -> Path:
    base = tree(tmp_path / "base", BASE)
    fork = tree(tmp_path / "fork", edited(edits, new))
    out = tmp_path / "ps"
    code, text = run("capture", "--from", str(fork), "--base", str(base), "--out", str(out), "--json")
    assert code == 0, text
    return out


def needs(ps: Path) -> dict[str, tuple[str, list[str]]]:
    """Patch id -> (its file, the ids it needs)."""
    doc = tomllib.loads((ps / "patchset.toml").read_text(encoding="utf-8"))
    return {p["id"]: (p["target"][0], p.get("needs", [])) for p in doc["patch"]}


def of(ps: Path, rel: str) -> list[str]:
    return [pid for pid, (path, _) in needs(ps).items() if path == rel]


def test_an_import_of_a_new_function_needs_the_patch_that_adds_it(tmp_path: Path) -> None:
    use = (
        B,
        "from verl.utils.a import Foo\n",
        "from verl.utils.a import Foo\nfrom verl.utils.a import helper  # Uky\n",
    )
    call = (B, STEP, STEP + "        helper()  # Uky\n")
    ps = capture(tmp_path, [NEW_HELPER, use, call])
    (definition,) = of(ps, A)
    imp, caller = of(ps, B)
    got = needs(ps)
    assert got[imp][1] == [definition]
    assert set(got[caller][1]) == {imp, definition}  # the import within the file, the name resolved through it
    assert got[definition][1] == []


def test_a_module_attribute_call_needs_the_new_function(tmp_path: Path) -> None:
    ps = capture(tmp_path, [NEW_HELPER, (B, STEP, STEP + "        a.helper()  # Uky\n")])
    (definition,) = of(ps, A)
    (caller,) = of(ps, B)
    assert needs(ps)[caller][1] == [definition]


def test_a_new_method_called_through_an_attribute_of_known_class_needs_it(tmp_path: Path) -> None:
    ps = capture(tmp_path, [NEW_METHOD, (B, STEP, STEP + "        self.x.new_method()  # Uky\n")])
    (method,) = of(ps, A)
    (caller,) = of(ps, B)
    assert needs(ps)[caller][1] == [method]


@pytest.mark.parametrize(
    "reads", ['self.config.trainer.get("new_key")', "self.config.trainer.new_key", 'self.config["trainer"]["new_key"]']
)
def test_a_config_key_read_needs_the_patch_that_adds_the_key(tmp_path: Path, reads: str) -> None:
    read = (B, STEP, STEP + f"        k = {reads}  # Uky\n")
    ps = capture(tmp_path, [NEW_KEY, read])
    (key,) = of(ps, CONFIG)
    (caller,) = of(ps, B)
    assert needs(ps)[caller][1] == [key]


def test_a_relative_import_of_a_new_file_needs_its_add_file(tmp_path: Path) -> None:
    use = (A, "import os\n", "import os\n\nfrom .c import thing  # Uky\n")
    ps = capture(tmp_path, [use], {C: "thing = 5  # Uky\n"})
    (imp,) = of(ps, A)
    (added,) = of(ps, C)
    assert needs(ps)[imp][1] == [added]


@pytest.mark.parametrize(
    "edits, why",
    [
        # the object's class is not certain: y is a parameter
        ([NEW_METHOD, (B, STEP, STEP + "        y.new_method()  # Uky\n")], "class unknown"),
        # BASE has a key of that name already (data.epochs vs trainer.epochs): code may read either
        (
            [
                (CONFIG, "  path: x\n", "  path: x\n  epochs: 2  # Uky\n"),
                (B, STEP, STEP + "        k = self.config.epochs  # Uky\n"),
            ],
            "key known",
        ),
        # a name the use does not resolve to: a local helper of the same name
        ([NEW_HELPER, (B, STEP, STEP + "        helper = len  # Uky\n        helper(y)  # Uky\n")], "local name"),
    ],
)
def test_uncertain_uses_link_nothing(tmp_path: Path, edits: list[tuple[str, str, str]], why: str) -> None:
    ps = capture(tmp_path, edits)
    (caller,) = of(ps, B)
    assert needs(ps)[caller][1] == [], why


def test_a_use_whose_definition_conflicts_is_held_back_naming_the_file_and_patch(tmp_path: Path) -> None:
    use = (
        B,
        "from verl.utils.a import Foo\n",
        "from verl.utils.a import Foo\nfrom verl.utils.a import helper  # Uky\n",
    )
    ps = capture(tmp_path, [NEW_HELPER, use])
    (definition,) = of(ps, A)
    (imp,) = of(ps, B)
    # upstream rewrote the place the definition is anchored by: it conflicts there
    moved = BASE[A].replace("def existing():\n    return os.sep\n", "def existing():\n    return os.pathsep\n")
    target = tree(tmp_path / "next", {**BASE, A: moved.replace("class Foo:", "class Foo(object):")})
    before = snapshot(target)
    code, out = run("apply", "--target", str(target), "--patchset", str(ps), "--json")
    got = {r["patch"]: r for r in json.loads(out)["results"]}
    assert code == 1, out
    assert got[definition]["status"] == "conflict", got
    assert got[imp]["status"] == "held-back"
    assert f"it needs {definition} in {A} (conflict" in got[imp]["reason"]
    assert snapshot(target) == before

    code, out = run("apply", "--target", str(tree(tmp_path / "v2", BASE)), "--patchset", str(ps), "--only", imp)
    assert code == 0, out  # --only brings the definition in
    assert "def helper" in (tmp_path / "v2" / A).read_text()


def test_matrix_holds_the_use_back_where_its_definition_in_another_file_conflicts(tmp_path: Path) -> None:
    call = (B, STEP, STEP + "        a.helper()  # Uky\n")
    ps = capture(tmp_path, [NEW_HELPER, call])
    (definition,) = of(ps, A)
    (caller,) = of(ps, B)
    repo = tree(tmp_path / "upstream", BASE)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "v1")
    git(repo, "tag", "v1")
    # upstream defines a `helper` of its own where the fork put one (and changes the anchor after
    # it): a real conflict, which no merge, by lines or by logical lines, may resolve. Changing
    # only `class Foo:` is no longer one: the 3-way merge by logical lines places the fork's
    # `helper` before it, as it should
    other = "def helper():\n    return 7\n\n\nclass Foo(object):"
    (repo / A).write_text(BASE[A].replace("class Foo:", other))
    git(repo, "commit", "-qam", "upstream moves on")
    git(repo, "tag", "v2")
    code, text = run("matrix", "--repo", str(repo), "--versions", "v1,v2", "--patchset", str(ps), "--json")
    cells = {(c["patch"], c["version"]): c for c in json.loads(text)["cells"]}
    assert code == 1, text
    assert cells[(definition, "v1")]["status"] == cells[(caller, "v1")]["status"] == "applied"
    assert cells[(definition, "v2")]["status"] == "conflict"
    assert cells[(caller, "v2")]["status"] == "held-back"
    assert f"it needs {definition} in {A} (conflict" in cells[(caller, "v2")]["reason"]
