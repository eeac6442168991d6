"""One line per learner string: what the grader prints or writes shows every character that could break or disguise a
line as a visible escape.

A learner controls many strings the grader shows: file names in a submission folder (a symlink may be named
`notes\\n<a forged row>`), type and exception names of their objects, paths their code opened, messages. Printed as
they are, a newline forges a row of the summary or the CSV, a C1 code (U+009B CSI) drives the terminal, a bidi
override (U+202E) reorders what the instructor reads. `one_line` is applied wherever such a string reaches output
(the summary, the CSVs, the class report, the notebook's notes, gradebook comments, error lines, `check`'s report).
"""

from __future__ import annotations

import unicodedata

# what can end a line, hide, or reorder text: controls (C0, DEL, C1, U+0085 NEL, U+001C-1E), format characters (bidi
# overrides and isolates, zero-width ones, U+FEFF), line and paragraph separators, and lone surrogates
HIDDEN = {"Cc", "Cf", "Zl", "Zp", "Cs"}
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(c: str) -> str:
    if c in NAMED:
        return NAMED[c]
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if 0xDC80 <= n <= 0xDCFF:  # a byte that was not UTF-8 (a file name read with surrogateescape): that byte
        return f"\\x{n - 0xDC00:02x}"
    return f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def one_line(text: object) -> str:
    """`text` as one line with nothing hidden: each control, format or separator character (and lone surrogate) as its
    escape (`\\n`, `\\x9b`, `\\u202e`); the rest unchanged. Idempotent (its escapes are plain ASCII)."""
    text = str(text)
    if text.isprintable():  # (False for every character escaped here, and for a few others, such as U+00A0)
        return text
    return "".join(_visible(c) if unicodedata.category(c) in HIDDEN else c for c in text)
