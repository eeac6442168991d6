"""Batch grading of nbgrader submissions: small named steps, learner code in sandboxed workers, judging here.

discover (batch.Course) -> read & sanitize (sanitize) -> run in a sandboxed worker (sandbox, runner, worker)
-> every message checked (channel; audit events from the worker's hook, worker.audit) -> judge (judge)
-> gradebook + autograded notebook (store) -> summary / CSV (batch).
"""
