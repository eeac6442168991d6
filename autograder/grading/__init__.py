"""Batch grading of nbgrader submissions: small named steps, learner code in worker processes, judging here.

discover (batch.Course) -> read & sanitize (sanitize) -> execute in a worker (runner, worker)
-> judge (runner.grade_check_call) -> gradebook + autograded notebook (store) -> summary / CSV (batch).
"""
