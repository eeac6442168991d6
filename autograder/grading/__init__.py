"""Batch grading of nbgrader submissions: small named steps, learner code in sandboxed workers, judging here.

discover (batch) -> an executor (executors.LocalPool, or cluster.DaskPool) runs pipeline.STEPS per notebook:
read_submission -> parse_notebook -> sanitize_notebook (sanitize) -> execute_and_judge (runner: a sandboxed worker
from sandbox/ running worker/, every message checked by channel, audit events by worker.audit, each grade cell judged by
judge) -> mark_not_run -> render_notebook -> the one writer (writer: gradebook rows via store, autograded files,
the resume journal) -> late penalties and other files (batch.finish) -> summary / CSV / class report (batch).
The data types of all of it: types.
"""
