"""doctor is linear in a line's length (issue 41): no regex it applies to a log line backtracks.

A pattern such as ``NET/(?:Socket|IB).*failed`` took 25 s on a 200 KB line of ``NET/Socket ``:
the search restarts at every ``NET/`` and each start's ``.*`` runs to the end of the line and back.
Timing that here would be flaky on a loaded two-core CI machine (and the project measures speed in
benchmarks only): a time limit is either tight enough to fail under load or so generous that only a
catastrophic pattern exceeds it, while a quadratic one searches a test-sized line in milliseconds. So
the test counts steps instead: ``backtrack.py`` runs each pattern on a model of ``re``'s backtracking
engine, which gives the same count on any machine, loaded or not. Each pattern is searched
in adversarial lines built from its own pieces (a literal, a matching prefix or a repeat's
character, repeated, then a failing tail) at two lengths, 8x apart: the steps per character of a
linear pattern stay flat, a quadratic one's grow about 8x, an exponential one's blow the budget.
A signature table that gains a backtracking pattern fails here, naming the pattern and the line.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from backtrack import (
    OverBudget,
    Unsupported,
    compile_program,
    doctor_regexes,
    fragments,
    line,
    registers,
    search_program,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from patchctl.doctor import diagnose, load_signatures
from patchctl.doctor.scan import WARNING_LINE, Scan
from patchctl.doctor.signatures import default_path
from patchctl.doctor.versions import VERSION

SIGNATURES = load_signatures()
#: characters of the shorter adversarial line (at least four repeats of its piece)
SHORT = 256
#: the longer line is this many times as long
GROWTH = 8
#: the steps per character on the shorter line may grow by at most this factor on the longer one:
#: a linear pattern's stay within 1.25 here, a quadratic one's grow about GROWTH-fold
SLACK = 2.0
#: steps per character beyond which a search is stopped as runaway (linear ones take at most 35)
BUDGET = 100


def backtracks(pattern: re.Pattern[str]) -> str | None:
    """How ``pattern`` backtracks (the first adversarial line whose steps per character grow or
    blow the budget), or None when it is linear on all of them."""
    program = compile_program(pattern)
    regs = registers(program)
    for head, piece in fragments(pattern):
        per_char = []
        short = max(SHORT, len(head) + 4 * len(piece))
        for length in (short, short * GROWTH):
            text = line(head, piece, length)
            try:
                steps = search_program(program, text, BUDGET * len(text), regs)[1]
            except OverBudget:
                return f"over {BUDGET} steps per character on {head!r} + {piece!r} * {len(text) // len(piece)}"
            per_char.append(steps / len(text))
        if per_char[1] > SLACK * per_char[0]:
            return (
                f"steps per character grow {per_char[1] / per_char[0]:.1f}x from {short} to {short * GROWTH} "
                f"characters of {head!r} + {piece!r} repeated"
            )
    return None


REGEXES = doctor_regexes(SIGNATURES)


@pytest.mark.parametrize(("where", "pattern"), REGEXES, ids=[f"{w}:{p.pattern[:40]}" for w, p in REGEXES])
def test_every_regex_doctor_applies_is_linear(where, pattern):
    assert (why := backtracks(pattern)) is None, f"{where} backtracks: {pattern.pattern!r}: {why}"


def test_every_regex_is_checked():
    """The list covers the shipped table and the module-level patterns, so a new one is not missed."""
    where = {w for w, _ in REGEXES}
    assert {"scan.WARNING_LINE", "scan.PROCESS", "versions.VERSION"} <= where
    assert {"nccl-network.patterns", "training-oom.confirm", "flash-attn2-not-installed.unless"} <= where
    in_table = {p.pattern for s in SIGNATURES for k in ("patterns", "confirm", "unless") for p in getattr(s, k)}
    assert in_table <= {p.pattern for _, p in REGEXES}


# --- the check catches what it is for -------------------------------------------------------------

#: patterns that backtrack, each in another way; the first four are the ones issue 41 found
PLANTED = {
    "warning marker before": r"\bWARNING\b|\bWarning\b|Warning:|\bW\d{4} |\[[^\]]* W \d+ \d+\]",
    "nccl-network before": r"NET/(?:Socket|IB).*(?:failed|Connection refused)",
    "version before": r"(?i:\b(vllm|torch)(?: version)?\s*(?:==|:|\s)\s*v?(\d+\.\d+))",
    "pip conflict before": r"\S+ \d+\.\d+\S* requires [\w-]+[<>=!~]=?[\d.]+.*but you have \S+ \d+\.\d+\S* which",
    "nested star": r"(.*)*x",
    "nested plus": r"(a+)+b",
    "alternation of equals": r"(?:a|a)*b",
    "bracketed run": r"\[.*\]x",
    "adjacent runs": r"\d+\d+x",
    "unanchored run": r"\w+@",
    "lazy gap": r"GPU.*?failed",
}


@pytest.mark.parametrize("pattern", PLANTED.values(), ids=PLANTED.keys())
def test_a_backtracking_pattern_is_caught(pattern):
    assert backtracks(re.compile(pattern)) is not None


@pytest.mark.parametrize(
    "pattern",
    [r"abc", r"NET/(?:Socket|IB)(?:(?!NET/(?:Socket|IB)).)*failed", r"(?<!\w)\w+@", r"^\[.*\]x", r"x\d+y", r"x\s*$"],
)
def test_a_linear_pattern_passes(pattern):
    assert backtracks(re.compile(pattern)) is None


def test_a_table_with_a_backtracking_pattern_fails(tmp_path):
    """The check reads the table doctor loads: a quadratic pattern added to a copy of it is found."""
    table = tmp_path / "signatures.toml"
    text = default_path().read_text(encoding="utf-8")
    table.write_text(
        text.replace('patterns = ["Too many open files"]', 'patterns = ["Too many open files", "fd \\\\d+.*closed"]'),
        encoding="utf-8",
    )
    added = [(w, p) for w, p in doctor_regexes(load_signatures(table)) if (w, p) not in REGEXES]
    assert [(w, p.pattern) for w, p in added if backtracks(p)] == [("too-many-open-files.patterns", r"fd \d+.*closed")]


def test_the_model_matches_what_re_matches():
    """The step counts are only worth something if the model searches as re does: on every
    adversarial line of every pattern, it finds a match exactly when re.search does."""
    for _where, pattern in REGEXES:
        program = compile_program(pattern)
        for head, piece in fragments(pattern):
            for text in (line(head, piece, 64), head + piece, piece + " " + head):
                found, _ = search_program(program, text, 10**9, registers(program))
                assert found == bool(pattern.search(text)), (pattern.pattern, text)


#: one pattern per construct the model has, for the property below
CONSTRUCTS = [
    r"\ba1\b",
    r"\Ba",
    r"a$",
    r"^a",
    r"\Aa\Z",
    r"(?m)^1$",
    r"(?s)a.1",
    r"(?i:a_)",
    r"(?i)[^a]1",
    r"[\d_]+ ",
    r"\S+\s",
    r"a.*?1",
    r"a{2,3}?x",
    r"a{2}_{1,}",
    r"(a|ab)(c|bcd)?x",
    r"(?:a*)*_",
    r"(?:a|_)+?1",
    r"(?<=a)1",
    r"(?<!_)a",
    r"(?=a1)\w+",
    r"(?!a)\w\s",
    r"x*",
]


@pytest.mark.parametrize("pattern", CONSTRUCTS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet="aA1_ \nx", max_size=12))
def test_the_model_agrees_with_re_on_each_construct(pattern, text):
    compiled = re.compile(pattern)
    program = compile_program(compiled)
    assert search_program(program, text, 10**6, registers(program))[0] == bool(compiled.search(text))


def test_unsupported_constructs_are_refused():
    with pytest.raises(Unsupported):
        compile_program(re.compile(r"(a)\1"))


# --- the rewritten patterns find what the old ones found ----------------------------------------

#: (signature, index of the rewritten pattern, the patterns it replaces), where the rewrite matches
#: the same lines: ".*" became "(?:(?!A).)*" after a start A, which only stops at a later A, from
#: which the search matches the same end (no A overlaps what follows the gap); a leading run got a
#: look-behind, so it starts only where a match could also start
SAME_LINES = [
    ("nccl-timeout", 1, [r"WorkNCCL\(.*\) ran for \d+ milliseconds before timing out"]),
    ("flash-attn-undefined-symbol", 0, [r"flash_attn.*undefined symbol", r"flash_attn_2_cuda.*\.so: undefined symbol"]),
    ("placement-group-pending", 3, [r"\d+\+? pending placement groups"]),
    ("pthread-create-failed", 4, [r"Resource temporarily unavailable.*thread"]),
    ("nccl-network", 1, [r"NET/(?:Socket|IB).*(?:failed|Connection refused)"]),
    ("gloo-connect-failed", 1, [r"ProcessGroupGloo.*(?:Connection refused|Timed out|timed out)"]),
    ("port-in-use", 2, [r"server socket has failed to (?:listen|bind).*port: (?P<port>\d+)"]),
    ("cuda-driver-init", 0, [r"Unexpected error from cudaGetDeviceCount\(\).*Error (?P<code>80[2-5])"]),
    ("rendezvous-unreachable", 2, [r"DistNetworkError: .*(?:Connection refused|timed out)"]),
]
BY_ID = {s.id: s for s in SIGNATURES}


def _pieces(*patterns: re.Pattern[str]) -> list[str]:
    """Bits of text that make up lines these patterns match, and almost match."""
    out = {piece for p in patterns for head, piece in fragments(p)} | {" ", "x", ":", "\n"}
    return sorted(out)


PIECES = {i: _pieces(BY_ID[i].patterns[n], *map(re.compile, old)) for i, n, old in SAME_LINES}


@pytest.mark.parametrize(("sig_id", "index", "old"), SAME_LINES, ids=[s[0] for s in SAME_LINES])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_rewritten_pattern_matches_the_same_lines(sig_id, index, old, data):
    new = BY_ID[sig_id].patterns[index]
    olds = [re.compile(o) for o in old]
    text = "".join(data.draw(st.lists(st.sampled_from(PIECES[sig_id]), max_size=12)))
    assert bool(new.search(text)) == any(o.search(text) for o in olds), (new.pattern, text)


OLD_VERSION = re.compile(
    r"(?i:\b(vllm|torch|tensordict|triton|transformers|ray|flash[-_]attn|verl|datasets|sglang|pytorch)"
    r"(?: api server)?(?: version)?\s*(?:==|:|\s)\s*v?(\d+\.\d+(?:\.\d+)?(?:[+.]\w+)*))"
)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("torch 2.4.0+cu124", ("torch", "2.4.0+cu124")),
        ("vllm==0.8.3", ("vllm", "0.8.3")),
        ("vllm         : 0.8.3", ("vllm", "0.8.3")),
        ("vLLM API server version 0.8.2", ("vLLM", "0.8.2")),
        ("PyTorch version: 2.6.0", ("PyTorch", "2.6.0")),
        ("torch                    2.6.0+cu124", ("torch", "2.6.0+cu124")),  # pip list's columns
        ("flash_attn  ==  2.7.4.post1", ("flash_attn", "2.7.4.post1")),
    ],
)
def test_a_version_line_is_read(text, found):
    assert [m.groups() for m in VERSION.finditer(text)] == [found]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([*_pieces(VERSION, OLD_VERSION), "torch", "vLLM", "2.6.0", "  "]), max_size=12))
def test_versions_are_read_as_before(pieces):
    text = "".join(pieces)
    assert [m.groups() for m in VERSION.finditer(text)] == [m.groups() for m in OLD_VERSION.finditer(text)]


#: real lines of the rewritten signatures whose rewrite is narrower than before; each must still hit
REAL_LINES = [
    (
        "triton-compile-module",
        '  File "/usr/lib/python3/dist-packages/triton/backends/nvidia/driver.py", line 57, in compile_module_from_src',
    ),
    (
        "version-mismatch",
        "vllm 0.8.3 requires torch==2.6.0, but you have torch 2.5.1 which is incompatible.",
    ),
    (
        "version-mismatch",
        'vllm 0.7.3 requires xformers==0.0.28.post3; platform_system == "Linux" and platform_machine == "x86_64", '
        "but you have xformers 0.0.29 which is incompatible.",
    ),
    (
        "dataset-column-missing",
        "KeyError: \"None of [Index(['prompt'], dtype='object')] are in the [columns]\"",
    ),
    (
        "checkpoint-merge",
        '  File "/workspace/verl/verl/model_merger/base_model_merger.py", line 318, in __init__',
    ),
    (
        "checkpoint-merge",
        '  File "/workspace/verl/scripts/model_merger.py", line 12, in <module>',
    ),
    (
        "rendezvous-unreachable",
        "[W socket.cpp:663] [c10d] The client socket has timed out after 600000ms while trying to connect to "
        "(10.0.0.2, 29500).",
    ),
    (
        "nccl-timeout",
        "[Rank 1] Watchdog: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600083 milliseconds before timing out.",
    ),
]


@pytest.mark.parametrize(("sig_id", "text"), REAL_LINES, ids=[f"{i}-{k}" for i, (k, _) in enumerate(REAL_LINES)])
def test_a_real_line_still_hits(sig_id, text):
    assert any(p.search(text) for p in BY_ID[sig_id].patterns), text


def test_the_rendezvous_address_is_captured():
    d = diagnose([REAL_LINES[6][1]], SIGNATURES)
    assert dict(d.matches[0].captures) == {"host": "10.0.0.2", "port": "29500"}


def test_a_glog_warning_is_still_a_warning():
    """Ray's C++ prefix with W is a warning (the OOM in it did not end the run); with E it is not."""
    for level, fatal in (("W", False), ("E", True)):
        text = f"[2025-10-25 13:08:43,123 {level} 812 812] raylet.cc:1234: CUDA out of memory"
        assert bool(WARNING_LINE.search(text)) != fatal
        assert [(m.signature.id, m.fatal) for m in diagnose([text], SIGNATURES).matches] == [
            ("cuda-out-of-memory", fatal)
        ]


