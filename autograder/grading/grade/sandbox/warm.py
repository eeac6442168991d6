"""Imported once by the unsandboxed mode's fork server (multiprocessing preloads modules by name, it calls nothing):
every worker it forks starts with `inside.PRELOAD` loaded, as in the sandbox."""

from ..worker.preload import load
from .inside import PRELOAD

load(PRELOAD, prepare_worker=False)
