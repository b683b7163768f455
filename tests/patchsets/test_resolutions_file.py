"""resolutions.toml as refresh writes it and as every command reads it (patchsets/resolutions.py).

Issue 41's second audit planted one-line bugs in the recorded resolutions that the conflict-workflow
tests let pass: a damaged file answered with a crash instead of its key, a text with a DEL character
written where TOML cannot read it back, anchors written as one string, a second resolution of the
same patch lost when the first is recorded again. Each test writes the file as refresh does (or as a
user might edit it) and reads it back through the patchset loader or ``patchctl list``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.clirun import run
from tests.patchsets.conflict_forks import MANIFEST

from patchctl.patchsets import resolutions
from patchctl.patchsets.loader import load_patchset
from patchctl.patchsets.model import Resolution

PID = "requirements-pandas"


@pytest.fixture
def ps(tmp_path: Path) -> Path:
    """A patchset of one requirement patch, with no resolutions yet."""
    root = tmp_path / "ps"
    root.mkdir()
    params = 'package = "pandas"\nwas = "pandas"\nnow = "pandas==2.0"'
    (root / "patchset.toml").write_text(
        MANIFEST.format(id=PID, kind="requirement", target="requirements.txt", params=params), encoding="utf-8"
    )
    return root


def resolution(before: str, after: str, **more: object) -> Resolution:
    return Resolution(resolutions.context_of(before), "", before, after, "verl 0.6.1", **more)  # type: ignore[arg-type]


def read_back(ps: Path) -> tuple[Resolution, ...]:
    (patch,) = load_patchset(ps).patches
    return patch.resolutions


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("pandas>=1.5\n", "pandas>=2.0\n"),
        ("pandas>=1.5\nray\n", "pandas>=2.0\nray  # \x7f kept\n"),  # DEL: no TOML literal string holds it
        ("pandas>=1.5\n", "pandas>=2.0  # a tab\there, and a bell \x07\n"),
        ("pandas>=1.5\n", "pandas>=2.0\n# the end'''\n"),
        ("a\n", "b\nends with a quote'"),
    ],
)
def test_what_refresh_records_reads_back_exactly(ps: Path, before: str, after: str) -> None:
    resolutions.record(ps, PID, resolution(before, after))
    assert read_back(ps) == (resolution(before, after),)


def test_a_resolution_at_its_own_place_keeps_its_anchors(ps: Path) -> None:
    """Where the patch's anchors led nowhere, the place's own ones are recorded: lists, read back as such."""
    placed = resolution(
        "x = 1\n", "x = 2\n", above=("def f():", "    y = 0"), below=("    return x",), blocks=("if a:",)
    )
    resolutions.record(ps, PID, placed)
    assert read_back(ps) == (placed,)


def test_a_one_line_text_is_written_as_a_person_reads_it(ps: Path) -> None:
    resolutions.record(ps, PID, resolution("café==1", "café==2  # naïve"))  # no line break: a plain string
    assert 'after = "café==2  # naïve"' in (ps / resolutions.FILE).read_text(encoding="utf-8")
    resolutions.record(ps, PID, resolution("pandas\nray\n", "pandas==2\nray\n"))
    assert "after = '''\npandas==2\nray\n'''" in (ps / resolutions.FILE).read_text(encoding="utf-8")


def test_recording_a_conflict_again_replaces_its_entry_and_keeps_the_others(ps: Path) -> None:
    one, two = resolution("pandas>=1.5\n", "pandas>=2.0\n"), resolution("pandas<3\n", "pandas<4\n")
    resolutions.record(ps, PID, one)
    resolutions.record(ps, PID, two)
    again = resolution("pandas>=1.5\n", "pandas>=2.1\n")
    resolutions.record(ps, PID, again)
    assert read_back(ps) == (two, again)


ENTRY = {
    "patch": f'patch = "{PID}"',
    "context": f'context = "{resolutions.context_of("pandas>=1.5")}"',
    "before": 'before = "pandas>=1.5"',
    "after": 'after = "pandas>=2.0"',
}


def test_a_minimal_hand_written_entry_is_read(ps: Path) -> None:
    (ps / resolutions.FILE).write_text("[[resolution]]\n" + "\n".join(ENTRY.values()) + "\n", encoding="utf-8")
    (r,) = read_back(ps)
    assert (r.before, r.after, r.indent, r.recorded_on, r.above, r.whole) == (
        "pandas>=1.5",
        "pandas>=2.0",
        "",
        "",
        (),
        False,
    )


@pytest.mark.parametrize("key", list(ENTRY))
def test_an_entry_missing_a_key_is_refused_naming_it(ps: Path, key: str) -> None:
    lines = [line for k, line in ENTRY.items() if k != key]
    (ps / resolutions.FILE).write_text("[[resolution]]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    code, out = run("list", "--patchset", str(ps))
    assert code == 2, out
    assert f"{ps / resolutions.FILE}: key 'resolution[0].{key}': missing; add it (" in out


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[resolution]\npatch = 1\n", "key '(document)': not valid TOML ("),
        ("# every entry deleted by hand\n", "key 'resolution': missing; add it ([[resolution]] tables)"),
        ('resolution = "none"\n', "key 'resolution'"),
    ],
)
def test_a_damaged_file_is_refused_in_one_line(ps: Path, text: str, says: str) -> None:
    (ps / resolutions.FILE).write_text(text, encoding="utf-8")
    code, out = run("list", "--patchset", str(ps))
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert f"{ps / resolutions.FILE}: {says}" in out


def test_a_keep_upstream_entry_reads_back_apart_from_the_resolutions_replayed(ps: Path) -> None:
    """refresh's "keep upstream" (issue 38): written without `after`, read into ``Patch.kept`` only,
    so no kind ever replays it as a text to write."""
    keep = resolution("pandas>=1.5\n", "pandas>=1.5\n", keep=True, since="0.7.0")
    resolutions.record(ps, PID, keep)
    resolutions.record(ps, PID, resolution("pandas>=1.6\n", "pandas>=2.0\n"))
    text = (ps / resolutions.FILE).read_text(encoding="utf-8")
    assert text.count("after =") == 1 and text.count("since =") == 1, text
    (patch,) = load_patchset(ps).patches
    assert patch.kept == (keep,)
    assert [r.before for r in patch.resolutions] == ["pandas>=1.6\n"]


@pytest.mark.parametrize(
    ("more", "says"),
    [
        ('after = "pandas>=2.0"', "key 'resolution[0].after': differs from before in an entry that keeps upstream"),
        ('since = "the next one"', "key 'resolution[0].since': 'the next one' is no version; write one such as"),
    ],
)
def test_a_keep_upstream_entry_edited_wrong_is_refused(ps: Path, more: str, says: str) -> None:
    lines = [line for k, line in ENTRY.items() if k != "after"]
    (ps / resolutions.FILE).write_text("[[resolution]]\n" + "\n".join([*lines, "keep = true", more]) + "\n", "utf-8")
    code, out = run("list", "--patchset", str(ps))
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert f"error: {ps / resolutions.FILE}: " in out and says in out
