"""Issue 41 req 4: nothing validate writes into ``--out`` goes through a link already there.

A symlink planted in the run directory under each name validate writes (``validate.json``,
the streamed ``train.log``, the fetched ``report.json`` / ``report.png``, the ``--compare`` plot)
points at a file outside it. The run replaces each link with its own file, as git replaces a
link on checkout; the file outside keeps its bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_validate_cli import _report, invoke
from validate_helpers import Site, host_entry

NAMES = ("validate.json", "train.log", "report.json", "report.png")


def plant(out: Path, outside: Path, names: tuple[str, ...]) -> dict[str, bytes]:
    """A link ``out/NAME -> outside/NAME`` for each name, each target with its own bytes."""
    out.mkdir(parents=True, exist_ok=True)
    outside.mkdir(parents=True, exist_ok=True)
    kept = {}
    for name in names:
        (outside / name).write_bytes(kept.setdefault(name, f"the user's own {name}\n".encode()))
        (out / name).symlink_to(outside / name)
    return kept


def assert_untouched(out: Path, outside: Path, kept: dict[str, bytes]) -> None:
    for name, data in kept.items():
        assert (outside / name).read_bytes() == data, f"{name} was written through the link"
        assert not (out / name).is_symlink() and (out / name).is_file(), name
    assert not [p.name for p in out.iterdir() if p.name.endswith(".part")], "a temp file was left in --out"


def test_a_training_run_replaces_links_in_out_and_writes_nothing_outside(site: Site) -> None:
    """Also req 5: a relative ``--out`` with a ``:`` reaches rsync as a local folder."""
    cluster = site.cluster([host_entry("node1", site.root("node1"), "0")])
    site.migrate(cluster)
    out, outside = site.dir / "run:1", site.dir / "outside"
    kept = plant(out, outside, NAMES)
    # relative, as typed (the site's cwd is its dir): rsync must not read run:1 as host "run"
    done = site.validate("--out", "run:1", "--ray-cpus", "1", "--json")
    assert done.exit_code == 0, done.output
    assert_untouched(out, outside, kept)
    assert json.loads((out / "validate.json").read_text())["verdict"] == "pass"
    assert json.loads((out / "report.json").read_text())["verdict"] == "pass"
    assert "step:40" in (out / "train.log").read_text()


def test_a_health_run_replaces_a_validate_json_link(site: Site) -> None:
    hosts = [host_entry(a, site.root(a), None, gpus=0) for a in ("node1", "node2")]
    site.migrate(site.cluster(hosts))
    out, outside = site.dir / "run", site.dir / "outside"
    kept = plant(out, outside, ("validate.json",))
    done = site.validate("--profile", "health", "--checks", "stack", "--out", str(out))
    assert done.exit_code == 0, done.output
    assert_untouched(out, outside, kept)
    assert json.loads((out / "validate.json").read_text())["health"]["stack"]["hosts"] == ["node1", "node2"]


def test_the_compare_plot_replaces_a_link_in_out(tmp_path: Path) -> None:
    a, b = _report(tmp_path / "a", 2, [0.1, 0.5, 0.9], "2.60.0"), _report(tmp_path / "b", 1, [0.2, 0.4], "2.59.0")
    out, outside = tmp_path / "cmp", tmp_path / "outside"
    kept = plant(out, outside, ("compare.png",))
    code, text = invoke("--compare", str(b), "--compare", str(a), "--out", str(out), "--json")
    assert code == 0, text
    assert_untouched(out, outside, kept)
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_folder_in_the_plots_way_is_one_line_not_an_internal_error(tmp_path: Path) -> None:
    a, b = _report(tmp_path / "a", 2, [0.1, 0.5], "2.60.0"), _report(tmp_path / "b", 1, [0.2, 0.4], "2.59.0")
    out = tmp_path / "cmp"
    (out / "compare.png").mkdir(parents=True)
    code, text = invoke("--compare", str(b), "--compare", str(a), "--out", str(out))
    assert code == 2, text
    assert text.strip().splitlines()[-1] == (
        f"error: {out}/compare.png: cannot write (a folder is in the way); nothing was changed — move it away and retry"
    )
