"""Probe: whether flash_attn is installed and imports (its CUDA extension loads against torch)."""

import importlib.util
import json

# typing is imported for mypy alone (which takes any TYPE_CHECKING as true): the probe never pays for it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def main() -> "dict[str, Any]":
    if importlib.util.find_spec("flash_attn") is None:
        return {"installed": False}
    try:
        import flash_attn
        import flash_attn.flash_attn_interface  # loads flash_attn_2_cuda, where ABI breaks show
    except Exception as exc:  # any import failure is the finding
        return {"installed": True, "error": f"{type(exc).__name__}: {exc}", "missing": getattr(exc, "name", None)}
    return {"installed": True, "version": getattr(flash_attn, "__version__", "?")}


if __name__ == "__main__":
    print("@@patchctl-probe@@ " + json.dumps(main()), flush=True)
