"""Every ``equivalent`` key of benchmarks/mutation.toml names a mutant the script still makes.

A key is ``LINE:COLUMN:KIND``: an edit above a listed mutant moves it, the mutant is then
reported as a survivor and its reason sits on nothing (or on another mutant it does not
describe). Finding the keys is cheap (one ``ast`` walk per module), so this runs with the suite
instead of waiting for a mutation run that takes an hour.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "mutation.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MUTATION = _script()
MODULES = {mod.name: mod for mod in MUTATION.load(MUTATION.CONFIG)}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_equivalent_keys_name_a_mutant(name: str) -> None:
    mod = MODULES[name]
    stale = {key: mod.equivalent[key] for key in MUTATION.unmatched(mod)}
    assert not stale, f"{mod.path.name}: re-point these keys to the line their reason describes: {stale}"


def test_a_moved_key_is_caught(tmp_path: Path) -> None:
    """The check itself: a key one line off its mutant is reported, the right one is not."""
    source = tmp_path / "m.py"
    source.write_text("def f(n):\n    return n + 1\n")
    config = tmp_path / "mutation.toml"
    config.write_text(
        f'[module.m]\npath = "{source}"\nfast = []\n'
        '[module.m.equivalent]\n"2:15:int" = "right"\n"3:15:int" = "one line off"\n'
    )
    (mod,) = MUTATION.load(config)
    assert MUTATION.unmatched(mod) == ["3:15:int"]
