"""kubectl's -o name, jsonpath and custom-columns, and --sort-by, over a plan document."""

from __future__ import annotations

import pytest

from kubectl_desched.errors import UsageError
from kubectl_desched.ui import formats as output

DOC = {"kind": "Plan", "candidates": [
    {"namespace": "shop", "pod": "web-1", "node": "n1", "priority": 5, "labels": {"app": "web"}},
    {"namespace": "shop", "pod": "db-0", "node": "n2", "priority": 1, "labels": {"app": "db"}},
    {"namespace": "data", "pod": "etl-9", "node": "n1"}]}


def test_name_is_resource_slash_name() -> None:
    assert output.names(DOC["candidates"]) == "pod/web-1\npod/db-0\npod/etl-9"


def test_jsonpath_fields_ranges_and_literals() -> None:
    assert output.jsonpath("{.candidates[*].pod}", DOC) == "web-1 db-0 etl-9"
    assert output.jsonpath(r'{range .candidates[*]}{.namespace}/{.pod}{"\n"}{end}', DOC) == \
        "shop/web-1\nshop/db-0\ndata/etl-9\n"
    assert output.jsonpath("{.candidates[0].labels}", DOC) == '{"app":"web"}'
    assert output.jsonpath("{.kind}: {.candidates[1].node}", DOC) == "Plan: n2"
    assert output.jsonpath("{.candidates[0].pod}", DOC, as_json=True).split() == ["[", '"web-1"', "]"]


def test_custom_columns_with_missing_values() -> None:
    text = output.custom_columns("POD:.pod,PRIO:.priority,APP:.labels.app", DOC["candidates"])
    assert text.splitlines() == ["POD    PRIO    APP", "web-1  5       web", "db-0   1       db",
                                 "etl-9  <none>  <none>"]
    assert output.custom_columns("POD:.pod", DOC["candidates"], headers=False).splitlines()[0] == "web-1"


def test_custom_columns_print_lists_and_maps_as_kubectl_does() -> None:
    """kubectl's fmt.Sprint, not JSON: it printed `["worker-2"]`. A `[*]` path gives one match per item, which
    kubectl joins with commas."""
    items = [{"pod": "web-1", "tiedWith": ["worker-2", "worker-3"], "labels": {"tier": "web", "app": "shop"},
              "nested": {"ports": [80, 443], "gone": None, "ok": True}, "empty": []}]
    text = output.custom_columns("TIED:.tiedWith,EACH:.tiedWith[*],LABELS:.labels,NESTED:.nested,EMPTY:.empty",
                                 items, headers=False)
    assert text.split() == ["[worker-2", "worker-3]", "worker-2,worker-3", "map[app:shop", "tier:web]",
                            "map[gone:<nil>", "ok:true", "ports:[80", "443]]", "[]"]
    assert output.jsonpath("{.tiedWith}", items[0]) == '["worker-2","worker-3"]'  # -o jsonpath keeps JSON


def test_sort_by_numbers_text_and_missing() -> None:
    assert [c["pod"] for c in output.sort_by(DOC["candidates"], ".priority")] == ["db-0", "web-1", "etl-9"]
    assert [c["pod"] for c in output.sort_by(DOC["candidates"], "{.pod}".strip("{}"))] == ["db-0", "etl-9", "web-1"]


@pytest.mark.parametrize(("given", "message"), [
    ("jsonpath=", "-o jsonpath=: the template is missing"),
    ("jsonpath={.a", "unclosed {"),
    ("jsonpath={range .a[*]}{.b}", "{range} without {end}"),
    ("jsonpath={end}", "{end} without {range}"),
    ("custom-columns=POD", "'POD' is not HEADER:JSONPATH"),
    ("jsonpath={.a[}", "JSONPath '.a['"),
    ("xml", "-o xml: unknown output format"),
])
def test_bad_formats_are_one_usage_error(given: str, message: str) -> None:
    with pytest.raises(UsageError) as e:
        output.check_format(given)
    assert message in str(e.value)


def test_good_formats_pass() -> None:
    for given in ("table", "name", "jsonpath={.candidates[*].pod}", "custom-columns=POD:.pod,NODE:.node"):
        assert output.check_format(given) == given


