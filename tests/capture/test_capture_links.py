"""Related patches stay together (issue 27): capture records what each patch needs, and apply,
matrix and ``--only`` honour it. The fork has the issue's two shapes: a new method and its only
call site, and a ``MetricFunc(...)`` use and its import."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from tests.clirun import run
from tests.conftest import git

from patchctl.capture import links
from patchctl.capture.model import Draft

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TRACKING = "verl/utils/tracking.py"
#: (old, new): each must occur once in verl 0.6.1's tracking.py
EDITS = [
    (
        "import json\nimport os\n",
        "import json\nimport os\nfrom collections import Counter as MetricFunc  # Uky: count keys\n",
    ),
    (
        '        data = {"step": step, "data": data}\n',
        '        data = {"step": step, "data": data, "keys": len(MetricFunc(data))}  # Uky\n',
    ),
    (
        '        "file",\n    ]\n\n',
        '        "file",\n    ]\n\n    def uky_flush(self, step):  # Uky: flush every backend at a step\n'
        "        return step  # Uky\n\n",
    ),
    (
        "                logger_instance.log(data=data, step=step)\n",
        "                logger_instance.log(data=data, step=step)\n        self.uky_flush(step)  # Uky\n",
    ),
]
#: upstream moves on: the import's neighbours and the call site's loop both change
UPSTREAM = [
    ("import json\nimport os\nfrom enum import Enum\n", "import json as _json\nimport os as _os\nimport enum\n"),
    (
        "        for default_backend, logger_instance in self.logger.items():\n",
        "        for default_backend, logger_instance in sorted(self.logger.items()):\n",
    ),
]


def edit(tree: Path, pairs: list[tuple[str, str]]) -> None:
    path = tree / TRACKING
    text = path.read_text(encoding="utf-8")
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from patchctl import releases

    fork = tmp_path_factory.mktemp("fork") / "verl"
    shutil.copytree(releases.materialize("0.6.1"), fork, symlinks=True)
    edit(fork, EDITS)
    out = tmp_path_factory.mktemp("ps") / "mine"
    code, text = run("capture", "--from", str(fork), "--base", "verl==0.6.1", "--out", str(out), "--json")
    assert code == 0, text
    return out


def patches(ps: Path) -> dict[str, dict]:
    doc = tomllib.loads((ps / "patchset.toml").read_text(encoding="utf-8"))
    return {p["id"]: p for p in doc["patch"]}


def by_text(ps: Path, needle: str) -> str:
    return next(pid for pid, p in patches(ps).items() if needle in p["params"].get("after", ""))


def test_capture_records_what_each_patch_needs(captured: Path) -> None:
    ids = {
        k: by_text(captured, s)
        for k, s in [
            ("import", "MetricFunc  #"),
            ("use", "MetricFunc(data)"),
            ("method", "def uky_flush"),
            ("call", "self.uky_flush"),
        ]
    }
    assert len(set(ids.values())) == 4, ids
    table = patches(captured)
    assert table[ids["use"]]["needs"] == [ids["import"]]
    assert table[ids["call"]]["needs"] == [ids["method"]]
    assert "needs" not in table[ids["import"]] and "needs" not in table[ids["method"]]


@pytest.fixture
def upstream(release_tree, captured: Path) -> Path:
    """A verl repository: v1 is the fork's base, v2 upstream's next commit."""
    repo = release_tree("0.6.1")
    git(repo, "tag", "v1")
    edit(repo, UPSTREAM)
    git(repo, "commit", "-qam", "upstream moves on")
    git(repo, "tag", "v2")
    return repo


def test_matrix_never_calls_a_patch_applied_without_its_partner(captured: Path, upstream: Path, tmp_path: Path) -> None:
    # upstream's loop header is lines away from the call, which the 3-way fallback would merge (as
    # git does); without the base texts the call conflicts, which is what this test needs
    captured = Path(shutil.copytree(captured, tmp_path / "no-bases"))
    shutil.rmtree(captured / "bases")
    code, text = run("matrix", "--repo", str(upstream), "--versions", "v1,v2", "--patchset", str(captured), "--json")
    cells = {(c["patch"], c["version"]): c for c in json.loads(text)["cells"]}
    imp, use = by_text(captured, "MetricFunc  #"), by_text(captured, "MetricFunc(data)")
    method, call = by_text(captured, "def uky_flush"), by_text(captured, "self.uky_flush")
    assert all(cells[(p, "v1")]["status"] == "applied" for p in (imp, use, method, call))
    # the import's neighbours changed: it is set-added to the module's imports (issue 38), so its use lands too
    assert cells[(imp, "v2")]["status"] == "applied" and "set-added" in cells[(imp, "v2")]["reason"]
    assert cells[(use, "v2")]["status"] == "applied"
    assert cells[(call, "v2")]["status"] == "conflict"
    assert cells[(method, "v2")]["status"] == "applied"
    assert f"warning: needed by {call} in {TRACKING} (conflict" in cells[(method, "v2")]["reason"]
    assert code == 1


def test_only_brings_in_what_a_patch_needs(captured: Path, release_tree) -> None:
    tree = release_tree("0.6.1")
    use, imp = by_text(captured, "MetricFunc(data)"), by_text(captured, "MetricFunc  #")
    code, text = run("apply", "--target", str(tree), "--patchset", str(captured), "--only", use, "--json")
    assert code == 0, text
    got = {r["patch"]: r["status"] for r in json.loads(text)["results"]}
    assert got == {imp: "applied", use: "applied"}
    assert "from collections import Counter as MetricFunc" in (tree / TRACKING).read_text(encoding="utf-8")


def test_a_use_whose_import_does_not_apply_is_held_back_and_not_written(
    captured: Path, release_tree, tmp_path: Path
) -> None:
    """The import is not-applicable (not a failure): apply goes on, but never writes the use alone."""
    ps = tmp_path / "ps"
    shutil.copytree(captured, ps)
    imp, use = by_text(ps, "MetricFunc  #"), by_text(ps, "MetricFunc(data)")
    manifest = ps / "patchset.toml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace(f'id = "{imp}"\n', f'id = "{imp}"\nversions = "<0.1"\n'), encoding="utf-8")
    tree = release_tree("0.6.1")
    before = (tree / TRACKING).read_text(encoding="utf-8")
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--only", use, "--json")
    got = {r["patch"]: r for r in json.loads(out)["results"]}
    assert code == 0, out
    assert got[imp]["status"] == "not-applicable"
    assert got[use]["status"] == "held-back" and f"needs {imp} in {TRACKING} (not-applicable" in got[use]["reason"]
    assert (tree / TRACKING).read_text(encoding="utf-8") == before


def test_needs_naming_no_patch_is_refused(captured: Path, tmp_path: Path) -> None:
    ps = tmp_path / "ps"
    shutil.copytree(captured, ps)
    manifest = ps / "patchset.toml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace('needs = ["', 'needs = ["nope-', 1), encoding="utf-8"
    )
    code, out = run("list", "--patchset", str(ps))
    assert code == 2 and "needs[0]" in out and "is not another patch of this patchset" in out


def _draft(pid: str, scope: str, before: str, after: str, path: str = "m.py") -> Draft:
    return Draft(pid, "structural", path, 1, True, pid, "", {"scope": scope, "before": before, "after": after})


def test_a_local_is_seen_only_in_its_own_scope_and_a_new_module_by_its_import() -> None:
    drafts = [
        _draft("local-in-f", "f", "", "    total = 0  # Uky\n"),
        _draft("use-in-g", "g", "", "    print(total)  # Uky\n"),
        _draft("use-in-f", "f", "", "    print(total)  # Uky\n"),
        _draft("module-level", "", "", "LIMIT = 3  # Uky\n"),
        _draft("use-limit", "g", "", "    print(LIMIT)  # Uky\n"),
        _draft("import-new", "", "", "from pkg.helper import run  # Uky\n"),
        Draft("helper", "add-file", "pkg/helper.py", None, True, "add", "", {}, content=b"def run(): ...\n"),
    ]
    needs = {d.id: d.needs for d in links.link(drafts)}
    assert needs["use-in-g"] == ()
    assert needs["use-in-f"] == ("local-in-f",)
    assert needs["use-limit"] == ("module-level",)
    assert needs["import-new"] == ("helper",)


def test_revert_only_takes_the_users_along(captured: Path, release_tree) -> None:
    tree = release_tree("0.6.1")
    pristine = (tree / TRACKING).read_text(encoding="utf-8")
    code, out = run("apply", "--target", str(tree), "--patchset", str(captured))
    assert code == 0, out
    imp, use = by_text(captured, "MetricFunc  #"), by_text(captured, "MetricFunc(data)")
    code, out = run("revert", "--target", str(tree), "--patchset", str(captured), "--only", imp, "--json")
    assert code == 0, out
    got = {r["patch"]: r["status"] for r in json.loads(out)["results"]}
    assert got == {imp: "reverted", use: "reverted"}
    assert "MetricFunc" not in (tree / TRACKING).read_text(encoding="utf-8")
    assert (tree / TRACKING).read_text(encoding="utf-8") != pristine  # the method and its call stay
