"""Every signature of the shipped table against a realistic excerpt, and the loader's validation."""

from __future__ import annotations

import corpus_score
import pytest
from excerpts import CLEAN, EXCERPTS

from patchctl.doctor import diagnose, load_signatures
from patchctl.errors import ManifestError
from patchctl.patchsets.loader import load_patchsets

SIGNATURES = load_signatures()


def test_every_signature_has_an_excerpt_or_corpus_entries():
    """Each signature is exercised: by a realistic excerpt here, or by real failures in the corpus."""
    in_corpus = {i for e in corpus_score.load() for i in e.expect}
    assert set(EXCERPTS) <= {s.id for s in SIGNATURES}
    assert {s.id for s in SIGNATURES} - set(EXCERPTS) - in_corpus == set()


@pytest.mark.parametrize("sig_id", sorted(EXCERPTS))
def test_signature_matches_its_excerpt(sig_id):
    d = diagnose(EXCERPTS[sig_id].splitlines(), SIGNATURES, "excerpt")
    ids = [m.signature.id for m in d.matches]
    assert sig_id in ids, f"{sig_id} not matched; got {ids}"
    m = next(m for m in d.matches if m.signature.id == sig_id)
    assert m.signature.cause and m.signature.fix and m.signature.resolves.items()
    assert m.excerpt.removesuffix("...") in EXCERPTS[sig_id]


def test_a_healthy_log_matches_nothing():
    assert diagnose(CLEAN.splitlines(), SIGNATURES).matches == ()


def test_record_problems_name_their_resolution():
    by = {s.id: s.resolves for s in SIGNATURES}
    assert by["vllm-disable-log-requests"].patch == ("uky/vllm-enable-log-requests",)
    assert "uky/triton-cuda-stubs" in by["triton-cannot-find-lcuda"].patch
    assert by["vllm-backend-not-registered"].env == ("VLLM_ATTENTION_BACKEND=FLASH_ATTN",)
    assert set(by["slow-model-loading"].override) == {
        "actor_rollout_ref.rollout.load_format=safetensors",
        "actor_rollout_ref.rollout.enforce_eager=True",
    }
    assert any("num_cpus" in o for o in by["ray-register-worker"].override)
    assert by["triton-compile-module"].override == ("actor_rollout_ref.actor.use_torch_compile=False",)


def test_patches_named_exist_in_the_builtin_patchsets():
    known = {f"{ps.name}/{p.id}" for ps in load_patchsets(["uky"]) for p in ps.patches}
    named = {ref for s in SIGNATURES for ref in s.resolves.patch}
    assert named and named <= known


def test_order_count_and_line_numbers():
    """The timeout comes first in the log, but it is generic: the duplicate GPU that made a rank fail
    is the root cause. The timeout seen twice is one finding with its count."""
    log = (
        ["noise"] * 5
        + [EXCERPTS["nccl-timeout"].strip()]
        + ["noise"] * 3
        + EXCERPTS["duplicate-gpu"].splitlines()
        + [EXCERPTS["nccl-timeout"].strip()]
    )
    d = diagnose(log, SIGNATURES)
    assert [m.signature.id for m in d.matches] == ["duplicate-gpu", "nccl-timeout"]
    assert d.matches[0].line == 13 and d.matches[0].count == 1
    assert d.matches[1].first_line == 6 and d.matches[1].count == 2 and d.lines == len(log)


def table(tmp_path, body: str):
    path = tmp_path / "sigs.toml"
    path.write_text("format = 1\n" + body)
    return path


GOOD = """
[[signature]]
id = "x"
title = "X"
patterns = ["boom"]
cause = "c"
fix = "f"
[signature.resolves]
env = ["A=1"]
"""


@pytest.mark.parametrize(
    "edit,key,problem",
    [
        (lambda b: b.replace('["boom"]', '["(unclosed"]'), "signature[0].patterns[0]", "not a regular expression"),
        (lambda b: b.replace('env = ["A=1"]', ""), "signature[0].resolves", "names nothing"),
        (lambda b: b.replace('cause = "c"\n', ""), "signature[0].cause", "missing"),
        (lambda b: b.replace('fix = "f"', 'fix = "f"\npriority = 3'), "signature[0].priority", "unknown key"),
        (
            lambda b: b.replace('env = ["A=1"]', 'patch = ["no-slash"]'),
            "signature[0].resolves.patch[0]",
            "patchset/patch-id",
        ),
        (lambda b: b.replace('id = "x"', 'id = "Not Kebab"'), "signature[0].id", "kebab-case"),
        (lambda b: b.replace('patterns = ["boom"]', "patterns = []"), "signature[0].patterns", "is empty"),
        (lambda b: b + b, "signature[1].id", "used twice"),
        (
            lambda b: b.replace('patterns = ["boom"]', 'functions = ["a.b"]'),
            "signature[0].functions[0]",
            "is not a Python name",
        ),
    ],
)
def test_validation_names_the_key(tmp_path, edit, key, problem):
    with pytest.raises(ManifestError) as err:
        load_signatures(table(tmp_path, edit(GOOD)))
    assert err.value.key == key and problem in str(err.value) and "sigs.toml" in str(err.value)


def test_valid_custom_table(tmp_path):
    (sig,) = load_signatures(table(tmp_path, GOOD))
    assert sig.id == "x" and sig.resolves.env == ("A=1",)


def test_not_toml(tmp_path):
    path = tmp_path / "sigs.toml"
    path.write_text("[[signature]\n")
    with pytest.raises(ManifestError, match="not valid TOML"):
        load_signatures(path)


FRAME = '(WorkerDict pid=7) File "/venv/triton/backends/nvidia/driver.py", line 57, in compile_module_from_src'


@pytest.mark.parametrize(
    "line",
    [
        # what a user pastes: the caller's line alone, the frame alone, a method call, Ray's prefix
        '    mod = compile_module_from_src(Path(os.path.join(dirname, "driver.c")).read_text(), "cuda_utils")',
        "mod = compile_module_from_src(...)",
        FRAME,
        "  x = driver.compile_module_from_src (src, name)",
    ],
)
def test_a_lone_traceback_line_naming_the_failing_function_is_found(line):
    assert [m.signature.id for m in diagnose([line], SIGNATURES).matches] == ["triton-compile-module"]


@pytest.mark.parametrize(
    "line",
    [
        "my_compile_module_from_src(x)",
        "compile_module_from_src is slow",
        'File "a.py", line 3, in compile_module_from_srcs',
    ],
)
def test_a_function_name_inside_another_word_is_not_a_hit(line):
    assert diagnose([line], SIGNATURES).matches == ()


def test_a_signature_may_name_only_functions(tmp_path):
    (sig,) = load_signatures(table(tmp_path, GOOD.replace('patterns = ["boom"]', 'functions = ["init_engine"]')))
    assert [m.signature.id for m in diagnose(["    self.init_engine()"], [sig]).matches] == ["x"]


def test_excerpts_carry_no_control_characters():
    (m,) = diagnose(["\x1b[36m(WorkerDict pid=1)\x1b[0m CUDA out of memory \x00\x07 here"], SIGNATURES).matches
    assert m.excerpt == "(WorkerDict pid=1) CUDA out of memory \ufffd\ufffd here"
