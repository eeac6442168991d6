"""Hidden tests out of sight: nbgrader's `### BEGIN HIDDEN TESTS` blocks found as nbgrader finds them, and replaced
(by a note in the autograded notebook and the feedback; by nothing in the learner's copy). Text only, no nbconvert:
the grader's own steps use it, and `redaction.RedactHiddenTests` for nbgrader's feedback."""

from __future__ import annotations

BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
HIDDEN_NOTE = "# (hidden tests: run by the grader, source not shown)\n"


def replace_hidden(source: str, note: str) -> str:
    """`source` with every hidden-tests block replaced by `note`, as nbgrader's own pattern finds them.

    A block runs from a line starting (after spaces and tabs) with `### BEGIN HIDDEN TESTS` to the next line starting
    with `### END HIDDEN TESTS`, both included; a BEGIN with no END after it stays as it is. One pass over the lines
    (a lazy regex over them took time quadratic in the number of unterminated BEGIN lines a learner can write).
    """
    if BEGIN_HIDDEN not in source:
        return source
    parts = source.split("\n")
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    ends = [i for i, line in enumerate(lines) if line.lstrip(" \t").startswith(END_HIDDEN)]
    out: list[str] = []
    i, k = 0, 0  # k: the first END line not consumed yet
    while i < len(lines):
        if not lines[i].lstrip(" \t").startswith(BEGIN_HIDDEN):
            out.append(lines[i])
            i += 1
            continue
        while k < len(ends) and ends[k] <= i:
            k += 1
        if k == len(ends):  # no END after this BEGIN, nor after any later one
            out.extend(lines[i:])
            break
        out.append(note)
        i = ends[k] + 1
    return "".join(out)


def redact_hidden_tests(source: str) -> str:
    """The grade cell's source without the hidden tests, for the autograded notebook and the feedback."""
    return replace_hidden(source, HIDDEN_NOTE)
