"""Live names for shell completion: every name of the cluster, from the server's Table of the objects (not the
objects, and not only a first page). The transport is replaced here; tests/integration/test_completion_live.py
asks a real kube-apiserver through the real kubectl."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from kubectl_desched.cli import completers, completion
from kubectl_desched.cli.main import cli
from kubectl_desched.kube import live

NAMES = [f"node-{i:04d}" for i in range(1200)]  # well past a first page of 500


def table(names: list[str]) -> bytes:
    """What a kube-apiserver answers to `Accept: ...;as=Table` with includeObject=None (its shape, abridged)."""
    return json.dumps({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "7"},
        "columnDefinitions": [{"name": "Age", "type": "string", "format": ""},  # the name column need not be first
                              {"name": "Name", "type": "string", "format": "name"}],
        "rows": [{"cells": ["12d", n], "object": None} for n in names]}).encode()


def object_list(names: list[str]) -> bytes:
    return json.dumps({"kind": "NodeList", "items": [{"metadata": {"name": n}} for n in names]}).encode()


def complete(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], answer: Any,
             *words: str) -> tuple[list[str], list[tuple[str, Any, str]]]:
    asked: list[tuple[str, Any, str]] = []

    def server(_conn: Any, method: str, path: str, *, query: Any = None, accept: str = "", **_kw: Any) -> bytes:
        asked.append((path, query, accept))
        return answer(path, accept)

    monkeypatch.setattr(live, "request_raw", server)
    monkeypatch.setattr(completers, "_access", lambda _ctx: object())
    monkeypatch.setattr(sys, "argv", ["kubectl_complete-desched", *words])
    completion.kubectl_main(cli)
    return capsys.readouterr().out.splitlines(), asked


def test_a_node_past_the_first_500_is_completed_from_the_table(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out, asked = complete(monkeypatch, capsys, lambda _p, _a: table(NAMES), "explain", "node", "node-11")
    assert out == [f"node-{i}" for i in range(1100, 1200)] + [":4"]
    [(path, query, accept)] = asked
    assert path == "/api/v1/nodes" and query == [("includeObject", "None")]  # one request, no limit
    assert accept.startswith("application/json;as=Table;v=v1;g=meta.k8s.io")
    out, _ = complete(monkeypatch, capsys, lambda _p, _a: table(NAMES), "balance", "--nodes", "node-0001,node-119")
    assert out == [f"node-0001,node-{i}" for i in range(1190, 1200)] + [":4"]


def test_a_server_without_tables_answers_the_list_and_its_names_are_completed(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = complete(monkeypatch, capsys, lambda _p, _a: object_list(NAMES), "explain", "node", "node-1199")
    assert out == ["node-1199", ":4"]


def test_pods_of_the_namespace_given_and_nothing_on_a_broken_answer(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out, asked = complete(monkeypatch, capsys, lambda _p, _a: table(["web-1", "web-2", "db-0"]),
                          "explain", "pod", "-n", "shop", "web")
    assert out == ["web-1", "web-2", ":4"] and asked[0][0] == "/api/v1/namespaces/shop/pods"
    for broken in (b"<html>", b"[]", b'{"kind": "Table", "rows": [{"cells": [7]}, {}]}', b""):
        out, _ = complete(monkeypatch, capsys, lambda _p, _a, body=broken: body, "explain", "node", "")
        assert out == [":4"], broken


def test_listed_names_reads_the_name_column_or_the_items() -> None:
    assert completers.listed_names(json.loads(table(["a", "b"]))) == ["a", "b"]
    assert completers.listed_names(json.loads(object_list(["a"]))) == ["a"]
    no_format = {"kind": "Table", "columnDefinitions": [{"name": "Name"}], "rows": [{"cells": ["x", "1"]}]}
    assert completers.listed_names(no_format) == ["x"]  # the first column, as kubectl prints it
    assert completers.listed_names({"kind": "Table"}) == completers.listed_names({}) == []


def test_plugin_names_are_those_the_commands_plugin_runs(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    def offered(*words: str) -> list[str]:
        return [w.split("\t")[0] for w in complete(monkeypatch, capsys, lambda *_: b"", *words)[0]]

    balance, explain = offered("balance", "--plugin", ""), offered("explain", "pod", "--plugin", "")
    assert "LowNodeUtilization" in balance and "PodLifeTime" not in balance
    assert {"LowNodeUtilization", "PodLifeTime"} <= set(explain)
    assert not {"DefaultEvictor", "MigrationController"} & {*balance, *explain}  # --plugin refuses them
