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
#: the package names a "NAME: VERSION" line may start with (pip freeze, pip list, a user's list)
NAMES = frozenset([*PACKAGES, "flash_attn", "pytorch"])
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


# --- which two packages do not fit, and at which versions ------------------------------------------
#
# A version-mismatch finding is acted on only when it names the pair: "vllm 0.3.2 was built for torch
# 2.1.2; torch 2.2.1 is installed: install torch==2.1.2". The tables hold what each release was built
# against, each row read from the release's own published metadata: the ``Requires-Dist`` lines of its
# manylinux x86_64 wheel on PyPI (the METADATA file inside the wheel, as ``pip download --no-deps``
# gets it). A release not in them gets no claim, only what the log says.

#: vLLM release prefix -> the torch its CUDA wheels require, exactly (``Requires-Dist: torch==X``)
VLLM_TORCH = (
    ("0.3.", "2.1.2"),  # vllm-0.3.0 .. 0.3.3-cp310-manylinux1_x86_64.whl: torch ==2.1.2
    ("0.4.0", "2.1.2"),  # vllm-0.4.0, 0.4.0.post1: torch ==2.1.2
    ("0.4.1", "2.2.1"),  # vllm-0.4.1: torch ==2.2.1
    ("0.4.2", "2.3.0"),  # vllm-0.4.2: torch ==2.3.0
    ("0.4.3", "2.3.0"),  # vllm-0.4.3: torch ==2.3.0
    ("0.5.0", "2.3.0"),  # vllm-0.5.0: torch ==2.3.0
    ("0.5.1", "2.3.0"),  # vllm-0.5.1: torch ==2.3.0
    ("0.5.2", "2.3.1"),  # vllm-0.5.2-cp38-abi3: torch (==2.3.1)
    ("0.5.3", "2.3.1"),  # vllm-0.5.3: torch ==2.3.1
    ("0.5.4", "2.4.0"),  # vllm-0.5.4: torch==2.4.0
    ("0.5.5", "2.4.0"),  # vllm-0.5.5: torch==2.4.0
    ("0.6.0", "2.4.0"),  # vllm-0.6.0: torch==2.4.0
    ("0.6.1", "2.4.0"),  # vllm-0.6.1: torch==2.4.0
    ("0.6.2", "2.4.0"),  # vllm-0.6.2: torch==2.4.0
    ("0.6.3", "2.4.0"),  # vllm-0.6.3: torch==2.4.0
    ("0.6.4", "2.5.1"),  # vllm-0.6.4: torch==2.5.1
    ("0.6.5", "2.5.1"),  # vllm-0.6.5: torch==2.5.1; platform_machine != "aarch64"
    ("0.6.6", "2.5.1"),  # vllm-0.6.6: torch==2.5.1
    ("0.7.", "2.5.1"),  # vllm-0.7.0 .. 0.7.3: torch==2.5.1
    ("0.8.", "2.6.0"),  # vllm-0.8.0, 0.8.3, 0.8.5: torch==2.6.0
    ("0.9.", "2.7.0"),  # vllm-0.9.0 .. 0.9.2: torch==2.7.0
    ("0.10.0", "2.7.1"),  # vllm-0.10.0: torch==2.7.1
    ("0.10.1", "2.7.1"),  # vllm-0.10.1, 0.10.1.1: torch==2.7.1
    ("0.10.2", "2.8.0"),  # vllm-0.10.2: torch==2.8.0
    ("0.11.0", "2.8.0"),  # vllm-0.11.0: torch==2.8.0
    ("0.11.1", "2.9.0"),  # vllm-0.11.1: torch==2.9.0
    ("0.11.2", "2.9.0"),  # vllm-0.11.2: torch==2.9.0
    ("0.12.", "2.9.0"),  # vllm-0.12.0-cp38-abi3-manylinux_2_31_x86_64.whl: torch==2.9.0
)
#: tensordict minor release -> the torch minor release its wheels were built with (their lower bound,
#: ``Requires-Dist: torch>=X``). tensordict 0.8.0 .. 0.10.0 declare a bare ``torch`` (no bound): no
#: row, so no claim is made about them.
TENSORDICT_TORCH = (
    ("0.5", "2.4"),  # tensordict-0.5.0-cp310-manylinux1_x86_64.whl: torch (>=2.4.0)
    ("0.6", "2.5"),  # tensordict-0.6.0, 0.6.2: torch (>=2.5.0)
    ("0.7", "2.6"),  # tensordict-0.7.0, 0.7.2: torch>=2.6.0
)
#: the first tensordict whose wheels declare no torch bound
TENSORDICT_UNBOUND = "0.8"
#: torch release -> the triton it pins (``Requires-Dist: triton==X; platform_system == "Linux" and
#: platform_machine == "x86_64"``); per release, not per minor: 2.7.0 and 2.7.1 pin different ones
TORCH_TRITON = (
    ("2.1.0", "2.1.0"),  # torch-2.1.0-cp310-manylinux1_x86_64.whl: triton (==2.1.0)
    ("2.1.1", "2.1.0"),  # torch-2.1.1: triton (==2.1.0)
    ("2.1.2", "2.1.0"),  # torch-2.1.2: triton (==2.1.0)
    ("2.2.0", "2.2.0"),  # torch-2.2.0: triton (==2.2.0)
    ("2.2.1", "2.2.0"),  # torch-2.2.1: triton (==2.2.0)
    ("2.2.2", "2.2.0"),  # torch-2.2.2: triton (==2.2.0)
    ("2.3.0", "2.3.0"),  # torch-2.3.0: triton (==2.3.0)
    ("2.3.1", "2.3.1"),  # torch-2.3.1: triton (==2.3.1)
    ("2.4.0", "3.0.0"),  # torch-2.4.0: triton (==3.0.0)
    ("2.4.1", "3.0.0"),  # torch-2.4.1: triton (==3.0.0)
    ("2.5.0", "3.1.0"),  # torch-2.5.0: triton (==3.1.0)
    ("2.5.1", "3.1.0"),  # torch-2.5.1: triton (==3.1.0)
    ("2.6.0", "3.2.0"),  # torch-2.6.0: triton (==3.2.0)
    ("2.7.0", "3.3.0"),  # torch-2.7.0-cp310-manylinux_2_28_x86_64.whl: triton==3.3.0
    ("2.7.1", "3.3.1"),  # torch-2.7.1: triton==3.3.1
    ("2.8.0", "3.4.0"),  # torch-2.8.0: triton==3.4.0
    ("2.9.0", "3.5.0"),  # torch-2.9.0: triton==3.5.0
    ("2.9.1", "3.5.1"),  # torch-2.9.1: triton==3.5.1
    ("2.10.0", "3.6.0"),  # torch-2.10.0: triton==3.6.0
)


