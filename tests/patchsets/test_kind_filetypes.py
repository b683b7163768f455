"""The kinds for every file type a fork changes (issue 27.4), as before/after pairs on real verl files.

Each kind: apply, idempotent re-apply, check (a tampered target is not ``present``), revert back
to the exact bytes, and a conflict message that names the real difference.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from patchctl.errors import ManifestError
from patchctl.patchsets.kinds import KINDS
from patchctl.patchsets.kinds.base import Context, Edit, EditStatus
from patchctl.patchsets.model import Patch, Presence

YAML = "verl/trainer/config/ppo_trainer.yaml"
REQS = """# requirements.txt records the full set of dependencies for development
accelerate
numpy<2.0.0
pandas
ray[default]
tensordict>=0.8.0,<=0.10.0,!=0.9.0
wandb
"""
README = (
    "# verl\n\n## Getting Started\n\n- [Installation](install.html)\n- [Quickstart](quickstart.html)\n"
    "- [PPO in verl](ppo.html)\n- [GRPO in verl](grpo.html)\n\n## Contribution\n"
)


def patch(kind: str, target: str, tmp: Path = Path("."), **params: Any) -> Patch:
    parsed = KINDS[kind].parse_params(params, tmp, tmp / "patchset.toml", "p")
    return Patch("p", "t", "w", "Uky", kind, (target,), parsed)


def ctx(path: str, edit: Edit | None = None, files: dict[str, str | None] | None = None) -> Context:
    return Context(Path("."), path, edit.undo if edit else None, read=(files or {}).get)


@pytest.fixture(scope="module")
def trainer_yaml(release_cache: Path) -> str:
    from patchctl import releases

    return (releases.materialize("0.6.1") / YAML).read_text(encoding="utf-8")


def round_trip(kind: str, p: Patch, path: str, before: str) -> str:
    """apply, re-apply, check and revert; returns what apply wrote."""
    k = KINDS[kind]
    edit = k.apply(before, p, ctx(path))
    assert edit.status is EditStatus.CHANGED, edit.reason
    assert edit.text is not None
    assert k.apply(edit.text, p, ctx(path)).status is EditStatus.UNCHANGED
    assert k.check(edit.text, p, ctx(path)).presence is Presence.PRESENT
    assert k.check(before, p, ctx(path)).presence is Presence.MISSING
    back = k.revert(edit.text, p, ctx(path, edit))
    assert back.status is EditStatus.CHANGED and back.text == before
    return edit.text


def changed_lines(a: str, b: str) -> tuple[list[str], list[str]]:
    """Lines only in ``a`` and lines only in ``b``: what an edit touched, whatever else stayed."""
    la, lb = a.splitlines(), b.splitlines()
    return [x for x in la if x not in lb], [x for x in lb if x not in la]


# -- config-key ------------------------------------------------------------------------------


def test_config_key_adds_sets_and_removes_keys_in_verls_trainer_yaml(trainer_yaml: str) -> None:
    add = patch(
        "config-key",
        YAML,
        path=["trainer", "uky_smoke"],
        now="# Uky: one GPU\nuky_smoke: true\n",
        before="total_epochs",
    )
    after = round_trip("config-key", add, YAML, trainer_yaml)
    assert "\n  # Uky: one GPU\n  uky_smoke: true\n  # Number of epochs in training\n  total_epochs: 30\n" in after
    assert changed_lines(trainer_yaml, after) == ([], ["  # Uky: one GPU", "  uky_smoke: true"])

    set_ = patch(
        "config-key", YAML, path=["trainer", "total_epochs"], was="total_epochs: 30\n", now="total_epochs: 3  # Uky\n"
    )
    after = round_trip("config-key", set_, YAML, trainer_yaml)
    assert changed_lines(trainer_yaml, after) == (["  total_epochs: 30"], ["  total_epochs: 3  # Uky"])
    assert "  # Number of epochs in training\n  total_epochs: 3  # Uky\n" in after  # upstream's comment kept

    gone = patch("config-key", YAML, path=["trainer", "total_epochs"], was="total_epochs: 30\n")
    after = round_trip("config-key", gone, YAML, trainer_yaml)
    assert "total_epochs" not in after and "\n\n\n" not in after[after.index("trainer:") :]


def test_config_key_finds_the_key_after_upstream_reindents_and_reorders(trainer_yaml: str) -> None:
    """Upstream moved the trainer block to the top and indents by four: only the key's line changes."""
    head, rest = trainer_yaml.split("\ntrainer:\n", 1)
    block, tail = rest.split("\n\n# ", 1) if "\n\n# " in rest else (rest, "")
    moved = "trainer:\n" + block.replace("\n  ", "\n    ").replace("  ", "    ", 1) + "\n\n" + head + "\n\n# " + tail
    set_ = patch(
        "config-key", YAML, path=["trainer", "total_epochs"], was="total_epochs: 30\n", now="total_epochs: 3  # Uky\n"
    )
    after = round_trip("config-key", set_, YAML, moved)
    assert changed_lines(moved, after) == (["    total_epochs: 30"], ["    total_epochs: 3  # Uky"])


