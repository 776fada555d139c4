"""No credential the tool holds or was given is shown: a password or token in the server's URL is masked wherever
the URL is shown (errors, the Source line, the report, the -v log), as kubectl's client masks it. Over a real
socket (the fake API of test_hostile_server.py) and the real kubeconfig loader."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kubectl_desched.kube import httplog
from kubectl_desched.sanitize import mask_url, one_line
from tests.unit.test_hostile_server import DESCHEDULE, _Served, assert_one_error_line, run_main
from tests.unit.test_hostile_server import http_fake as http_fake  # a fixture

PASSWORD = "pa55-W0RD-in-url"
QUERY_TOKEN = "q-T0KEN-in-url"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(tmp_path)
    yield
    httplog.set_verbosity(0)  # -v is process-wide


def kubeconfig(path: Path, server: str, user: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "shop"}}],
        "users": [{"name": "u", "user": user}],
    }))
    return path


@pytest.mark.parametrize(("url", "shown"), [
    ("https://admin:PW@127.0.0.1:1", "https://admin:***@127.0.0.1:1"),
    ("https://admin:p@ss@host/api?limit=5", "https://admin:***@host/api?limit=5"),  # to the last @, as Go parses
    ("https://host/?access_token=abc&limit=5", "https://host/?access_token=***&limit=5"),
    ('url="https://h/x?X-Amz-Signature=abc&X-Amz-Credential=k" took 3ms',
     'url="https://h/x?X-Amz-Signature=***&X-Amz-Credential=***" took 3ms'),
    ("https://h/?token=a;password=b#sig=c", "https://h/?token=***;password=***#sig=c"),
    ("at https://h/?access_token=abc: connection refused", "at https://h/?access_token=***: connection refused"),
    ("https://h/?token=a:b", "https://h/?token=***"),
    ("https://admin@host:6443", "https://admin@host:6443"),  # a user name alone is no secret, as in kubectl
    ("https://host:6443/api/v1/pods?limit=500&continue=eyJ2", "https://host:6443/api/v1/pods?limit=500&continue=eyJ2"),
    ("-l app=web,token=x", "-l app=web,token=x"),  # not a URL's query
])
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    assert mask_url(shown) == shown  # masking what is masked changes nothing
    assert one_line(url) == shown  # every line made of server or error text


@pytest.mark.parametrize(("server", "shown"), [
    (f"https://admin:{PASSWORD}@127.0.0.1:1", "https://admin:***@127.0.0.1:1"),
    (f"https://127.0.0.1:1/?access_token={QUERY_TOKEN}", "https://127.0.0.1:1/?access_token=***"),
])
def test_an_unreachable_server_is_named_without_its_credentials(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                                server: str, shown: str) -> None:
    config = kubeconfig(tmp_path / "config", server, {"token": "t0ken-abcdef"})
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "--kubeconfig", str(config), "-v", "9",
                         "--report", "r.json")
    assert code == 1
    line = assert_one_error_line(err, f"cannot reach the API server at {shown}: connection refused")
    everything = out + err + Path("r.json").read_text()
    assert PASSWORD not in everything and QUERY_TOKEN not in everything, everything
    assert line.startswith("error: reading the cluster: ")


@pytest.mark.parametrize("output", [[], ["-o", "json"]])
def test_the_source_line_the_report_and_the_log_mask_the_url(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str],
                                                             http_fake: _Served, output: list[str]) -> None:
    server = f"http://admin:{PASSWORD}@127.0.0.1:{http_fake.server_address[1]}"
    code, out, err = run_main(monkeypatch, capsys, *DESCHEDULE, "-s", server, "--token", "t0ken-abcdef", "-v", "9",
                         "--report", "r.json", "--dry-run=client", *output)
    assert code == 0, err
    report = Path("r.json").read_text()
    assert PASSWORD not in out + err + report
    shown = f"http://admin:***@127.0.0.1:{http_fake.server_address[1]}"
    assert json.loads(report)["cluster"]["server"] == shown
    assert f'url="{shown}/api/v1/nodes?limit=500"' in err  # the -v log names it too, masked
    if not output:
        assert f"Source:  cluster {shown} (context {shown})" in out