def _plain(version: str) -> str:
    """ "2.4.0+cu124" -> "2.4.0": the local build tag does not change the ABI's release."""
    return version.split("+", 1)[0]


def _minor(version: str) -> str:
    return ".".join(_plain(version).split(".")[:2])


def _lookup(table: tuple[tuple[str, str], ...], version: str, *, prefix: bool = True) -> str | None:
    v = _plain(version)
    for key, value in table:
        if (v.startswith(key) and (key.endswith(".") or v == key or v[len(key)] in ".-")) if prefix else v == key:
            return value
    return None


def _vllm_for_torch(torch: str) -> str | None:
    """The last vLLM release prefix built for this torch release."""
    found = [key.rstrip(".") + ("x" if key.endswith(".") else "") for key, t in VLLM_TORCH if t == _plain(torch)]
    return found[-1] if found else None


def _tensordict_for_torch(torch: str) -> str | None:
    """The tensordict to install for this torch: "0.6.x" from the table, ">=0.8" past its last row."""
    found = [td for td, t in TENSORDICT_TORCH if t == _minor(torch)]
    if found:
        return f"{found[-1]}.x"
    return f">={TENSORDICT_UNBOUND}" if _newer(_minor(torch), TENSORDICT_TORCH[-1][1]) else None


def _newer(a: str, b: str) -> bool:
    """Whether release ``a`` ("2.7") comes after ``b`` ("2.6"); False when either is not numeric."""
    try:
        return tuple(int(x) for x in a.split(".")) > tuple(int(x) for x in b.split("."))
    except ValueError:
        return False


