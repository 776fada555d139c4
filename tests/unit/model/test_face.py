"""kubectl_desched.model is a lazy face: the object types as before the package layout (out-of-tree plugins import
them from there), loaded only when a name is used, so the command line's leaves (durations, names) start without
msgspec and the object model."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kubectl_desched.model as face
from kubectl_desched.model import objects


def test_the_face_gives_the_object_types() -> None:
    for name in face.__all__:
        assert getattr(face, name) is getattr(objects, name)
    with pytest.raises(AttributeError):
        _ = face.ClusterState  # not an object type: model.state has it


def test_a_leaf_loads_without_the_object_model() -> None:
    code = ("import sys, kubectl_desched.model.durations, kubectl_desched.model.names; "
            "print('kubectl_desched.model.objects' in sys.modules, 'msgspec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
