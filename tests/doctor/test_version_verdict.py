"""Issue 37: a version-mismatch finding names the two packages and their versions, and what to
install, instead of "versions do not fit" (the lines are the corpus's, from the issue threads)."""

from __future__ import annotations

import subprocess
import sys

import corpus_score

from patchctl.doctor import diagnose, load_signatures

SIGNATURES = load_signatures()
ENTRIES = {e.name: e for e in corpus_score.load()}


def _top(lines: list[str]):
    return diagnose(lines, SIGNATURES).matches[0]


def test_pips_conflict_line_names_both_packages_versions_and_the_install():
    m = _top(ENTRIES["012-pip-tensordict-needs-newer-torch"].lines)
    assert m.verdict == (
        "tensordict 0.6.2 requires torch>=2.5.0; torch 2.4.0+cu124 is installed: install torch>=2.5.0, "
        "or tensordict 0.5.x (built for torch 2.4)"
    )


def test_vllm_built_for_another_torch_names_the_torch_it_was_built_for():
    m = _top(ENTRIES["098-vllm-c-undefined-torch-2-2"].lines)
    assert m.signature.id == "vllm-torch-abi"
    assert m.verdict == (
        "vllm 0.3.2 was built for torch 2.1.2; torch 2.2.1 is installed: install torch==2.1.2, "
        "or vllm 0.4.1 (built for torch 2.2.1)"
    )


def test_the_local_build_tag_is_no_mismatch():
    """torch 2.4.0+cu124 is the torch vllm 0.6.3 was built for: no claim that they do not fit."""
    line = "ImportError: /usr/lib/python3/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    m = _top([line, "vllm==0.6.3", "torch==2.4.0+cu124"])
    assert m.signature.id == "vllm-torch-abi" and m.verdict == ""


def test_tensordict_built_for_an_older_torch_names_the_tensordict_to_install():
    """The issue's own example: tensordict 0.6 was built for torch 2.5; torch 2.7 is installed."""
    lines = [*ENTRIES["013-tensordict-forkingpickler-torch26"].lines, "tensordict==0.6.2", "torch==2.7.0"]
    assert _top(lines).verdict == (
        "tensordict 0.6.2 was built for torch 2.5; torch 2.7.0 is installed: "
        "install tensordict >=0.8 (its wheels declare no torch bound)"
    )


def test_tensordict_for_a_torch_in_the_table_is_the_release_built_with_it():
    lines = [*ENTRIES["013-tensordict-forkingpickler-torch26"].lines, "tensordict==0.5.1", "torch==2.6.0"]
    assert _top(lines).verdict == (
        "tensordict 0.5.1 was built for torch 2.4; torch 2.6.0 is installed: "
        "install tensordict 0.7.x (built for torch 2.6)"
    )


def test_no_claim_about_a_tensordict_whose_wheels_declare_no_torch_bound():
    """tensordict 0.8's wheels require a bare ``torch``: nothing published says which torch it wants."""
    lines = [*ENTRIES["013-tensordict-forkingpickler-torch26"].lines, "tensordict==0.8.3", "torch==2.5.1"]
    assert "0.8.3 was built" not in _top(lines).verdict


def test_an_import_error_names_the_importing_package_from_the_traceback():
    """No versions in the log: the frame above the ImportError names tensordict, the error torch."""
    v = _top(ENTRIES["013-tensordict-forkingpickler-torch26"].lines).verdict
    assert v.startswith("tensordict imports ForkingPickler from torch, which the installed torch does not have")
    assert "torch 2.6: tensordict 0.7" in v


def test_a_missing_triton_name_points_at_the_triton_torch_pins():
    lines = [*ENTRIES["031-vllm-triton-kernels-import"].lines, "torch==2.8.0"]
    assert _top(lines).verdict == (
        "the installed triton_kernels has no SparseMatrix: torch 2.8.0 pins triton 3.4.0; "
        "install triton==3.4.0 and the triton_kernels of that release"
    )


def test_the_triton_pin_is_the_torch_releases_own_not_its_minors():
    """torch 2.7.0 pins triton 3.3.0 and 2.7.1 pins 3.3.1 (their wheels' Requires-Dist)."""
    for torch, triton in (("2.7.0", "3.3.0"), ("2.7.1", "3.3.1"), ("2.3.0", "2.3.0")):
        lines = [*ENTRIES["031-vllm-triton-kernels-import"].lines, f"torch=={torch}"]
        assert f"torch {torch} pins triton {triton};" in _top(lines).verdict


def test_doctor_prints_the_pair_and_puts_it_in_json(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(ENTRIES["098-vllm-c-undefined-torch-2-2"].text, encoding="utf-8")
    cmd = [sys.executable, "-m", "patchctl", "doctor", str(log)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "versions: vllm 0.3.2 was built for torch 2.1.2; torch 2.2.1 is installed" in out
    js = subprocess.run([*cmd, "--json"], capture_output=True, text=True, check=True).stdout
    assert '"verdict": "vllm 0.3.2 was built for torch 2.1.2; torch 2.2.1 is installed' in js