def _built_with(td: str | None, torch: str | None) -> str:
    """What an install suggestion says the tensordict fits: built with this torch, or declares no bound."""
    return "(its wheels declare no torch bound)" if td and td.startswith(">=") else f"(built for torch {torch})"


def mismatch(captures: dict[str, str], seen: dict[str, list[str]]) -> str:
    """The two packages that do not fit and their versions, as one sentence with what to install
    ("" when the log names neither the pair nor versions the tables know)."""
    first = {p: v[0] for p, v in seen.items() if v}
    pkg, dep = captures.get("pkg", ""), captures.get("dep", "")
    if pkg and captures.get("depver") and captures.get("req"):  # pip's own conflict line
        line = f"{pkg} {captures.get('pkgver', '')} requires {captures['req']}; {dep} {captures['depver']} is installed"
        alt = _tensordict_for_torch(captures["depver"]) if pkg == "tensordict" and dep == "torch" else None
        return f"{line}: install {captures['req']}, or " + (
            f"tensordict {alt} {_built_with(alt, _minor(captures['depver']))}"
            if alt
            else f"the {pkg} release built for {dep} {captures['depver']}"
        )
    torch = first.get("torch")
    if "vllm" in first and torch and (built := _lookup(VLLM_TORCH, first["vllm"])) and _plain(torch) != built:
        other = _vllm_for_torch(torch)
        return (
            f"vllm {first['vllm']} was built for torch {built}; torch {torch} is installed: install torch=={built}"
            + (f", or vllm {other} (built for torch {_plain(torch)})" if other else "")
        )
    td_built = _lookup(TENSORDICT_TORCH, _minor(first["tensordict"]), prefix=False) if "tensordict" in first else None
    if torch and td_built and td_built != _minor(torch):
        alt = _tensordict_for_torch(torch)
        return f"tensordict {first['tensordict']} was built for torch {td_built}; torch {torch} is installed: " + (
            f"install tensordict {alt} {_built_with(alt, _minor(torch))}" if alt else f"install torch {td_built}.x"
        )
    importer = captures.get("importer", "").replace("_", "-")
    if dep and importer and importer != dep:
        what = f"{importer} imports {captures.get('name', 'a name')} from {dep}, which the installed {dep}" + (
            f" {first[dep]}" if dep in first else ""
        )
        if importer == "tensordict" and dep == "torch":
            pairs = ", ".join(f"torch {t}: tensordict {td}" for td, t in TENSORDICT_TORCH[-3:])
            pairs += f"; tensordict >= {TENSORDICT_UNBOUND} declares no torch bound"
            return (
                f"{what} does not have: tensordict was built for another torch; "
                f"install the tensordict built for the installed torch ({pairs})"
            )
        if dep == "triton":
            pin = _lookup(TORCH_TRITON, torch, prefix=False) if torch else None
            return f"{what} does not have: " + (
                f"torch {torch} pins triton {pin}; install triton=={pin}"
                if pin
                else "install the triton the installed torch pins (pip show torch)"
            )
        return f"{what} does not have: {importer} and {dep} are from different releases"
    if dep and captures.get("name"):
        have = f"{dep} {first[dep]}" if dep in first else f"the installed {dep}"
        if dep.startswith("triton"):
            pin = _lookup(TORCH_TRITON, torch, prefix=False) if torch else None
            return f"{have} has no {captures['name']}: " + (
                f"torch {torch} pins triton {pin}; install triton=={pin} and the {dep} of that release"
                if pin
                else f"the code importing it was written for another {dep} release; "
                "install the triton the installed torch pins"
            )
        return f"{have} has no {captures['name']}: the package importing it was written for another {dep} release"
    return ""
