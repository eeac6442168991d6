"""Text every output can hold: valid UTF-8 with nothing hidden, and CSV cells no spreadsheet runs as a formula."""

from __future__ import annotations

from ...lines import one_line


def valid_text(text: str) -> str:
    """`text` with every lone surrogate (which no UTF-8 writer can encode: it came from a worker, or a file name that
    is not UTF-8) replaced by U+FFFD, and NUL and the other control characters but tab and newline by U+FFFD too."""
    text = str(text)
    return text if text.isprintable() else text.translate(_INVALID)


_INVALID = {c: "\ufffd" for c in [*range(0x20), 0x7F, *range(0xD800, 0xE000)] if chr(c) not in "\t\n"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet reads a cell starting so as a formula


def csv_text(cells: list[str]) -> list[str]:
    """A CSV line's cells as safe text: one line each with nothing hidden (`one_line`: valid UTF-8 too), and a cell a
    spreadsheet would run as a formula quoted with `'` (OWASP's advice; numbers are not touched)."""
    out = []
    for cell in cells:
        cell = one_line(cell)
        if cell.startswith(FORMULA_START) and not _number(cell):
            cell = "'" + cell
        out.append(cell)
    return out


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
