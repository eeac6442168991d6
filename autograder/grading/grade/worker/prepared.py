"""What every worker needs before learner code runs (the probe kit, the IPython shell, the guard's snapshot), made
once in the process that forks the workers, and handed to exactly one frame of each worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .guard import Guard
from .outputs import Outputs
from .shell import make_shell, warm_figures


@dataclass(frozen=True)
class ProbeKit:
    """The grader's probe functions, taken before any learner code runs (so patching the modules later misses them)."""

    checks: frozenset[str]
    missing_targets: Any  # (check name, namespace) -> list of missing targets
    observe: Any  # (check name, namespace, case, check timeout) -> observation
    suspicions: list[str]

    @classmethod
    def take(cls) -> ProbeKit:
        from autograder import probes
        from autograder.probes import safe

        return cls(frozenset(probes.NEEDS), probes.missing, probes.observe, safe.SUSPICIONS)

    def drain(self) -> list[str]:
        """What read_number caught lying since the last call."""
        out = [str(x)[:300] for x in self.suspicions[:20]]
        self.suspicions.clear()
        return out


@dataclass
class Prepared:
    """The kit, the shell's outputs, the shell and the guard of one worker-to-be; the default limits and the audit
    hook's places, worked out once for every worker."""

    kit: ProbeKit
    outputs: Outputs
    shell: Any
    limits: dict[str, Any]  # every configurable Limits trait at its default (a plan names them all, tests fewer)
    places: tuple[tuple[str, ...], tuple[str, ...]]  # audit.places()
    guard: Guard | None = None

    @classmethod
    def make(cls) -> Prepared:
        """The kit, the shell and (last, so that it sees all of them in place) the guard's snapshot."""
        from autograder.settings import Limits

        from .audit import places

        global _PREPARED
        defaults = Limits()  # whatever traitlets sets up on the class at first use happens here, before the guard's snapshot
        outputs = Outputs(defaults.output_bytes)
        shell = make_shell(outputs)
        warm_figures()
        limits = {name: getattr(defaults, name) for name in defaults.trait_names(config=True)}
        _PREPARED = ready = cls(ProbeKit.take(), outputs, shell, limits, places())
        ready.guard = Guard(shell.user_ns)
        return ready


_PREPARED: Prepared | None = None  # (the guard ignores this name: `take` empties it before learner code runs)


def prepare() -> None:
    """Build the probe kit, the IPython shell and the tamper guard's snapshot now, in the fork server (no learner
    code has run there), so that each forked worker starts with them: ~0.1 s less per notebook."""
    Prepared.make()


def take() -> Prepared:
    """The prepared kit, shell and guard (made now if the fork server did not), no longer reachable from any module."""
    global _PREPARED
    ready, _PREPARED = _PREPARED or Prepared.make(), None
    return ready
