"""Starting and stopping a `jupyter lab` server in tests: a free loopback port, waiting for it, stopping it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_served(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90, what: str = "jupyter lab") -> None:
    """Poll until the server answers 200, failing early (with its log) when it exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}", pytrace=False)
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    pytest.fail(f"{what} did not serve {url} within {timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}",
                pytrace=False)


def stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM lets the server shut its kernels down; its own process group is killed only if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
