"""The failure-signature table: its declared schema and the one validating loader."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from patchctl.errors import ManifestError
from patchctl.schema import Field, check

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FORMAT = 1
SEVERITIES = ("fatal", "warning")
CONFIDENCES = ("likely", "possible")
#: how many lines before and after a hit a confirming line may be (a traceback's reach)
CONFIRM_WINDOW = 40
TOP_SCHEMA = {
    "format": Field(int, True, "1"),
    "signature": Field(list, True, "one or more [[signature]] tables", item=dict),
}
SIGNATURE_SCHEMA = {
    "id": Field(str, True, 'a kebab-case id such as "nccl-timeout"'),
    "title": Field(str, True, "a one-line title"),
    "patterns": Field(list, False, "a list of regular expressions; any one matching a line is a hit", item=str),
    "functions": Field(list, False, "functions the failure happens in; a traceback line naming one is a hit", item=str),
    "cause": Field(str, True, "why it happens"),
    "fix": Field(str, True, "what to do"),
    "source": Field(str, False, "where the entry comes from"),
    "severity": Field(str, False, '"fatal" (ends a run; the default) or "warning"', choices=SEVERITIES),
    "generic": Field(bool, False, "true when the failure only points at another one (a worker died, a timeout)"),
    "confidence": Field(str, False, '"likely" (the default) or "possible"', choices=CONFIDENCES),
    "confirm": Field(
        list, False, "regular expressions; without one of them near a hit, the finding is only possible", item=str
    ),
    "unless": Field(list, False, "regular expressions; a hit line matching one is not a hit", item=str),
    "refines": Field(list, False, "ids of more generic signatures this one explains on the same line", item=str),
    "versions": Field(bool, False, "true to list the package versions the log shows, and verl's pins"),
    "resolves": Field(dict, True, "a [signature.resolves] table with patch, env, override, package or command"),
}
RESOLVES_SCHEMA = {
    "patch": Field(list, False, 'patches as "patchset/patch-id"', item=str),
    "env": Field(list, False, 'environment settings such as "NCCL_DEBUG=INFO"', item=str),
    "override": Field(list, False, "hydra overrides such as actor_rollout_ref.rollout.enforce_eager=True", item=str),
    "package": Field(list, False, "package requirements", item=str),
    "command": Field(list, False, "commands to run", item=str),
}
ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
FUNCTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def function_patterns(name: str) -> tuple[re.Pattern[str], ...]:
    """The traceback lines that name ``name``: its frame (``File "...", line 57, in NAME``) and a
    caller's source line (``mod = NAME(...)``, ``self.NAME(...)``), so either line alone, as a user
    pastes it, is a hit. The file name is ``[^"]*``, not ``.*``: from each ``File "`` the search
    would otherwise run to the end of the line, quadratic in a line of many of them."""
    word = re.escape(name)
    return (re.compile(rf'File "[^"]*", line \d+, in {word}\s*$'), re.compile(rf"(?<!\w){word}\s*\("))


@dataclass(frozen=True)
class Resolution:
    #: patches that resolve it, "patchset/patch-id"
    patch: tuple[str, ...] = ()
    #: environment variables to set
    env: tuple[str, ...] = ()
    #: hydra overrides for the training command
    override: tuple[str, ...] = ()
    #: package requirements to install
    package: tuple[str, ...] = ()
    #: commands to run
    command: tuple[str, ...] = ()

    def items(self) -> list[tuple[str, str]]:
        """(kind, text) pairs in a fixed order, for rendering."""
        return [(k, v) for k in ("patch", "env", "override", "package", "command") for v in getattr(self, k)]


@dataclass(frozen=True)
class Signature:
    id: str
    title: str
    #: compiled patterns; a line matching any of them is a hit
    patterns: tuple[re.Pattern[str], ...]
    cause: str
    fix: str
    resolves: Resolution
    source: str = ""
    #: "fatal" or "warning": a warning never outranks the error that ended a run
    severity: str = "fatal"
    #: True when it only points elsewhere ("a Ray worker died"): a specific cause outranks it
    generic: bool = False
    #: "likely", or "possible" when the pattern also matches other failures
    confidence: str = "likely"
    #: a line near a hit that makes it likely (else it is possible); empty: no condition
    confirm: tuple[re.Pattern[str], ...] = ()
    #: a hit line that matches one of these is not a hit
    unless: tuple[re.Pattern[str], ...] = ()
    #: generic signatures whose hit on the same line this one explains
    refines: tuple[str, ...] = ()
    #: whether the finding lists package versions seen in the log and the pins of verl
    versions: bool = False


def default_path() -> Path:
    return Path(str(resources.files("patchctl.doctor") / "signatures.toml"))


def _signature(raw: dict[str, Any], i: int, file: Path) -> Signature:
    key = f"signature[{i}]"
    check(raw, SIGNATURE_SCHEMA, file=file, prefix=f"{key}.")
    if not ID.match(raw["id"]):
        raise ManifestError(file, f"{key}.id", f"{raw['id']!r} is not kebab-case", 'write e.g. "nccl-timeout"')
    if not raw.get("patterns") and not raw.get("functions"):
        raise ManifestError(
            file,
            f"{key}.patterns",
            "is empty and there are no functions",
            "list at least one regular expression or function name",
        )
    compiled: list[re.Pattern[str]] = []
    extra = {k: _regexes(raw.get(k, []), file, f"{key}.{k}") for k in ("confirm", "unless")}
    for j, name in enumerate(raw.get("functions", [])):
        if not FUNCTION.match(name):
            raise ManifestError(
                file,
                f"{key}.functions[{j}]",
                f"{name!r} is not a Python name",
                'write the bare name, e.g. "compile_module_from_src"',
            )
        compiled.extend(function_patterns(name))
    compiled.extend(_regexes(raw.get("patterns", []), file, f"{key}.patterns"))
    resolves = check(raw["resolves"], RESOLVES_SCHEMA, file=file, prefix=f"{key}.resolves.")
    if not any(resolves.values()):
        raise ManifestError(
            file, f"{key}.resolves", "names nothing", "name at least one patch, env, override, package or command"
        )
    for j, ref in enumerate(resolves.get("patch", [])):
        if ref.count("/") != 1:
            raise ManifestError(
                file,
                f"{key}.resolves.patch[{j}]",
                f"{ref!r} is not patchset/patch-id",
                'write e.g. "uky/triton-cuda-stubs"',
            )
    return Signature(
        raw["id"],
        raw["title"],
        tuple(compiled),
        raw["cause"].strip(),
        raw["fix"].strip(),
        Resolution(**{k: tuple(v) for k, v in resolves.items()}),
        raw.get("source", ""),
        raw.get("severity", "fatal"),
        raw.get("generic", False),
        raw.get("confidence", "likely"),
        extra["confirm"],
        extra["unless"],
        tuple(raw.get("refines", [])),
        raw.get("versions", False),
    )


def _regexes(patterns: list[str], file: Path, key: str) -> tuple[re.Pattern[str], ...]:
    out = []
    for j, pattern in enumerate(patterns):
        try:
            out.append(re.compile(pattern))
        except re.error as exc:
            raise ManifestError(
                file,
                f"{key}[{j}]",
                f"not a regular expression ({exc})",
                "fix the pattern (backslashes are doubled in TOML basic strings)",
            ) from None
    return tuple(out)


def load_signatures(path: Path | None = None) -> list[Signature]:
    """Read and validate the table (default: the shipped one); errors name the file and the key."""
    file = Path(path) if path else default_path()
    try:
        doc = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(file, "(document)", f"cannot be read ({exc.strerror})", "pass an existing file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(file, "(document)", f"not valid TOML ({exc})", "fix the syntax") from None
    check(doc, TOP_SCHEMA, file=file)
    if doc["format"] != FORMAT:
        raise ManifestError(file, "format", f"{doc['format']} is not supported", f"write format = {FORMAT}")
    sigs = [_signature(raw, i, file) for i, raw in enumerate(doc["signature"])]
    seen: set[str] = set()
    for i, s in enumerate(sigs):
        if s.id in seen:
            raise ManifestError(file, f"signature[{i}].id", f"{s.id!r} is used twice", "give each signature its own id")
        seen.add(s.id)
    for i, s in enumerate(sigs):
        for j, ref in enumerate(s.refines):
            if ref not in seen:
                raise ManifestError(
                    file,
                    f"signature[{i}].refines[{j}]",
                    f"{ref!r} is no signature's id",
                    "name the id of a signature in this table",
                )
    return sigs
