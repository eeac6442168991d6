"""The learner side of grading: one forked process runs one notebook's cells with IPython semantics.

It never decides a grade. At a grade cell it waits for the grader's requests ("which targets are missing?",
"observe this case") and answers with plain JSON; the grader judges. Everything it sends goes through `json`,
never pickle, so a hostile notebook can at worst send wrong numbers. Staged into the sandbox whole.

    outputs    a cell's outputs as nbformat dicts, bounded per cell and per notebook; sys.stdout/stderr in a cell
    shell      the IPython shell, and one cell run with a time limit
    guard      the tamper guard: a snapshot before learner code, compared after every cell
    audit      the PEP 578 audit hook: introspection and escapes by learner code, reported as they happen
    confine    the worker process's own bounds (process group, rlimits, no terminal)
    prepared   the probe kit, the shell and the guard, made once in the process that forks the workers
    main       the request loop: cells in order, the grader's requests at grade cells
    preload    what that process imports before forking (both modes)

It imports nothing of the sandbox: the sandbox (`sandbox/forkserver.py`, and `sandbox/client.py` unsandboxed) starts it.
"""
