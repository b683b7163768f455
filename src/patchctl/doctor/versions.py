"""Package versions: the ones a log shows, and the ones verl pins.

A version-mismatch finding is only useful with the versions in it: "torch 2.4.0+cu124 is installed,
tensordict 0.6.2 wants torch>=2.5.0, and this verl pins torch==2.6.0". The log shows them in pip's
conflict lines, verl's ``diagnosis.py`` table, vLLM's banner and ``collect_env`` output; the pins
come from the installed verl's metadata or from a verl tree (``PKG-INFO``, else ``setup.py``).
"""

from __future__ import annotations

import ast
import re
from email.parser import HeaderParser
from importlib import metadata
from pathlib import Path

#: packages whose versions decide whether a verl run works
PACKAGES = ("vllm", "torch", "tensordict", "triton", "transformers", "ray", "flash-attn", "verl", "datasets", "sglang")
_NAMES = "|".join(p.replace("-", "[-_]") for p in PACKAGES) + "|pytorch"
#: "torch 2.4.0+cu124", "vllm==0.8.3", "vllm         : 0.8.3", "vLLM API server version 0.8.2", "PyTorch version: 2.6.0"
#: (the separator is "==" or ":" with spaces around, or spaces; not ``\s*(?:==|:|\s)\s*``, whose two
#: runs of spaces split a long run of spaces every way: quadratic)
VERSION = re.compile(
    rf"(?i:\b({_NAMES})(?: api server)?(?: version)?(?:\s*(?:==|:)\s*|\s+)v?(\d+\.\d+(?:\.\d+)?(?:[+.]\w+)*))"
)
#: at most this many versions are kept per package (a log may print one per step)
KEEP = 4


def _canonical(name: str) -> str:
    name = name.lower().replace("_", "-")
    return "torch" if name == "pytorch" else name


def seen_versions(line: str, into: dict[str, list[str]]) -> None:
    """Add the (package, version) pairs ``line`` shows to ``into``, first seen first."""
    for m in VERSION.finditer(line):
        seen = into.setdefault(_canonical(m.group(1)), [])
        if m.group(2) not in seen and len(seen) < KEEP:
            seen.append(m.group(2))


def _relevant(requirements: list[str]) -> tuple[str, ...]:
    out = []
    for req in requirements:
        req = req.split(";")[0].strip()
        name = re.split(r"[<>=!~\[ ]", req, maxsplit=1)[0]
        if _canonical(name) in PACKAGES and req not in out:
            out.append(req)
    return tuple(out)


def _from_setup_py(text: str) -> list[str]:
    """The string items of setup.py's ``install_requires`` and ``*_REQUIRES`` list literals."""
    out: list[str] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any(n == "install_requires" or n.endswith("REQUIRES") for n in names):
                out += [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return out


def verl_pins(tree: Path | None = None) -> tuple[str, tuple[str, ...]]:
    """(where the pins were read, the pinned requirements of the packages above), or (why not, ())."""
    if tree is None:
        try:
            return f"installed verl {metadata.version('verl')}", _relevant(metadata.requires("verl") or [])
        except metadata.PackageNotFoundError:
            return "verl is not installed here (pass --verl TREE to read a tree's pins)", ()
    for info in [tree / "PKG-INFO", *sorted(tree.glob("*.egg-info/PKG-INFO"))]:
        if info.is_file():
            headers = HeaderParser().parsestr(info.read_text(encoding="utf-8", errors="replace"))
            return f"{info}", _relevant(headers.get_all("Requires-Dist") or [])
    setup = tree / "setup.py"
    if setup.is_file():
        try:
            return f"{setup}", _relevant(_from_setup_py(setup.read_text(encoding="utf-8")))
        except (SyntaxError, ValueError):
            return f"{setup} cannot be parsed", ()
    return f"{tree} has neither PKG-INFO nor setup.py", ()
