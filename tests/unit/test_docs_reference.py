"""The generated Reference pages (docs/hooks/reference.py) as the site builds them: the model page lists every
public field, property and method of every type a plugin reads, so a field added to the model is documented or
the build fails."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import kubectl_desched.framework as face

ROOT = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()


def _sections(page: str) -> dict[str, str]:
    parts = re.split(r"^## (\w+)$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _public(cls: type) -> set[str]:
    fields = set(getattr(cls, "__struct_fields__", ())) or set(inspect.get_annotations(cls))
    members = {n for n, v in vars(cls).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))}
    return fields | members


def test_the_model_page_lists_every_public_field_of_every_model_type() -> None:
    sections = _sections(HOOK.model_page())
    assert list(sections) == [cls.__name__ for cls in HOOK.MODEL_TYPES]
    for cls in HOOK.MODEL_TYPES:
        listed = set(re.findall(r"^\| `(\w+)", sections[cls.__name__], flags=re.M))
        assert listed == _public(cls), cls.__name__
        for row in re.findall(r"^\| `.*", sections[cls.__name__], flags=re.M):
            assert not row.rstrip().endswith("|  |"), f"{cls.__name__}: a row says nothing: {row}"


def test_the_model_page_covers_the_model_types_of_the_face() -> None:
    model = {name for name in face.__all__ if face._MODULE_OF[name].startswith("kubectl_desched.model.")} - {"Matcher"}
    assert model == {cls.__name__ for cls in HOOK.MODEL_TYPES}


def test_a_field_without_a_docstring_fails_the_build() -> None:
    class Bare:
        """A type."""

        count: int

    with pytest.raises(ValueError, match=r"Bare\.count has no docstring"):
        HOOK.model_fields(Bare)
