"""Running the example peers (examples/c/peer.c, examples/python/peer.py, examples/swift)
and a local yaok-relay as child processes: shared by scripts/test-peers (the interop test)
and scripts/demo-peers (the README's demo). Standard library only.

A Peer is driven through its stdin, one line at a time, exactly as a person types, and
its stdout is read line by line on a thread; `expect` waits for a line matching a pattern.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from typing import Callable, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def swift_bin() -> str:
    return subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def python_for_binding() -> str:
    venv = os.environ.get("YAOK_PYTHON_VENV", os.path.join(ROOT, "build", "python-venv"))
    py = os.path.join(venv, "bin", "python")
    return py if os.access(py, os.X_OK) else "python3"


def peer_command(kind: str) -> List[str]:
    """The command line of the example peer in `kind`: "c", "python" or "swift"."""
    if kind == "c":
        return [os.path.join(ROOT, "build", "examples", "peer")]
    if kind == "python":
        return [python_for_binding(), os.path.join(ROOT, "examples", "python", "peer.py")]
    if kind == "swift":
        return [os.path.join(swift_bin(), "yaok-peer-swift")]
    raise ValueError(kind)


def peer_env() -> dict:
    env = dict(os.environ)
    env["YAOK_LIBRARY"] = os.path.join(ROOT, "build", "lib", "libyaok.so.1")
    env["PYTHONPATH"] = os.path.join(ROOT, "bindings", "python")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Failure(Exception):
    pass


class Relay:
    """yaok-relay --self-signed on 127.0.0.1, any free port; `pin` and `address` once up."""

    def __init__(self, data: str, log: Optional[Callable[[str], None]] = None) -> None:
        self.data, self.log = data, log
        self.proc: Optional[subprocess.Popen] = None
        self.pin = ""
        self.address = ""

    def start(self, timeout: float = 30) -> None:
        binary = os.path.join(swift_bin(), "yaok-relay")
        self.proc = subprocess.Popen([binary, "--self-signed", "--listen", "127.0.0.1:0", "--data", self.data],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found = {}
        ready = threading.Event()

        def read() -> None:
            assert self.proc and self.proc.stdout
            for line in self.proc.stdout:
                line = line.rstrip()
                if self.log:
                    self.log(line)
                m = re.match(r"pin: ([0-9a-f]{64})$", line)
                if m:
                    found["pin"] = m.group(1)
                m = re.match(r"listening: ([0-9.]+:\d+)$", line)
                if m:
                    found["address"] = m.group(1)
                if "pin" in found and "address" in found:
                    ready.set()
        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(timeout):
            self.stop()
            raise Failure("yaok-relay did not print its pin and address")
        self.pin, self.address = found["pin"], found["address"]

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Peer:
    """One example peer process: `send` types a line, `expect` waits for an output line."""

    def __init__(self, label: str, kind: str, data: str, args: List[str], pin: str,
                 echo: Optional[Callable[[str, str], None]] = None) -> None:
        self.label, self.kind, self.data = label, kind, data
        self.lines: List[str] = []
        self.cond = threading.Condition()
        self.echo = echo
        env = peer_env()
        env["YAOK_PIN"] = pin
        self.proc = subprocess.Popen(peer_command(kind) + ["--data", data] + args, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     bufsize=1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for raw in self.proc.stdout:
            line = raw.rstrip("\n")
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
            if self.echo:
                self.echo(self.label, line)
        with self.cond:
            self.cond.notify_all()

    def send(self, line: str) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def expect(self, pattern: str, timeout: float = 60, start: int = 0) -> re.Match:
        """The first output line from index `start` on that matches `pattern` (re.search)."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        index = start
        with self.cond:
            while True:
                while index < len(self.lines):
                    m = regex.search(self.lines[index])
                    index += 1
                    if m:
                        return m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and index >= len(self.lines)):
                    tail = "\n    ".join(self.lines[-15:])
                    raise Failure(f"{self.label} ({self.kind}): no line matching {pattern!r} "
                                  f"within {timeout:g} s; exit status {self.proc.poll()}; last lines:\n    {tail}")
                self.cond.wait(min(left, 0.5))

    def mark(self) -> int:
        with self.cond:
            return len(self.lines)

    def quit(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            try:
                self.send("/quit")
                if self.proc.stdin:
                    self.proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait()
        return self.proc.returncode


def create(kind: str, data: str, name: str, card_file: str, pin: str) -> str:
    """Creates the identity `name` in `data` with the example peer of `kind`; returns its card."""
    env = peer_env()
    env["YAOK_PIN"] = pin
    out = subprocess.run(peer_command(kind) + ["--data", data, "--name", name, "--card-file", card_file],
                         input="/quit\n", capture_output=True, text=True, env=env, timeout=120)
    if out.returncode != 0:
        raise Failure(f"creating {name} with the {kind} peer failed ({out.returncode}): {out.stdout}{out.stderr}")
    with open(card_file, encoding="utf-8") as f:
        return f.read().strip()