# --- through the command line, on the demo snapshot ----------------------------------------------------------------

def run(*args: str) -> tuple[int, str, str]:
    """The command in-process; an error main() would print is returned as its line and exit code."""
    from pathlib import Path

    from click.testing import CliRunner

    from kubectl_desched.cli.main import cli

    demo = str(Path(__file__).resolve().parents[3] / "examples" / "demo-cluster.yaml")
    result = CliRunner().invoke(cli, ["balance", "--from-file", demo, "-A", "--no-pager", *args])
    if isinstance(result.exception, UsageError):
        return 2, result.stdout, f"error: {result.exception}\n"
    return result.exit_code, result.stdout, result.stderr


def test_cli_name_jsonpath_and_custom_columns() -> None:
    code, out, _ = run("-o", "name")
    assert code == 0 and out.splitlines()[0].startswith("pod/") and len(out.splitlines()) == 5
    code, out, _ = run("-o", r'jsonpath={range .candidates[*]}{.namespace}/{.pod} {.destination.node}{"\n"}{end}')
    lines = out.splitlines()
    assert code == 0 and len(lines) == 5 and all(len(line.split()) == 2 for line in lines)
    code, out, _ = run("-o", "custom-columns=POD:.pod,NODE:.node,PRIO:.priority", "--sort-by", "{.priority}")
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["POD", "NODE", "PRIO"]
    prios = [int(r[2]) for r in rows[1:]]
    assert prios == sorted(prios)
    code, out, _ = run("-o", "custom-columns=POD:.pod", "--no-headers")
    assert "POD" not in out and len(out.splitlines()) == 5


def test_cli_table_flags() -> None:
    code, out, _ = run("--show-labels", "--sort-by", ".pod")
    assert code == 0 and "LABELS" in out
    table = out[out.index("candidate pod(s):"):out.index("Warnings:")].splitlines()[2:]
    pods = [line.split()[1] for line in table if line.strip()]
    assert pods == sorted(pods)
    code, out, _ = run("--no-headers")
    assert "NAMESPACE    POD" not in out and "NODE       CLASS" not in out


def test_cli_bad_sort_by_is_one_usage_error() -> None:
    code, _out, err = run("--sort-by", "{.a[}")
    assert code == 2 and err.startswith("error: JSONPath '.a['") and err.count("\n") == 1


def test_json_is_json_dumps_indented_byte_for_byte_as_bytes() -> None:
    """-o json comes as bytes in pieces (no text copy of a 40 MB plan, no whole copy of it), together exactly what
    json.dumps(indent=2) writes."""
    import json

    doc = {"candidates": [{"pod": "shop/wéb-0", "reason": "cpu 93.5% > 80% ≥ target\nsecond line", "n": 1e16,
                           "x": [], "m": {}, "f": 0.1 + 0.2, "none": None, "t": True, "deep": {"a": [1, {"b": 2}]}},
                          {}, [], "text", 3],
           "nodes": [{"e": [[]], "s": "\u2028"}], "empty": [], "none": {}, "n": 1, "s": "x",
           "numbered": {1: "a key json.dumps writes as a string"}}
    pieces = list(output.emit(doc, "json"))
    assert all(isinstance(p, bytes) for p in pieces) and len(pieces) > 10  # written in pieces, not whole
    assert b"".join(pieces) == json.dumps(doc, indent=2).encode()
    assert output.indented_json(doc, 4) == json.dumps(doc, indent=4)
    for value in ({}, [], 1, "x", None, [{}], {"a": []}):
        assert b"".join(output.indented_json_pieces(value, 2)) == json.dumps(value, indent=2).encode()