def test_config_key_conflict_names_upstreams_value(trainer_yaml: str) -> None:
    set_ = patch(
        "config-key", YAML, path=["trainer", "total_epochs"], was="total_epochs: 30\n", now="total_epochs: 3  # Uky\n"
    )
    upstream = trainer_yaml.replace("total_epochs: 30", "total_epochs: 15")
    edit = KINDS["config-key"].apply(upstream, set_, ctx(YAML))
    assert edit.status is EditStatus.CONFLICT
    assert edit.reason.endswith(
        "key trainer.total_epochs is 'total_epochs: 15' here, where the patch has "
        "'total_epochs: 3  # Uky' and the upstream it was captured from had 'total_epochs: 30'"
    )
    missing = patch("config-key", YAML, path=["trainerx", "flag"], now="flag: 1\n")
    edit = KINDS["config-key"].apply(trainer_yaml, missing, ctx(YAML))
    assert edit.status is EditStatus.CONFLICT and "there is no key trainerx" in edit.reason


def test_config_key_tampered_value_is_modified(trainer_yaml: str) -> None:
    set_ = patch(
        "config-key", YAML, path=["trainer", "total_epochs"], was="total_epochs: 30\n", now="total_epochs: 3  # Uky\n"
    )
    after = KINDS["config-key"].apply(trainer_yaml, set_, ctx(YAML)).text or ""
    found = KINDS["config-key"].check(
        after.replace("total_epochs: 3  # Uky", "total_epochs: 4  # Uky"), set_, ctx(YAML)
    )
    assert found.presence is Presence.MODIFIED and "'total_epochs: 4  # Uky' here" in found.reason


def test_config_key_in_toml_tables() -> None:
    toml = (
        '[build-system]\nrequires = [\n    "setuptools>=61.0",\n]\n\n[tool.ruff]\nline-length = 120\n\n'
        "[tool.x]\na = 1\n"
    )
    set_ = patch(
        "config-key",
        "pyproject.toml",
        path=["tool", "ruff", "line-length"],
        was="line-length = 120\n",
        now="line-length = 100  # Uky\n",
    )
    after = round_trip("config-key", set_, "pyproject.toml", toml)
    assert after == toml.replace("line-length = 120", "line-length = 100  # Uky")
    add = patch("config-key", "pyproject.toml", path=["build-system", "backend"], now='backend = "x"  # Uky\n')
    after = round_trip("config-key", add, "pyproject.toml", toml)
    assert after.startswith('[build-system]\nrequires = [\n    "setuptools>=61.0",\n]\nbackend = "x"  # Uky\n\n[tool')


# -- requirement -----------------------------------------------------------------------------


def test_requirement_pins_adds_and_removes_whatever_line_it_is_on() -> None:
    pin = patch("requirement", "requirements.txt", package="numpy", was="numpy<2.0.0", now="numpy==1.26.4  # Uky")
    after = round_trip("requirement", pin, "requirements.txt", REQS)
    assert after == REQS.replace("numpy<2.0.0", "numpy==1.26.4  # Uky")
    shuffled = "".join(sorted(REQS.splitlines(keepends=True), reverse=True))  # upstream reorders the list
    after = round_trip("requirement", pin, "requirements.txt", shuffled)
    assert after == shuffled.replace("numpy<2.0.0", "numpy==1.26.4  # Uky")

    add = patch("requirement", "requirements.txt", package="math-verify", now="math-verify==0.7.0  # Uky", before="ray")
    after = round_trip("requirement", add, "requirements.txt", REQS)
    assert "pandas\nmath-verify==0.7.0  # Uky\nray[default]\n" in after

    drop = patch("requirement", "requirements.txt", package="WandB", was="wandb")
    assert round_trip("requirement", drop, "requirements.txt", REQS) == REQS.replace("wandb\n", "")


def test_requirement_conflict_names_upstreams_line() -> None:
    pin = patch("requirement", "requirements.txt", package="numpy", was="numpy<2.0.0", now="numpy==1.26.4  # Uky")
    edit = KINDS["requirement"].apply(REQS.replace("numpy<2.0.0", "numpy>=2"), pin, ctx("requirements.txt"))
    assert edit.status is EditStatus.CONFLICT
    assert "package numpy is 'numpy>=2' here, where the patch has 'numpy==1.26.4  # Uky'" in edit.reason


