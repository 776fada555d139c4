"""Run the real CLI against the test apiserver, as a user would: a subprocess with KUBECONFIG set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BALANCE = ["--thresholds", "cpu=20,memory=20,pods=20", "--target-thresholds", "cpu=50,memory=50,pods=50"]


def desched_env(kubeconfig: Path | str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "NO_COLOR")}
    env["KUBECONFIG"] = str(kubeconfig)
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def desched(kubeconfig: Path | str, *args: str, stdin: Any = subprocess.DEVNULL, timeout: float = 120,
            **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubectl_desched", *args], stdin=stdin, capture_output=True,
                          text=True, timeout=timeout, env=desched_env(kubeconfig, **env), check=False)


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout, f"no output; exit {proc.returncode}; stderr: {proc.stderr}"
    return json.loads(proc.stdout)


class Interactive:
    """The CLI with a terminal on stdin (so it may ask), stderr read line by line for the prompts."""

    def __init__(self, kubeconfig: Path | str, *args: str) -> None:
        import pty

        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-m", "kubectl_desched", *args], stdin=slave,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=desched_env(kubeconfig))
        os.close(slave)
        self.err = b""

    def wait_for(self, text: str, timeout: float = 60) -> None:
        os.set_blocking(self.proc.stderr.fileno(), False)  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        while text.encode() not in self.err:
            chunk = self.proc.stderr.read()  # type: ignore[union-attr]
            if chunk:
                self.err += chunk
            elif self.proc.poll() is not None:
                raise AssertionError(f"exited {self.proc.returncode} before {text!r}; stderr: {self.err.decode()}")
            elif time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} within {timeout}s; stderr so far: {self.err.decode()}")
            else:
                time.sleep(0.05)

    def answer(self, text: str) -> None:
        os.write(self.master, (text + "\n").encode())

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        os.close(self.master)
        return self.proc.returncode, out.decode(), (self.err + err).decode()


class FullScreen:
    """The CLI on a real pseudo-terminal for stdin and stderr (where the selector draws), stdout piped: what an
    operator's terminal looks like to the tool. A terminal emulator (pyte) keeps the screen as a user sees it."""

    def __init__(self, kubeconfig: Path | str, *args: str, rows: int = 40, cols: int = 160,
                 stdout_on_terminal: bool = False) -> None:
        import fcntl
        import pty
        import struct
        import termios

        import pyte

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = desched_env(kubeconfig, TERM="xterm-256color")
        env.pop("KUBECTL_DESCHED_PROMPT", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "kubectl_desched", *args], stdin=slave, stderr=slave,
                                     stdout=slave if stdout_on_terminal else subprocess.PIPE, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.raw = b""  # every byte written to the terminal, for what was drawn and then cleared
        self.term = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.term)

    @property
    def screen(self) -> str:
        return "\n".join(line.rstrip() for line in self.term.display)

    def _read(self) -> bool:
        import select

        ready, _, _ = select.select([self.master], [], [], 0.1)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # the child closed the terminal
            return False
        self.raw += chunk
        self.stream.feed(chunk)
        return True

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.screen:
            if not self._read():
                if self.proc.poll() is not None:
                    raise AssertionError(f"exited {self.proc.returncode} before {text!r}; screen:\n{self.screen}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"no {text!r} within {timeout}s; screen:\n{self.screen}")

    def keys(self, text: str, pause: float = 0.3) -> None:
        for ch in text:  # one key at a time, as typed: Esc must not run into the next key as an escape sequence
            os.write(self.master, ch.encode())
            time.sleep(pause)
            while self._read():
                pass

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read()
        out = self.proc.stdout.read().decode() if self.proc.stdout else ""  # type: ignore[union-attr]
        while self._read():
            pass
        code = self.proc.wait(timeout=5)
        os.close(self.master)
        return code, out, self.screen
