"""Who shares rare code with whom, and how far each pair stands above the class's own pairs.

Every student's fingerprints are indexed per exercise. A fingerprint found in the handout (already gone), in a public
engine (that evidence goes to the student-engine comparison instead) or in more than a `common` number of students
(what every answer looks like) is no evidence between two students. Per exercise, a pair that shares a rare one
scores its rarity times how alike their answers are; the exercises add up, times how alike their whole work is
(`pair_scores`).
A pair's z-score is robust: its distance from the median of all pairs' scores, in units of their median absolute
deviation (times 1.4826), or of their mean absolute deviation (times 1.2533) when most pairs share nothing and that
median deviation is 0 (Iglewicz and Hoaglin's modified z-score).
A student's score against a public engine is the number of fingerprints they share with it, and its z-score is taken
against all the students' scores against that engine. Groups are the connected components of the pairs at or above
the threshold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .fingerprint import Fingerprint
from .handout import Exercise


@dataclass(frozen=True)
class Baseline:
    """The class's typical pair: median, spread (the z-score's unit) and how many pairs it is taken over."""

    median: float
    spread: float
    pairs: int

    def z(self, score: float) -> float:
        """How many spreads `score` stands above the median (inf when the spread is 0 and the score above it)."""
        if self.spread > 0:
            return (score - self.median) / self.spread
        return math.inf if score > self.median else 0.0


@dataclass(frozen=True)
class Match:
    """One ranked pair: two students, or a student and a public engine (`public` True, `b` its name)."""

    a: str
    b: str
    score: float
    z: float
    public: bool = False
    exercises: tuple[Exercise, ...] = ()  # where the evidence is, in the assignment's order
    threshold: float = math.inf  # the z at which a match of its kind stands out

    @property
    def flagged(self) -> bool:
        """Whether it stands out (z at or above its kind's threshold)."""
        return self.z >= self.threshold

    @property
    def height(self) -> float:
        """z in units of its kind's threshold: how the two kinds are ranked together."""
        return self.z / self.threshold if self.threshold > 0 else math.inf


@dataclass
class Ranking:
    """Every pair with any evidence, highest z first, the baselines, and the groups at or above the threshold."""

    matches: list[Match]
    baseline: Baseline
    public_baselines: dict[str, Baseline]
    groups: list[list[str]] = field(default_factory=list)
    common: int = 0  # a fingerprint in more than this many students is common
    holders: dict[Exercise, dict[int, int]] = field(default_factory=dict)  # exercise -> fingerprint -> students with it
    explained: set[int] = field(default_factory=set)  # fingerprints of the public engines

    def evidence(self, exercise: Exercise, h: int) -> bool:
        """Whether fingerprint `h` of `exercise` counts between two students (rare enough, in no public engine)."""
        return h not in self.explained and 2 <= self.holders.get(exercise, {}).get(h, 0) <= self.common


def robust_baseline(scores: np.ndarray, total: int | None = None) -> Baseline:
    """Median and spread of `scores`, padded with zeros up to `total` values (the pairs that share nothing)."""
    total = len(scores) if total is None else total
    zeros = total - len(scores)
    values = np.concatenate([scores.astype(np.float64), np.zeros(max(zeros, 0))]) if total else np.zeros(1)
    median = float(np.median(values))
    deviations = np.abs(values - median)
    mad = float(np.median(deviations))
    spread = 1.4826 * mad if mad > 0 else 1.2533 * float(np.mean(deviations))
    return Baseline(median, spread, total)


def common_limit(students: int, share: float, floor: int) -> int:
    """The most students a fingerprint may be found in and still count as evidence."""
    return max(floor, math.floor(share * students))


def pair_scores(prints: Sequence[dict[Exercise, Fingerprint]], exercises: Sequence[Exercise], explained: set[int],
                common: int) -> tuple[np.ndarray, dict[Exercise, dict[int, int]]]:
    """An N x N matrix (upper triangle) of each pair's evidence, and how many students hold each fingerprint.

    Per exercise, a pair that shares a rare fingerprint scores the rarity of the rarest one they share,
    log((N + 1) / its holders) (never 0, even in a class of two), times how much of their answers is the same (the
    Jaccard index of their fingerprints): the dozens of fingerprints of one shared answer count once. The
    exercises' scores add up, and the sum is multiplied by how much of their whole work is the same (the Jaccard
    index over every exercise): two learners who met on a few answers, as learners choosing among the few correct
    ways do, differ everywhere else; a copy does not.
    """
    n = len(prints)
    sets = [{e: fp.hashes - explained for e, fp in fps.items()} for fps in prints]
    evidence = np.zeros(n * n, dtype=np.float64)
    counts: dict[Exercise, dict[int, int]] = {}
    for exercise in exercises:
        holders: dict[int, list[int]] = {}
        for i, mine in enumerate(sets):
            for h in mine.get(exercise, ()):
                holders.setdefault(h, []).append(i)
        counts[exercise] = {h: len(who) for h, who in holders.items() if len(who) > 1}
        by_count: dict[int, list[list[int]]] = {}
        for who in holders.values():
            if 2 <= len(who) <= common:
                by_count.setdefault(len(who), []).append(who)
        rarest = np.zeros(n * n, dtype=np.float64)
        for count in sorted(by_count, reverse=True):  # the rarer fingerprints last: their weight stays
            members = np.asarray(by_count[count], dtype=np.int64)  # one row per fingerprint, students ascending
            left, right = np.triu_indices(count, 1)
            rarest[(members[:, left] * n + members[:, right]).ravel()] = math.log((n + 1) / count)
        for flat in np.flatnonzero(rarest).tolist():
            evidence[flat] += rarest[flat] * jaccard(sets[flat // n].get(exercise, set()), sets[flat % n].get(exercise, set()))
    for flat in np.flatnonzero(evidence).tolist():
        a, b = sets[flat // n], sets[flat % n]
        same = sum(len(a[e] & b[e]) for e in a.keys() & b.keys())
        total = sum(len(x) for x in a.values()) + sum(len(x) for x in b.values()) - same
        evidence[flat] *= same / total
    return evidence.reshape(n, n), counts


def jaccard(a: set[int], b: set[int]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    same = len(a & b)
    return same / (len(a) + len(b) - same) if a or b else 0.0


def shared_exercises(a: dict[Exercise, Fingerprint], b: dict[Exercise, Fingerprint] | Fingerprint,
                     exercises: Sequence[Exercise], keep: Callable[[Exercise, int], bool]) -> tuple[Exercise, ...]:
    """The exercises where `a` shares an evidence fingerprint (`keep(exercise, h)`) with `b` (a student, or one
    public text)."""
    out = []
    for e in exercises:
        fa = a.get(e)
        fb = b if isinstance(b, Fingerprint) else b.get(e)
        if fa is not None and fb is not None and any(keep(e, h) for h in fa.hashes & fb.hashes):
            out.append(e)
    return tuple(out)


def groups(students: Sequence[str], flagged: Sequence[tuple[int, int]]) -> list[list[str]]:
    """Connected components (two or more students) of the flagged pairs, largest first."""
    parent = list(range(len(students)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in flagged:
        parent[root(i)] = root(j)
    comps: dict[int, list[str]] = {}
    for i, name in enumerate(students):
        comps.setdefault(root(i), []).append(name)
    return sorted((sorted(c) for c in comps.values() if len(c) > 1), key=lambda c: (-len(c), c))


def rank(students: Sequence[str], prints: Sequence[dict[Exercise, Fingerprint]], exercises: Sequence[Exercise],
         public: dict[str, Fingerprint], common_share: float, common_floor: int, flag_z: float, flag_public_z: float,
         keep_below: int = 200) -> Ranking:
    """Score, baseline and rank every pair (students, and each student against each public engine)."""
    n = len(students)
    common = common_limit(n, common_share, common_floor)
    explained = set().union(*(fp.hashes for fp in public.values())) if public else set()
    matrix, holders = pair_scores(prints, exercises, explained, common)
    ranking = Ranking([], Baseline(0.0, 0.0, 0), {}, [], common, holders, explained)
    upper = matrix[np.triu_indices(n, 1)]
    baseline = robust_baseline(upper[upper > 0])
    order = np.argsort(-matrix, axis=None, kind="stable")
    matches: list[Match] = []
    flagged: list[tuple[int, int]] = []
    below = 0
    for flat in order.tolist():
        i, j = divmod(flat, n)
        score = float(matrix[i, j])
        if score <= 0 or i >= j:
            if score <= 0:
                break
            continue
        z = baseline.z(score)
        if z < flag_z:
            below += 1
            if below > keep_below:
                break
        else:
            flagged.append((i, j))
        matches.append(Match(students[i], students[j], score, z, threshold=flag_z,
                             exercises=shared_exercises(prints[i], prints[j], exercises, ranking.evidence)))
    public_baselines: dict[str, Baseline] = {}
    for name, fp in public.items():
        counts = np.array([sum(len(f.hashes & fp.hashes) for f in fps.values()) for fps in prints], dtype=np.float64)
        public_baselines[name] = base = robust_baseline(counts)
        for i in np.argsort(-counts, kind="stable").tolist()[: max(keep_below, 1)]:
            if counts[i] <= 0:
                break
            matches.append(Match(students[i], name, float(counts[i]), base.z(float(counts[i])), public=True, threshold=flag_public_z,
                                 exercises=shared_exercises(prints[i], fp, exercises, lambda e, h: True)))
    matches.sort(key=lambda m: (-m.height, -m.score, m.a, m.b))
    ranking.matches, ranking.baseline, ranking.public_baselines = matches, baseline, public_baselines
    ranking.groups = groups(students, flagged)
    return ranking
