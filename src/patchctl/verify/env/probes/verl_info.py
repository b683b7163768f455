"""Probe: where ``import verl`` resolves (run in the target's root, as a launch from there would),
whether it imports, and which other copies the interpreter would find from elsewhere."""

import importlib.util
import json
import os
import sys


def other_copies(here):
    found = []
    for entry in sys.path:
        if entry in ("", here) or not entry:
            continue
        path = os.path.join(entry, "verl", "__init__.py")
        if os.path.isfile(path):
            found.append(os.path.realpath(os.path.dirname(path)))
    return sorted(set(found))


def main():
    here = os.getcwd()
    out = {"cwd": here, "others": other_copies(here)}
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.origin:
        out["installed"] = False
        return out
    out["installed"] = True
    out["location"] = os.path.realpath(os.path.dirname(spec.origin))
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
