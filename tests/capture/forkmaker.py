"""Hand edits of our own on a verl release, the kind a fork accumulates, each tagged ``# Uky``.

Shared by the capture tests and benchmarks/bench_capture.py. Each edit is a plain text
replacement that must match exactly once, so a release where it does not fit fails loudly.
"""

from __future__ import annotations

from pathlib import Path

GSM8K = "verl/utils/reward_score/gsm8k.py"
TRACKING = "verl/utils/tracking.py"
PROBE = "scripts/uky_probe.sh"

#: (file, old text, new text, what it shows)
EDITS: list[tuple[str, str, str, str]] = [
    (
        GSM8K,
        'def compute_score(solution_str, ground_truth, method="strict", format_score=0.0, score=1.0):\n',
        (
            'def compute_score(solution_str, ground_truth, method="flexible", format_score=0.0, score=1.0):'
            "  # Uky: accept answers without the #### marker\n"
        ),
        "changed default argument",
    ),
    (
        GSM8K,
        "_SOLUTION_CLIP_CHARS = 300\n",
        (
            "_SOLUTION_CLIP_CHARS = 300\n\n\n"
            "def normalize_answer(text):  # Uky: one place for answer clean-up\n"
            '    return text.replace(",", "").strip()  # Uky\n'
        ),
        "new helper function",
    ),
    (TRACKING, "\nimport os\n", "\nimport os\nimport time  # Uky\n", "extra import"),
    (
        TRACKING,
        '        data = {"step": step, "data": data}\n',
        '        data = {"step": step, "data": data, "time": time.time()}  # Uky: timestamps in the jsonl log\n',
        "edited line inside a method",
    ),
]

PROBE_TEXT = """#!/usr/bin/env bash
# Uky: print what the node sees before a run
set -euo pipefail
nvidia-smi -L || true  # Uky
python3 -c "import verl, sys; print(verl.__file__, sys.version)"
"""


def make_fork(tree: Path) -> None:
    """Apply the hand edits to the verl tree at ``tree`` in place, and add the new script."""
    for rel, old, new, what in EDITS:
        path = tree / rel
        text = path.read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise AssertionError(f"{rel}: the {what} edit expects its text once, found {text.count(old)}")
        path.write_text(text.replace(old, new), encoding="utf-8")
    probe = tree / PROBE
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_text(PROBE_TEXT, encoding="utf-8")
    probe.chmod(0o755)
