"""libyaml's own nesting limit (PyYAML 6.0.4's wheels: between 1,000 and 5,000 levels) can stop a document before
safeload's event walk reaches MAX_DEPTH, because its scanner reads ahead; the refusal must read the same either way,
whichever PyYAML the machine has."""

from __future__ import annotations

import pytest
import yaml

from kubectl_desched import safeload


def test_libyamls_nesting_error_reads_as_ours() -> None:
    mark = yaml.Mark("<x>", 0, 1, 7, None, None)
    error = yaml.scanner.ScannerError("while increasing flow level", mark, "exceeded maximum nesting depth", mark)
    message = str(safeload._yaml_error(error, "deep.yaml"))
    assert message == f"deep.yaml: nested more than {safeload.MAX_DEPTH} levels deep at line 2"


@pytest.mark.parametrize("depth", [safeload.MAX_DEPTH + 1, 20_000])
def test_deep_flow_yaml_is_refused_as_too_deep_at_any_depth(depth: int) -> None:
    with pytest.raises(safeload.InputError) as info:
        safeload.yaml_value("a: " + "[" * depth + "]" * depth, "deep.yaml")
    assert f"nested more than {safeload.MAX_DEPTH} levels deep" in str(info.value)
