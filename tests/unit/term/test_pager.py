"""Long output on a terminal goes through the pager (a real pseudo-terminal, a real shell command as $PAGER);
piped output and --no-pager never do."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEMO = str(ROOT / "examples" / "demo-cluster.yaml")


def on_terminal(*args: str, rows: int = 10, pager: str = "sed 's/^/PAGED: /'") -> str:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 200, 0, 0))
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "PAGER": pager, "KUBECONFIG": "/nonexistent",
           "TERM": "dumb", "NO_COLOR": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "kubectl_desched", *args], stdin=slave, stdout=slave,
                            stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=30)
    os.close(master)
    return out.decode().replace("\r\n", "\n")


def test_a_plan_taller_than_the_terminal_is_paged() -> None:
    out = on_terminal("balance", "--from-file", DEMO, "-A")
    assert "PAGED: Plan: 5 pods to evict from 2 nodes" in out
    assert "PAGED: worker-a1  over-utilized" in out


def test_no_pager_and_a_plan_that_fits_are_printed_as_is() -> None:
    out = on_terminal("balance", "--from-file", DEMO, "-A", "--no-pager")
    assert "Plan: 5 pods to evict" in out and "PAGED" not in out
    fits = on_terminal("balance", "--from-file", DEMO, "-A", rows=200)
    assert "Plan: 5 pods to evict" in fits and "PAGED" not in fits


def test_a_pager_that_is_not_there_still_shows_the_plan() -> None:
    out = on_terminal("balance", "--from-file", DEMO, "-A", pager="no-such-pager-here")
    assert "Plan: 5 pods to evict" in out and "worker-a1" in out


def test_piped_output_is_never_paged(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(ROOT), "PAGER": "sed 's/^/PAGED: /'",
           "KUBECONFIG": str(tmp_path / "none")}
    proc = subprocess.run([sys.executable, "-m", "kubectl_desched", "balance", "--from-file", DEMO, "-A"],
                          capture_output=True, text=True, env=env, check=False, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("Plan: 5 pods") and "PAGED" not in proc.stdout
