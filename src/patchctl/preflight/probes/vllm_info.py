"""Probe: vLLM's version and which attention backend names it accepts and has implemented.

vLLM moved its backend enum across releases: ``vllm.platforms.interface._Backend`` (0.8-0.10),
``vllm.attention.backends.registry._Backend`` (0.10.2-0.11), then ``AttentionBackendEnum`` whose
value is the implementing class path; an empty path (TORCH_SDPA in 0.12) is a name that exists
but fails with "Backend TORCH_SDPA must be registered before use".
"""

import importlib
import importlib.util
import json

# typing is imported for mypy alone (which takes any TYPE_CHECKING as true): the probe never pays for it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def backends() -> "dict[str, Any] | None":
    for module, attr in (
        ("vllm.v1.attention.backends.registry", "AttentionBackendEnum"),
        ("vllm.attention.backends.registry", "AttentionBackendEnum"),
        ("vllm.attention.backends.registry", "_Backend"),
        ("vllm.platforms.interface", "_Backend"),
    ):
        try:
            enum_cls = getattr(importlib.import_module(module), attr)
            members = list(enum_cls.__members__.values())
        except Exception:  # noqa: S112 - not this release's layout: the next candidate is tried
            continue
        names, unusable = [], []
        for m in members:
            names.append(m.name)
            get_path = getattr(m, "get_path", None)
            if get_path is not None:
                try:
                    get_path()
                except Exception:
                    unusable.append(m.name)
        return {"module": f"{module}.{attr}", "names": names, "unregistered": unusable}
    return None


def main() -> "dict[str, Any]":
    if importlib.util.find_spec("vllm") is None:
        return {"installed": False}
    try:
        import vllm
    except Exception as exc:
        return {"installed": True, "error": f"{type(exc).__name__}: {exc}", "missing": getattr(exc, "name", None)}
    return {"installed": True, "version": getattr(vllm, "__version__", "?"), "backends": backends()}


if __name__ == "__main__":
    print("@@patchctl-probe@@ " + json.dumps(main()), flush=True)
