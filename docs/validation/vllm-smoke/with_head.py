"""Give a profile of a copy of profiles.toml a Ray head started beside the trainer (speed trial).

The smoke profile starts Ray's head while verl's driver imports (``ray_head_cpus``); the vLLM
profiles do not. This writes ``ray_head_cpus = N`` into PROFILE's table of the copy, so that
one run can measure what the setting is worth before it goes into the committed profiles.toml.

usage: python3 with_head.py COPY_OF_PROFILES_TOML PROFILE [CPUS]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path


def main(path: Path, profile: str, cpus: int) -> None:
    text = path.read_text(encoding="utf-8")
    table = f"[profile.{profile}]\n"
    if table not in text:
        sys.exit(f"with_head: {path} has no {table.strip()}")
    head, _, rest = text.partition(table)
    body_end = re.search(r"^(overrides|\[)", rest, re.MULTILINE)
    at = body_end.start() if body_end else 0
    rest = re.sub(r"^ray_head_cpus = .*\n", "", rest[:at], flags=re.MULTILINE) + f"ray_head_cpus = {cpus}\n" + rest[at:]
    path.write_text(head + table + rest, encoding="utf-8")
    print(f"with_head: profile {profile} gets ray_head_cpus = {cpus}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 8)
