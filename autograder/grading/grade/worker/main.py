"""The request loop: one forked worker runs its notebook's cells in order, reports each cell's outputs, and at a
grade cell answers the grader's requests until it says resume."""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Connection
from types import SimpleNamespace
from typing import Any

from ....settings import AUDIT_REPORTS
from .. import channel
from . import prepared
from .audit import install_audit_hook
from .confine import confine
from .guard import Guard
from .prepared import ProbeKit
from .shell import run_cell


def answer_checks(conn: Connection, writer: channel.Sender, shell: Any, limits: Any, kit: ProbeKit, guard: Guard) -> None:
    """Serve the grader's requests at a grade cell until it says resume; then report any tampering by the probes' calls."""
    missing_targets, observe = kit.missing_targets, kit.observe
    while True:
        request = channel.decode_request(conn.recv_bytes())
        op = request["op"]
        if op == "resume":
            writer.resumed(guard.changes())
            return
        check = request["check"]
        if check not in kit.checks:
            raise KeyError(check)
        if op == "missing":
            writer.missing(missing_targets(check, shell.user_ns))
        else:
            old_limit = sys.getrecursionlimit()
            kit.drain()
            try:
                observation = observe(check, shell.user_ns, request["case"], limits.check_timeout)
            finally:
                sys.setrecursionlimit(old_limit)
            writer.observation(observation, kit.drain())


def child_main(conn: Connection, plan: dict[str, Any], workdir: str) -> None:
    """Run the plan's cells in order; report each cell's outputs; answer the grader at grade cells."""
    ready = prepared.take()
    # From here only this call's frame holds the kit and the guard: learner code would need frames or the
    # collector to reach them (both audited), not a lookup in sys.modules (which raises no event)
    kit, outputs, shell, guard, places = ready.kit, ready.outputs, ready.shell, ready.guard, ready.places
    # The grader's Limits (it made them from the course's settings) read as plain values: a traitlets object built
    # here cost ~1 ms and ~200 copied pages a worker
    limits = SimpleNamespace(**{**ready.limits, **plan["limits"]})
    del ready
    assert guard is not None
    outputs.limit, outputs.notebook_limit = limits.output_bytes, limits.notebook_output_bytes
    confine(limits, workdir)
    writer = channel.Sender(conn)
    guard.watch(writer, kit, conn, guard)
    install_audit_hook(writer.audit, AUDIT_REPORTS, places)  # last: from here on, every audited event of learner code is reported
    for index, cell in enumerate(plan["cells"]):
        outputs.next_cell()
        if cell["kind"] == "checks":
            writer.grade(index)
            answer_checks(conn, writer, shell, limits, kit, guard)
        else:
            run_cell(shell, outputs, cell["source"], limits.cell_timeout)
            writer.cell(index, outputs.export(), guard.changes())
    writer.done()
    conn.close()
    os._exit(0)  # skip atexit handlers that learner code may have registered