# --- the cases issue 41 reported, through doctor -------------------------------------------------

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def test_an_oom_line_ending_in_a_run_of_brackets_is_the_oom():
    """The run of "[" does not make the line a warning (how fast: benchmarks/bench_doctor.py)."""
    d = diagnose([f"(WorkerDict pid=812) {OOM} " + "[" * 5_000], SIGNATURES)
    assert [(m.signature.id, m.fatal) for m in d.matches] == [("cuda-out-of-memory", True)]


def test_a_line_of_net_socket_is_no_finding_but_a_failed_connect_is():
    assert diagnose(["NET/Socket " * 500], SIGNATURES).matches == ()
    text = "NET/Socket " * 500 + ": Connect to 10.0.0.2<43521> failed : Connection refused"
    assert [m.signature.id for m in diagnose([text], SIGNATURES).matches] == ["nccl-network"]


# --- confirming lines: each line is searched once per signature, however many hits it is near -----


class Counting:
    """A confirming pattern that records the lines it is searched in."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.seen = pattern, []

    def search(self, text: str) -> re.Match[str] | None:
        self.seen.append(text)
        return self.pattern.search(text)


def test_each_line_is_searched_for_a_confirming_line_once():
    """100 unconfirmed OOM hits in a row: before, each of the first 50 searched the 40 lines before
    it again (a log of long lines cost its length times the hits); now each line is searched once."""
    sig = BY_ID["training-oom"]
    counting = tuple(Counting(c) for c in sig.confirm)
    table = [dataclasses.replace(s, confirm=counting) if s is sig else s for s in SIGNATURES]
    log = [f"{OOM} (hit {i})" for i in range(100)]
    assert not Scan(table).run(log).hits["training-oom"].confirmed
    for c in counting:
        assert sorted(c.seen) == sorted(set(c.seen)), "a line was searched twice"
        assert len(c.seen) == 50 + 40, "the hits that look (the first 50) and the 40 lines after the last"


@pytest.mark.parametrize(
    ("log", "confirmed"),
    [
        (["update_policy"] + ["noise"] * 39 + [OOM], True),  # 40 lines before
        (["update_policy"] + ["noise"] * 40 + [OOM], False),
        ([OOM] + ["noise"] * 39 + ["update_policy"], True),  # 40 lines after
        ([OOM] + ["noise"] * 40 + ["update_policy"], False),
        ([OOM] + ["noise"] * 29 + [OOM] + ["noise"] * 39 + ["update_policy"], True),  # 40 after the second hit
        ([OOM] + ["noise"] * 29 + [OOM] + ["noise"] * 40 + ["update_policy"], False),
        ([OOM] + ["noise"] * 29 + [OOM, "update_policy"], True),  # after the second, within the first's reach
    ],
)
def test_the_confirming_window_reaches_40_lines_either_way(log, confirmed):
    (m,) = [m for m in diagnose(log, SIGNATURES).matches if m.signature.id in ("training-oom", "cuda-out-of-memory")]
    assert (m.signature.id == "training-oom") == confirmed
