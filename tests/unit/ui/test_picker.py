"""The selector: choices on the Selection model, then the real prompt_toolkit application driven by key presses
through the library's own pipe input (no terminal needed), then the line prompts' final question."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kubectl_desched.framework.plan import Candidate
from kubectl_desched.interrupts import Interrupted
from kubectl_desched.model.objects import pod_from_json
from kubectl_desched.ui import confirm
from kubectl_desched.ui import picker as selector
from kubectl_desched.ui.picker_state import Selection, details
from tests.builders import pod


def cand(name: str, node: str, ns: str = "shop", owner: str = "web", plugin: str = "LowNodeUtilization",
         warnings: list[str] | None = None) -> Candidate:
    p = pod_from_json(pod(name, node, namespace=ns, owner_name=owner))
    return Candidate(p, plugin, f"node {node} over target", "default", warnings=list(warnings or []))


def plan() -> list[Candidate]:
    return [cand("web-1", "n2"), cand("web-2", "n1"), cand("db-1", "n1", ns="data", owner="db"),
            cand("job-1", "n3", owner="batch", plugin="RemovePodsHavingTooManyRestarts")]


def names(cs: list[Candidate]) -> list[str]:
    return [c.pod.name for c in cs]


def test_everything_starts_chosen_and_comes_back_in_plan_order() -> None:
    s = Selection(plan())
    assert names(s.chosen()) == ["web-1", "web-2", "db-1", "job-1"]
    assert s.summary() == "evict 4 pods from 3 nodes?"


def test_lines_group_by_the_sort_key_with_counts() -> None:
    s = Selection(plan())
    headers = [ln.text for ln in s.lines() if ln.row is None]
    assert headers == ["node n1  (2/2 chosen)", "node n2  (1/1 chosen)", "node n3  (1/1 chosen)"]
    s.cycle_sort()
    assert s.sort == "namespace"
    assert [ln.group for ln in s.lines() if ln.row is None] == ["data", "shop"]
    for _ in range(3):
        s.cycle_sort()
    assert s.sort == "node"


def test_toggles_for_a_pod_its_node_its_owner_and_all() -> None:
    s = Selection(plan())
    web2 = next(r for r in s.rows if r.candidate.pod.name == "web-2")
    s.toggle_same(web2, "node")  # n1: web-2 and db-1
    assert names(s.chosen()) == ["web-1", "job-1"]
    s.toggle(web2)
    s.toggle_same(web2, "node")  # mixed: the whole node becomes chosen
    assert names(s.chosen()) == ["web-1", "web-2", "db-1", "job-1"]
    s.toggle_same(web2, "owner")  # shop/ReplicaSet/web: web-1 and web-2
    assert names(s.chosen()) == ["db-1", "job-1"]
    s.toggle_all()
    assert names(s.chosen()) == ["web-1", "web-2", "db-1", "job-1"]
    s.toggle_all()
    assert s.chosen() == [] and s.summary() == "evict 0 pods from 0 nodes?"


def test_filter_by_field_and_by_any_word() -> None:
    s = Selection(plan())
    s.filter = "ns:data"
    assert [r.candidate.pod.name for r in s.visible()] == ["db-1"]
    s.filter = "plugin:restarts"
    assert [r.candidate.pod.name for r in s.visible()] == ["job-1"]
    s.filter = "n1 web"  # every word must match
    assert [r.candidate.pod.name for r in s.visible()] == ["web-2"]
    s.filter = "owner:batch"
    s.toggle_all()  # only what is shown
    assert names(s.chosen()) == ["web-1", "web-2", "db-1"]
    s.filter = "nomatch:x"  # an unknown field is plain text, not an error
    assert s.visible() == []


def test_details_name_reason_warnings_and_destination() -> None:
    c = cand("web-1", "n2", warnings=["PodDisruptionBudget shop/web allows no disruption"])
    text = "\n".join(details(c, "n5"))
    assert "shop/web-1" in text and "ReplicaSet/web" in text and "over target" in text
    assert "lands on   n5 (estimate)" in text and "warning    PodDisruptionBudget shop/web" in text


def drive(keys: str, candidates: list[Candidate]) -> tuple[Any, Selection]:
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    s = Selection(candidates)
    with create_pipe_input() as inp:
        inp.send_text(keys)
        app = selector.build(selector.Screen(s), input=inp, output=DummyOutput())
        result = app.run()
    return result, s


def test_screen_space_toggles_the_pod_under_the_cursor_and_enter_finishes() -> None:
    # Sorted by node: n1 web-2, n1 db-1, n2 web-1, n3 job-1; down once then space drops db-1.
    result, s = drive("j \r", plan())
    assert result == "done" and names(s.chosen()) == ["web-1", "web-2", "job-1"]


def test_screen_node_owner_all_and_sort_keys() -> None:
    _, s = drive("n\r", plan())  # the cursor starts on n1
    assert names(s.chosen()) == ["web-1", "job-1"]
    _, s = drive("o\r", plan())  # web-2's owner: web-1 too
    assert names(s.chosen()) == ["db-1", "job-1"]
    _, s = drive("a\r", plan())
    assert s.chosen() == []
    _, s = drive("s \r", plan())  # sorted by namespace: the cursor stays on web-2, now after data/db-1
    assert names(s.chosen()) == ["web-1", "db-1", "job-1"]


def test_screen_filter_then_toggle_what_is_shown() -> None:
    result, s = drive("/ns:shop\ra\r", plan())
    assert result == "done" and names(s.chosen()) == ["db-1"] and s.filter == "ns:shop"
    result, s = drive("/ns:shop\x1ba\r", plan())  # Esc clears the filter: `a` then toggles every pod
    assert s.filter == "" and s.chosen() == []


def test_with_a_filter_on_node_and_owner_keys_leave_hidden_pods_alone() -> None:
    result, s = drive("/web\rn\r", plan())  # n1 holds web-2 (shown) and db-1 (hidden)
    assert result == "done" and names(s.chosen()) == ["web-1", "db-1", "job-1"]
    _, s = drive("/n1\ro\r", plan())  # web-2's owner also has web-1, on n2: hidden
    assert names(s.chosen()) == ["web-1", "db-1", "job-1"]
    screen = selector.Screen(Selection(plan()))
    screen.sel.filter = "web"
    screen.refresh()
    screen.sel.toggle_same(screen.current().row, "node")  # type: ignore[union-attr]
    screen.refresh()
    assert screen.status() == " chosen: 3 pods on 3 nodes   (2 of 4 shown; sort: node)   filter: web"


def test_the_cursor_stays_on_its_pod_when_the_list_is_sorted_or_filtered() -> None:
    screen = selector.Screen(Selection(plan()))
    screen.move(2)  # by node: web-2, db-1, web-1
    assert screen.current().row.candidate.pod.name == "web-1"  # type: ignore[union-attr]
    for sort in ("namespace", "owner", "plugin", "node"):
        screen.sel.cycle_sort()
        screen.refresh()
        assert screen.sel.sort == sort and screen.current().row.candidate.pod.name == "web-1"  # type: ignore[union-attr]
    screen.sel.filter = "shop"
    screen.refresh()
    assert screen.current().row.candidate.pod.name == "web-1"  # type: ignore[union-attr]
    screen.sel.filter = "db"  # web-1 hidden: the one row left
    screen.refresh()
    assert screen.current().row.candidate.pod.name == "db-1"  # type: ignore[union-attr]


def test_screen_q_cancels_and_ctrl_c_interrupts() -> None:
    result, _s = drive("q", plan())
    assert result == "cancel"
    with pytest.raises(Interrupted) as e:
        drive("\x03", plan())
    assert e.value.exit_code == 130


def ask_lines(monkeypatch: pytest.MonkeyPatch, typed: str, candidates: list[Candidate]) -> tuple[Any, str]:
    monkeypatch.setattr(confirm, "stdin_is_tty", lambda: True)
    monkeypatch.setattr(selector, "can_open", lambda *a: False)
    with CliRunner().isolation(input=typed) as (_out, err, *_rest):
        try:
            got: Any = confirm.ask(candidates)
        except confirm.NotConfirmed as e:
            got = e
        return got, err.getvalue().decode()


def test_quit_in_line_mode_asks_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    got, err = ask_lines(monkeypatch, "s\ny\nq\nn\n", plan())
    assert isinstance(got, confirm.NotConfirmed) and "nothing was evicted" in str(got)
    assert "Evict 1 pod from 1 node?" in err
    got, err = ask_lines(monkeypatch, "s\ny\nq\ny\n", plan())
    assert names(got[0]) == ["web-1"] and got[1] == "select"


def test_line_prompt_shows_each_pods_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    cs = [cand("web-1", "n2", warnings=["would leave ReplicaSet shop/web with 0 of 3 ready replicas"])]
    got, err = ask_lines(monkeypatch, "s\ny\n", cs)
    assert names(got[0]) == ["web-1"]
    assert "warning: would leave ReplicaSet shop/web with 0 of 3 ready replicas" in err


def test_screen_is_only_for_real_terminals(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    tty, pipe = Stream(True), Stream(False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("KUBECTL_DESCHED_PROMPT", raising=False)
    assert selector.can_open(tty, tty)
    assert not selector.can_open(tty, pipe)  # stderr redirected: nowhere to draw
    assert not selector.can_open(pipe, tty)
    monkeypatch.setenv("TERM", "dumb")
    assert not selector.can_open(tty, tty)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("KUBECTL_DESCHED_PROMPT", "lines")
    assert not selector.can_open(tty, tty)


def test_a_long_list_draws_only_the_lines_around_the_cursor() -> None:
    """The screen is handed one screenful, scrolled just enough to hold the cursor, and the group's header comes
    back into view with its first pod."""
    many = [cand(f"web-{i:02}", f"n{i // 10}") for i in range(30)]  # 3 nodes, 10 pods each: 33 lines
    screen = selector.Screen(Selection(many))
    shown, at = screen.window(5)
    assert [ln.text for ln in shown][:2] == ["node n0  (10/10 chosen)", "  [x] shop/web-00  LowNodeUtilization"]
    assert at == 1
    screen.move(12)  # web-12: line 14 (two headers above it)
    shown, at = screen.window(5)
    assert len(shown) == 5 and shown[at] is screen.current() and at == 4  # scrolled down by as little as needed
    assert screen.current().row.candidate.pod.name == "web-12"  # type: ignore[union-attr]
    screen.move(-2)  # web-10, still in view: nothing scrolls
    shown, at = screen.window(5)
    assert at == 2 and shown[1].text == "node n1  (10/10 chosen)" and shown[at] is screen.current()
    screen.move(-1)  # web-09, the top line
    assert screen.window(5)[1] == 0
    screen.move(-9)  # web-00, above the window and first of its group: the window starts at its header
    shown, at = screen.window(5)
    assert at == 1 and shown[0].text == "node n0  (10/10 chosen)" and shown[at] is screen.current()
    screen.move(100)  # the last pod: the window ends with the list
    shown, at = screen.window(5)
    assert shown[-1] is screen.lines[-1] and shown[at] is screen.current()
    shown, at = screen.window(50)  # taller than the list: all of it
    assert shown == screen.lines and shown[at] is screen.current()


def test_a_header_counts_its_whole_group_while_a_filter_hides_some() -> None:
    s = Selection(plan())
    s.filter = "web"
    assert "node n1  (2/2 chosen)" in [ln.text for ln in s.lines() if ln.row is None]  # db-1 hidden, counted


# ---------------------------------------------------------------- the real CLI on a pseudo-terminal

SELECTOR_SCRIPT = """
import os, sys
from kubectl_desched.cli import main as cli
from kubectl_desched.app import loading
from kubectl_desched.kube import live
from tests.unit.kube.test_hostile_server import DESCHEDULE, FakeAPI, _conn