YAML_DOC = {"kind": "Plan", "candidates": [
    {"pod": "shop/wéb-0", "reason": "cpu 93.5% > 80% ≥ target\nsecond line", "n": 1e16, "f": 0.1 + 0.2,
     "names": ["1e3", "007", "0x1f", "yes", "No", "on", "~", "null", "", " lead", "trail ", "a: b", "- x", "#c",
               "x #y", "{a}", "[b]", "'q'", '"d"', "*star", "&amp", "!tag", "%p", "@at", "`bt", "|", ">", "?",
               "2026-11-27", "12:30:00", "1_000", ".inf", ".NaN", "=", "<<", "\t", "\x85", "\u2028", "\x1b[2J",
               "\ufeff", "λ", "日本語"],
     "warning": "StatefulSet shipping-svc/nats-admin would lose 1 of its 1 ready pods and no PodDisruptionBudget "
                "guards it: consider --wait-ready or --max-per-workload " * 2,
     "x": [], "m": {}, "none": None, "t": True, "deep": {"a": [1, {"b": [[]]}]}}, {}, [], "text", 3],
    "yes": "key", "007": 1}


def test_yaml_is_what_pyyaml_safe_dump_writes_with_or_without_libyaml(monkeypatch: pytest.MonkeyPatch) -> None:
    """-o yaml goes through libyaml's emitter where PyYAML's wheel has it (45 s -> 15 s for a plan of 31,000
    candidates), and writes exactly what yaml.safe_dump writes: quoting, escapes and folded long lines alike."""
    import yaml

    expected = yaml.safe_dump(YAML_DOC, sort_keys=False, default_flow_style=False).rstrip("\n")
    assert yaml.safe_load(expected) == YAML_DOC
    if getattr(yaml, "CSafeDumper", None) is not None:
        used: list[type] = []

        class Spy(yaml.CSafeDumper):  # type: ignore[name-defined, misc]
            def __init__(self, *a: object, **k: object) -> None:
                used.append(type(self))
                super().__init__(*a, **k)

        monkeypatch.setattr(yaml, "CSafeDumper", Spy)
        assert output.emit(YAML_DOC, "yaml") == expected
        assert used == [Spy]
    monkeypatch.delattr(yaml, "CSafeDumper", raising=False)  # a PyYAML built without libyaml
    assert output.emit(YAML_DOC, "yaml") == expected


def test_yaml_the_one_difference_of_libyaml_an_empty_key_still_reads_back() -> None:
    """PyYAML's own emitter writes an empty key as `? ''`, libyaml's as `'':`. No document has one (label,
    annotation and resource names are never empty), and either reads back the same."""
    import yaml

    doc = {"": "empty key", "a": {"": 1}}
    assert yaml.safe_load(output.emit(doc, "yaml")) == doc


def test_lazy_candidates_are_made_as_they_are_written_and_write_what_a_list_writes() -> None:
    """-o json writes a plan's candidates one at a time (output.LazyItems): the same bytes as the list, with no
    candidate made before its turn; every other format, and --sort-by, sees the whole list."""
    import json

    source = [{"pod": f"p{i}", "n": i, "labels": {"app": "web"}} for i in range(5)]
    made: list[int] = []

    def make(c: dict) -> dict:
        made.append(c["n"])
        return dict(c)

    def doc(lazy: bool) -> dict:
        items = output.LazyItems(source, make) if lazy else [dict(c) for c in source]
        return {"kind": "Plan", "candidates": items, "nodes": [{"name": "n1"}]}

    pieces = output.emit(doc(True), "json")
    assert not isinstance(pieces, str)
    written: list[bytes] = []
    for piece in pieces:
        written.append(piece)
        done = b"".join(written).count(b'"pod": ')
        assert len(made) <= done + 1  # at most the one being written is made ahead of the text
    assert made == [0, 1, 2, 3, 4]
    assert b"".join(written) == json.dumps(doc(False), indent=2).encode()
    for fmt in ("yaml", "name", "custom-columns=POD:.pod", "jsonpath={.candidates[*].pod}"):
        assert output.emit(doc(True), fmt) == output.emit(doc(False), fmt), fmt
    got = output.emit(doc(True), "json", sort_key=output.check_sort_by("{.n}"))
    assert not isinstance(got, str)
    assert b"".join(got) == b"".join(output.emit(doc(False), "json", sort_key=output.check_sort_by("{.n}")))
    empty = {"candidates": output.LazyItems([], make)}
    assert b"".join(output.emit(empty, "json")) == json.dumps({"candidates": []}, indent=2).encode()