def test_requirement_refuses_a_line_for_another_package(tmp_path: Path) -> None:
    with pytest.raises(
        ManifestError, match=re.escape("key 'params.now': 'torch==2.4' is not one requirement line for numpy")
    ):
        patch("requirement", "requirements.txt", tmp_path, package="numpy", now="torch==2.4")


def test_requirement_refuses_params_that_swap_nothing(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=re.escape("key 'params.now': is params.was again")):
        patch("requirement", "requirements.txt", tmp_path, package="numpy", was="numpy<2.0.0", now="numpy<2.0.0  ")
    with pytest.raises(ManifestError, match=re.escape("key 'params.now': missing (and so is params.was)")):
        patch("requirement", "requirements.txt", tmp_path, package="numpy")


# -- text-hunk -------------------------------------------------------------------------------

HUNK = {
    "was": "- [Quickstart](quickstart.html)\n- [PPO in verl](ppo.html)\n- [GRPO in verl](grpo.html)\n",
    "now": "- [Quickstart](quickstart.html)\n- [PPO in verl](ppo.html)\n- [Our cluster](uky.html)\n"
    "- [GRPO in verl](grpo.html)\n",
    "line": 6,
}


def test_text_hunk_finds_its_place_after_upstream_moves_text() -> None:
    p = patch("text-hunk", "README.md", **HUNK)
    after = round_trip("text-hunk", p, "README.md", README)
    assert after == README.replace("(ppo.html)\n", "(ppo.html)\n- [Our cluster](uky.html)\n")
    moved = "# verl\n\nNews.\nMore news.\n\n" + README.split("\n", 2)[2]
    assert round_trip("text-hunk", p, "README.md", moved) == moved.replace(
        "(ppo.html)\n", "(ppo.html)\n- [Our cluster](uky.html)\n"
    )


def test_text_hunk_fuzz_leaves_out_outer_context_only() -> None:
    p = patch("text-hunk", "README.md", **HUNK)
    fuzzed = README.replace("- [Quickstart](quickstart.html)", "- [Quick start](quickstart.html)")
    after = round_trip("text-hunk", p, "README.md", fuzzed)
    assert "- [Quick start](quickstart.html)\n- [PPO in verl](ppo.html)\n- [Our cluster](uky.html)\n" in after
    strict = patch("text-hunk", "README.md", **HUNK, fuzz=0)
    edit = KINDS["text-hunk"].apply(fuzzed, strict, ctx("README.md"))
    assert edit.status is EditStatus.CONFLICT
    assert edit.reason == (
        "README.md:6: upstream has '- [Quick start](quickstart.html)' where the hunk expects "
        "'- [Quickstart](quickstart.html)' (2 of its 3 lines match there)"
    )


def test_text_hunk_conflict_when_the_changed_neighbour_moved() -> None:
    p = patch("text-hunk", "README.md", **HUNK)
    edit = KINDS["text-hunk"].apply(README.replace("[PPO in verl]", "[PPO]"), p, ctx("README.md"))
    assert edit.status is EditStatus.CONFLICT
    assert "upstream has '- [PPO](ppo.html)' where the hunk expects '- [PPO in verl](ppo.html)'" in edit.reason


# -- delete-file, rename-file, blob ----------------------------------------------------------


def test_delete_file_deletes_restores_and_says_when_upstream_changed_it() -> None:
    import hashlib

    text = "#!/bin/bash\necho hi\n"
    p = patch("delete-file", "scripts/x.sh", sha256=hashlib.sha256(text.encode()).hexdigest())
    k = KINDS["delete-file"]
    edit = k.apply(text, p, ctx("scripts/x.sh"))
    assert edit.status is EditStatus.CHANGED and edit.text is None
    assert k.check(None, p, ctx("scripts/x.sh")).presence is Presence.PRESENT
    assert k.check(text, p, ctx("scripts/x.sh")).presence is Presence.MISSING
    assert k.revert(None, p, ctx("scripts/x.sh", edit)).text == text
    strict = patch("delete-file", "scripts/x.sh", sha256=p.params.sha256, if_changed="conflict")
    edit = k.apply(text + "echo more\n", strict, ctx("scripts/x.sh"))
    assert edit.status is EditStatus.CONFLICT and "changed upstream since the fork deleted it" in edit.reason


def test_rename_file_moves_upstreams_content_and_back() -> None:
    p = patch("rename-file", "scripts/tools/diag.py", source="scripts/diagnose.py")
    k = KINDS["rename-file"]
    files: dict[str, str | None] = {"scripts/diagnose.py": "upstream's newer text\n"}
    edit = k.apply(None, p, ctx("scripts/tools/diag.py", files=files))
    assert edit.status is EditStatus.CHANGED and edit.text == "upstream's newer text\n"
    assert edit.also == (("scripts/diagnose.py", None, None),)
    moved = {"scripts/diagnose.py": None}
    assert k.check(edit.text, p, ctx("scripts/tools/diag.py", files=moved)).presence is Presence.PRESENT
    both = k.check("x\n", p, ctx("scripts/tools/diag.py", files=files))
    assert (
        both.presence is Presence.MODIFIED and "both scripts/diagnose.py and scripts/tools/diag.py exist" in both.reason
    )
    back = k.revert(edit.text, p, ctx("scripts/tools/diag.py", files=moved))
    assert back.text is None and back.also == (("scripts/diagnose.py", "upstream's newer text\n", None),)


