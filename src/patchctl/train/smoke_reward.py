"""The smoke profile's rule reward, loaded by verl from this file's path.

verl imports it with ``custom_reward_function.path=<this file>`` and calls ``compute_score``
for every response, so it must stand alone: no patchctl imports, standard library only.
The score is the share of the response's words that equal the letter the prompt asked for: 0
for an empty answer or any other word, 1 for "b b b" when asked "say b". Partial credit gives
GRPO a signal from the first step, when a random model hits the letter by chance.

:func:`compute_char_score` is the same rule per character, for the byte-level tokenizer of the
``smoke-vllm`` profile: its tokens are letters and pieces of words, so a random response rarely
forms whole words, but its characters hit the letter about once in a dozen.
"""

from __future__ import annotations

from typing import Any


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **_: Any) -> float:
    words = solution_str.split()
    if not words:
        return 0.0
    return sum(w == ground_truth for w in words) / len(words)


def compute_char_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **_: Any
) -> float:
    chars = [c for c in solution_str if not c.isspace()]
    if not chars:
        return 0.0
    return sum(c == ground_truth for c in chars) / len(chars)
