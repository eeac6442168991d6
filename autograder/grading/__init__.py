"""Batch grading of nbgrader submissions, a folder per phase, in the order a notebook goes through them
(batch.py orders them):

    discover/  the course, the assignment as nbgrader stored it, the submissions, what each grade depends on
    store/     the one writer (every gradebook write), the resume journal and what it says to regrade, the files
    grade/     one notebook: pipeline.STEPS (read, parse, sanitize, execute and judge, render), run by an executor
               (executors.LocalPool, or cluster.DaskPool); learner code in a sandbox/ running worker/, every
               message checked by channel, each grade cell judged by judge; bounded.py reads and renders off the
               grader's thread, with deadlines
    finish/    late penalties and the submission's other files
    outputs/   outputs.registry.OUTPUTS: the summary, the class report, the misconceptions, the score changes, exports
    pages/     the nbconvert pieces: every page a person opens made inert, hidden tests redacted (not
               feedback/: that name is a course's generated folder)

Where a new piece goes: a bound in autograder/settings.py (a configurable one on `Limits`), an output in
outputs/registry.py's OUTPUTS with the module that makes it, a step of one notebook in grade/pipeline.py's STEPS.
The data types of all of it: types.
"""
