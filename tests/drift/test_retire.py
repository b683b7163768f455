"""retire: a patchset without the absorbed patches, the absorbing commit, metadata checked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.drift.helpers import NEW, SERVER, Repo, git, invoke, patchset

KEEP = """
[[patch]]
id = "script"
title = "a script"
why = "ours"
kind = "add-file"
target = ["run_ours.sh"]
drop_when = "{drop}"

[patch.params]
source = "files/run_ours.sh"
"""


def setup(
    tmp_path: Path, applied: str = "0.2.0", drop: str = ">=0.2.0", keep_drop: str = "<0", release: str = "0.2.0"
) -> tuple[Repo, Path, str]:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps", applied, drop)
    (ps / "files").mkdir()
    (ps / "files" / "run_ours.sh").write_text("echo ours  # T\n")
    (ps / "patchset.toml").write_text((ps / "patchset.toml").read_text() + KEEP.format(drop=keep_drop))
    git(repo.root, "tag", "v0.1.0")
    repo.filler(6)
    fix = repo.commit({SERVER: NEW}, "absorb the fix")
    repo.filler(6, "more")
    repo.commit({"verl/version/version": f"{release}\n"}, f"release {release}", tag=f"v{release}")
    return repo, ps, fix


def retire(repo: Repo, ps: Path, *extra: str):
    return invoke("retire", "--target", "v0.2.0", "--repo", str(repo.root), "--patchset", str(ps), *extra)


def test_retired_patch_is_cut_and_recorded_with_its_absorbing_commit(tmp_path: Path) -> None:
    repo, ps, fix = setup(tmp_path)
    out = tmp_path / "new"
    done = retire(repo, ps, "--since", "v0.1.0", "--out", str(out))
    assert done.exit_code == 0, done.output
    assert f"retired log-requests: absorbed by {fix[:12]}" in done.output and "(first in v0.2.0)" in done.output
    manifest = (out / "patchset.toml").read_text()
    assert 'id = "log-requests"' not in manifest and 'id = "script"' in manifest
    assert (out / "files" / "run_ours.sh").is_file()
    doc = json.loads((out / "retired.json").read_text())
    assert doc["retired"][0]["absorbed_by"]["commit"] == fix and doc["retired"][0]["drop_when"] == ">=0.2.0"
    assert doc["disagreements"] == []
    listed = invoke("list", "--patchset", str(out))
    assert listed.exit_code == 0 and "log-requests" not in listed.output


def test_metadata_that_disagrees_with_bisect_is_reported(tmp_path: Path) -> None:
    repo, ps, _ = setup(tmp_path, applied="0.3.0", drop=">=0.3.0", keep_drop=">=0.2.0")
    done = retire(repo, ps, "--since", "v0.1.0", "--json")
    assert done.exit_code == 1
    problems = json.loads(done.output)["disagreements"]
    assert any("applied_upstream = '0.3.0', but bisect found it absorbed by" in p and "v0.2.0" in p for p in problems)
    assert any("drop_when = '>=0.3.0' excludes 0.2.0" in p for p in problems)
    assert "log-requests: superseded upstream on verl 0.2.0, but drop_when = '>=0.3.0' excludes it" in problems
    assert any(p.startswith("script: drop_when = '>=0.2.0' says drop it on verl 0.2.0") for p in problems)


def test_an_existing_out_is_refused_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    repo, ps, _ = setup(tmp_path)
    out = tmp_path / "exists"
    out.mkdir()
    done = retire(repo, ps, "--out", str(out))
    assert done.exit_code == 2 and "already exists" in done.output and list(out.iterdir()) == []
    before = sorted(p.name for p in tmp_path.iterdir())
    done = retire(repo, ps)
    assert done.exit_code == 0 and "absorbing commit not bisected (it needs --repo, --since" in done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_nothing_superseded_writes_nothing(tmp_path: Path) -> None:
    repo, ps, _ = setup(tmp_path)
    out = tmp_path / "new"
    done = invoke("retire", "--target", "v0.1.0", "--repo", str(repo.root), "--patchset", str(ps), "--out", str(out))
    assert done.exit_code == 0 and "nothing to retire" in done.output and not out.exists()


def test_retiring_every_patch_is_refused(tmp_path: Path) -> None:
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    repo.commit({SERVER: NEW}, "fix", tag="v0.2.0")
    out = tmp_path / "new"
    done = retire(repo, ps, "--out", str(out))
    assert done.exit_code == 2 and "every patch is superseded upstream" in done.output and not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".new")] == []


def test_a_directory_target_is_bisected_up_to_its_version_tag(tmp_path: Path) -> None:
    repo, ps, fix = setup(tmp_path)
    done = invoke(
        "retire",
        "--target",
        str(repo.root),
        "--repo",
        str(repo.root),
        "--since",
        "v0.1.0",
        "--patchset",
        str(ps),
        "--json",
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["retired"][0]["absorbed_by"]["commit"] == fix


def test_a_record_that_links_out_of_the_patchset_is_replaced_not_written_through(tmp_path: Path) -> None:
    """Issue 41 req 4: the copy keeps the patchset's links, so the new record must not follow one."""
    repo, ps, _ = setup(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_text("the user's own file\n")
    (ps / "retired.json").symlink_to(outside)
    manifest = tmp_path / "kept-elsewhere.toml"  # the manifest itself a link: the cut one must not land there
    (ps / "patchset.toml").rename(manifest)
    (ps / "patchset.toml").symlink_to(manifest)
    before = manifest.read_text()
    out = tmp_path / "new"
    done = retire(repo, ps, "--out", str(out))
    assert done.exit_code == 0, done.output
    assert outside.read_text() == "the user's own file\n" and manifest.read_text() == before
    assert not (out / "retired.json").is_symlink() and not (out / "patchset.toml").is_symlink()
    assert 'id = "log-requests"' not in (out / "patchset.toml").read_text()
    assert [r["patch"] for r in json.loads((out / "retired.json").read_text())["retired"]] == ["log-requests"]


def test_a_damaged_record_is_refused_in_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    """A plain retired.json that is no record (cut JSON, bytes, another shape) is the user's
    file at fault: exit 2 naming it, not an internal error, and no new patchset half-made."""
    repo, ps, _ = setup(tmp_path)
    record = ps / "retired.json"
    for text in (b'{"retired": [', b"\xff\xfe not utf-8", b"[]", b'{"retired": 3}', b"[" * 100000):
        record.write_bytes(text)
        out = tmp_path / "new"
        done = retire(repo, ps, "--out", str(out))
        assert done.exit_code == 2, (text[:20], done.output)
        assert f"{record}: not a retirement record" in done.output and len(done.output.strip().splitlines()) == 1
        assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".new")] == []


