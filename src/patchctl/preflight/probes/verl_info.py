"""Probe: where ``import verl`` resolves when a run is launched from the target's root (the probe's
working directory, first on sys.path as with ``python -m``), where it resolves for a process
started anywhere else (a Ray worker, a script elsewhere), and whether it imports."""

import importlib.machinery
import importlib.util
import json
import os
import sys

# typing is imported for mypy alone (which takes any TYPE_CHECKING as true): the probe never pays for it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Any


def origin_dir(spec: "ModuleSpec | None") -> "str | None":
    if spec is None or not spec.origin:
        return None
    return os.path.realpath(os.path.dirname(spec.origin))


def main() -> "dict[str, Any]":
    here = os.getcwd()
    elsewhere_path = [p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(here)]
    out: dict[str, Any] = {
        "cwd": here,
        "elsewhere": origin_dir(importlib.machinery.PathFinder.find_spec("verl", elsewhere_path)),
    }
    location = origin_dir(importlib.util.find_spec("verl"))
    out["installed"] = location is not None
    if location is None:
        return out
    out["location"] = location
    try:
        import verl
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["missing"] = getattr(exc, "name", None)
        return out
    out["version"] = getattr(verl, "__version__", "?")
    return out


if __name__ == "__main__":
    print("@@patchctl-probe@@ " + json.dumps(main()), flush=True)
