"""Code -> winnowed fingerprints, with copydetect (MOSS's winnowing on Pygments tokens).

copydetect's `filter_code` normalises names and formatting: every variable, attribute and function name becomes one
letter (V, F, O), every string S, and spaces and comments go, so a renamed, re-spaced, re-commented copy reads the same.
Its k-grams are hashed here with a fixed hash instead of copydetect's `hash()` of a string, which Python salts per
process: the same class must give the same fingerprints, scores and page on every run. copydetect's `winnow` then
keeps one hash per window, and `compare_files` maps matches back to the original text for the page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from copydetect.utils import filter_code, get_token_coverage, winnow

_BASE = np.uint64(0x100000001B3)  # FNV's 64-bit prime: a polynomial hash of the code points, wrapping mod 2**64
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)  # splitmix64's finaliser


@dataclass
class Fingerprint:
    """One text's winnowed fingerprints: the attributes copydetect's `compare_files` reads."""

    raw_code: str
    filtered_code: str
    offsets: np.ndarray
    hashes: set[int]
    hash_idx: dict[int, list[int]]  # hash -> where it starts in filtered_code
    k: int
    token_coverage: int


def normalise(code: str) -> tuple[str, np.ndarray]:
    """copydetect's filtered code (names one letter, no spaces or comments) and its offsets back to `code`."""
    return filter_code(code, "cell.py", "python")


def kgram_hashes(text: str, k: int) -> np.ndarray:
    """A fixed 63-bit hash of every k-character window of `text` (int64, never negative)."""
    if len(text) < k:
        return np.zeros(0, dtype=np.int64)
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    powers = _BASE ** np.arange(k - 1, -1, -1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = np.lib.stride_tricks.sliding_window_view(codes, k) @ powers
        h ^= h >> np.uint64(30)
        h *= _MIX1
        h ^= h >> np.uint64(27)
        h *= _MIX2
        h ^= h >> np.uint64(31)
    return (h >> np.uint64(1)).astype(np.int64)


def all_hashes(texts: Iterable[str], k: int) -> set[int]:
    """Every k-gram hash of the normalised texts (boilerplate is subtracted whole, not only its winnowed part)."""
    out: set[int] = set()
    for text in texts:
        out.update(kgram_hashes(normalise(text)[0], k).tolist())
    return out


def fingerprint(code: str, k: int, window: int, drop: set[int] | frozenset[int] = frozenset()) -> Fingerprint:
    """The winnowed fingerprints of `code`, without those in `drop` (the boilerplate)."""
    filtered, offsets = normalise(code)
    hashes, idx = winnow(kgram_hashes(filtered, k), window, remove_duplicates=False)
    hash_idx: dict[int, list[int]] = {}
    for h, i in zip(hashes.tolist(), idx.tolist()):
        if h not in drop:
            hash_idx.setdefault(h, []).append(i)
    return Fingerprint(code, filtered, offsets, set(hash_idx), hash_idx, k, int(get_token_coverage(hash_idx, k, len(filtered))))


def only(fp: Fingerprint, keep: set[int]) -> Fingerprint:
    """`fp` restricted to the hashes in `keep` (to show only the regions that count as evidence)."""
    idx = {h: v for h, v in fp.hash_idx.items() if h in keep}
    return Fingerprint(fp.raw_code, fp.filtered_code, fp.offsets, set(idx), idx, fp.k, fp.token_coverage)
