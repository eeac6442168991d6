"""Imported once by the unsandboxed mode's fork server (multiprocessing preloads modules by name, it calls nothing):
every worker it forks starts with `preload.PRELOAD` loaded."""

from .preload import load

load(prepare_worker=False)
