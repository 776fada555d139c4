"""The package layout the import contracts (pyproject.toml, run by lint-imports in the test command) enforce:
every module sits in a layer, annotations count as imports, no package has import circles, and only a few
process-wide leaves are loose at the top."""

from __future__ import annotations

import tomllib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kubectl_desched"
CONFIG = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["tool"]["importlinter"]


def _modules() -> list[str]:
    out = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(out)


def _contract(kind: str) -> dict:
    [found] = [c for c in CONFIG["contracts"] if c["type"] == kind]
    return found


def test_every_module_is_in_a_layer() -> None:
    layers = [name.strip() for layer in _contract("layers")["layers"] for name in layer.split("|")]
    outside = [m for m in _modules() if m != "kubectl_desched"
               and not any(m == layer or m.startswith(layer + ".") for layer in layers)]
    assert outside == []


def test_type_only_imports_count_and_circles_are_refused() -> None:
    assert CONFIG["exclude_type_checking_imports"] is False
    assert _contract("acyclic_siblings")["ancestors"] == ["kubectl_desched"]


def test_few_loose_modules() -> None:
    loose = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 8, loose