api = FakeAPI()

def logged(conn, method, path, **kw):
    with open(os.environ["CALLS"], "a") as f:
        f.write(f"{method} {path}\\n")
    return api(conn, method, path, **kw)

live.request_raw = logged
loading.connect = lambda _opts: _conn()
sys.argv = ["kubectl-desched", *DESCHEDULE, "--no-pager"]
cli.main()
"""


def test_sigint_from_outside_ends_the_open_selector_with_130(tmp_path: Path) -> None:
    """`kill -INT` is not a key press: prompt_toolkit turns it into a <sigint> key, which must interrupt as
    Ctrl-C does (SIGTERM and SIGHUP reach the tool's own handlers)."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    import pyte

    root = Path(__file__).resolve().parents[3]
    calls = tmp_path / "calls"
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 140, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(root), "TERM": "xterm", "NO_COLOR": "1", "CALLS": str(calls)}
    env.pop("KUBECTL_DESCHED_PROMPT", None)
    proc = subprocess.Popen([sys.executable, "-c", SELECTOR_SCRIPT], stdin=slave, stderr=slave,
                            stdout=subprocess.PIPE, cwd=tmp_path, env=env, start_new_session=True)
    os.close(slave)
    screen = pyte.Screen(140, 30)
    stream = pyte.ByteStream(screen)

    def shown() -> str:
        return "\n".join(screen.display)

    def read_until(done: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                with contextlib.suppress(OSError):  # the child closed the terminal
                    stream.feed(os.read(master, 65536))
    try:
        read_until(lambda: "Choose the pods to evict" in shown(), 30)
        assert "Choose the pods to evict" in shown(), shown()
        proc.send_signal(signal.SIGINT)
        read_until(lambda: proc.poll() is not None, 15)
        code = proc.poll()
    finally:
        proc.kill()
        proc.wait(5)
        os.close(master)
    assert code == 130, shown()
    assert "interrupted: nothing further was evicted" in shown()
    sent = calls.read_text().splitlines()
    assert "GET /api/v1/pods" in sent and not [c for c in sent if "/eviction" in c or c.startswith("DELETE")]