def test_blob_ships_bytes_checks_sha256_and_refuses_a_swapped_file(tmp_path: Path) -> None:
    import hashlib

    data = b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe"
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "logo.png").write_bytes(data)
    p = patch("blob", "docs/logo.png", tmp_path, source="files/logo.png", sha256=hashlib.sha256(data).hexdigest())
    k = KINDS["blob"]
    edit = k.apply(None, p, ctx("docs/logo.png"))
    assert edit.status is EditStatus.CHANGED and edit.text is not None
    assert edit.text.encode("utf-8", "surrogateescape") == data
    assert k.check(edit.text, p, ctx("docs/logo.png")).presence is Presence.PRESENT
    assert k.check(edit.text + "x", p, ctx("docs/logo.png")).presence is Presence.MODIFIED
    (tmp_path / "files" / "logo.png").write_bytes(data + b"!")  # the shipped blob tampered with after capture
    with pytest.raises(ManifestError, match=re.escape("key 'params.sha256': does not match files/logo.png")):
        patch("blob", "docs/logo.png", tmp_path, source="files/logo.png", sha256=hashlib.sha256(data).hexdigest())


# -- config-key in JSON ----------------------------------------------------------------------

DS = (
    '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "stage": 2,\n    "offload": false\n  },\n'
    '  "fp16": {"enabled": true}\n}\n'
)


@pytest.mark.parametrize(
    "params, after",
    [
        (
            {"path": ["zero_optimization", "stage"], "was": '"stage": 2', "now": '"stage": 3'},
            DS.replace('"stage": 2', '"stage": 3'),
        ),
        (
            {"path": ["zero_optimization", "bucket"], "now": '"bucket": 500'},
            DS.replace('"offload": false\n', '"offload": false,\n    "bucket": 500\n'),
        ),
        (
            {"path": ["zero_optimization", "offload"], "was": '"offload": false'},
            DS.replace('"stage": 2,\n    "offload": false\n', '"stage": 2\n'),
        ),
        (
            {"path": ["steps"], "now": '"steps": 10'},
            DS.replace('  "fp16": {"enabled": true}\n', '  "fp16": {"enabled": true},\n  "steps": 10\n'),
        ),
    ],
)
def test_config_key_in_json_keeps_its_commas_right(params: dict[str, Any], after: str) -> None:
    import json

    p = patch("config-key", "ds_config.json", **params)
    assert round_trip("config-key", p, "ds_config.json", DS) == after
    json.loads(after)


def test_config_key_in_json_refuses_an_object_written_on_one_line() -> None:
    p = patch("config-key", "ds_config.json", path=["fp16", "loss_scale"], now='"loss_scale": 0')
    edit = KINDS["config-key"].apply(DS, p, ctx("ds_config.json"))
    assert edit.status is EditStatus.CONFLICT
    assert edit.reason == "ds_config.json:7: fp16 is written on one line; add key fp16.loss_scale to it by hand"


def test_blob_conflict_names_both_sha256s_and_a_patch_that_changes_nothing_is_refused(tmp_path: Path) -> None:
    import hashlib

    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "logo.png").write_bytes(b"\x00ours")
    p = patch(
        "blob",
        "logo.png",
        tmp_path,
        source="files/logo.png",
        sha256=hashlib.sha256(b"\x00ours").hexdigest(),
        replaces=hashlib.sha256(b"\x00theirs").hexdigest(),
    )
    edit = KINDS["blob"].apply("\x00newer upstream", p, ctx("logo.png"))
    assert edit.status is EditStatus.CONFLICT
    assert edit.reason.startswith("logo.png is sha256 ") and "the blob replaces sha256 " in edit.reason
    with pytest.raises(ManifestError, match=re.escape("key 'params.now': is params.was again")):
        patch("config-key", YAML, tmp_path, path=["a"], was="a: 1\n", now="# why\na: 1  \n")


def test_reverting_without_a_record_leaves_a_deleted_file_alone() -> None:
    p = patch("delete-file", "scripts/x.sh")
    back = KINDS["delete-file"].revert(None, p, ctx("scripts/x.sh"))
    assert back.status is EditStatus.NOT_APPLICABLE and "git checkout -- scripts/x.sh" in back.reason