def test_an_earlier_record_is_kept_ahead_of_the_new_entries(tmp_path: Path) -> None:
    repo, ps, _ = setup(tmp_path)
    (ps / "retired.json").write_text(json.dumps({"retired": [{"patch": "older"}]}))
    out = tmp_path / "new"
    done = retire(repo, ps, "--out", str(out))
    assert done.exit_code == 0, done.output
    assert [r["patch"] for r in json.loads((out / "retired.json").read_text())["retired"]] == ["older", "log-requests"]


def test_a_kept_patch_listed_before_a_retired_one_stays(tmp_path: Path) -> None:
    """The cut keeps every table but the retired ones, wherever they sit in the manifest."""
    repo, ps, _ = setup(tmp_path)
    head, *tables = (ps / "patchset.toml").read_text().split("[[patch]]")
    (ps / "patchset.toml").write_text(head + "[[patch]]" + "[[patch]]".join(reversed(tables)))
    assert (ps / "patchset.toml").read_text().index('id = "script"') < (ps / "patchset.toml").read_text().index(
        'id = "log-requests"'
    )
    out = tmp_path / "new"
    done = retire(repo, ps, "--out", str(out))
    assert done.exit_code == 0, done.output
    manifest = (out / "patchset.toml").read_text()
    assert 'id = "script"' in manifest and 'id = "log-requests"' not in manifest


def test_a_retired_patch_without_metadata_is_reported_and_one_with_either_is_not(tmp_path: Path) -> None:
    repo, ps, _ = setup(tmp_path)
    manifest = (ps / "patchset.toml").read_text()
    neither = "log-requests: superseded upstream, and it has neither applied_upstream nor drop_when"
    for cut, reported in (
        (('applied_upstream = "0.2.0"\n', 'drop_when = ">=0.2.0"\n'), True),
        (('applied_upstream = "0.2.0"\n',), False),
        (('drop_when = ">=0.2.0"\n',), False),
    ):
        text = manifest
        for line in cut:
            text = text.replace(line, "", 1)
        (ps / "patchset.toml").write_text(text)
        done = retire(repo, ps, "--json")
        assert (neither in json.loads(done.output)["disagreements"]) is reported, (cut, done.output)
        assert done.exit_code == (1 if reported else 0)


def test_a_target_without_its_release_tag_is_not_bisected(tmp_path: Path) -> None:
    """A folder at verl 0.2.0 whose repository has no v0.2.0 tag: no commit to bisect up to."""
    repo, ps, _ = setup(tmp_path)
    git(repo.root, "tag", "-d", "v0.2.0")
    done = invoke(
        "retire", "--target", str(repo.root), "--repo", str(repo.root), "--since", "v0.1.0", "--patchset", str(ps)
    )
    assert done.exit_code == 0, done.output
    assert "retired log-requests: absorbing commit not bisected" in done.output


def test_a_prerelease_target_is_inside_a_drop_when_that_admits_it(tmp_path: Path) -> None:
    """drop_when = ">=0.1" on verl 0.2.0rc1: pip's specifiers leave pre-releases out unless asked;
    a patch retired on a release candidate is still one drop_when admits."""
    repo, ps, fix = setup(tmp_path, applied="0.2.0rc1", drop=">=0.1", release="0.2.0rc1")
    done = invoke(
        "retire",
        "--target",
        "v0.2.0rc1",
        "--repo",
        str(repo.root),
        "--since",
        "v0.1.0",
        "--patchset",
        str(ps),
        "--json",
    )
    doc = json.loads(done.output)
    assert doc["disagreements"] == [] and done.exit_code == 0, done.output
    assert doc["retired"][0]["absorbed_by"]["commit"] == fix and doc["retired"][0]["release"] == "v0.2.0rc1"


def test_a_branch_past_its_release_tag_is_bisected_up_to_the_branch(tmp_path: Path) -> None:
    """main at verl 0.2.0 holds a fix that came after the v0.2.0 tag: the commit found is on
    main, in no release yet (bisecting up to the tag would find the patch still needed there)."""
    repo, ps = Repo(tmp_path / "r"), patchset(tmp_path / "ps")
    git(repo.root, "tag", "v0.1.0")
    repo.commit({"verl/version/version": "0.2.0\n"}, "release 0.2.0", tag="v0.2.0")
    repo.filler(2)
    fix = repo.commit({SERVER: NEW}, "absorb the fix after the release")
    done = invoke(
        "retire", "--target", "main", "--repo", str(repo.root), "--since", "v0.1.0", "--patchset", str(ps), "--json"
    )
    assert done.exit_code == 0, done.output
    retired = json.loads(done.output)["retired"][0]
    assert retired["absorbed_by"]["commit"] == fix and retired["release"] is None
