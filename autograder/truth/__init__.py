"""The grader's own numbers: numerical derivatives, expressions on plain floats, the reference net.

Nothing here ever touches a learner object, and nothing here may be imported by `autograder.probes`.
"""
