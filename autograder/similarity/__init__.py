"""Similarity of learners' solution cells across a class: evidence for a person to read, never a verdict.

`python -m autograder similarity ASSIGNMENT` runs, one step per module:
handout (what every learner was given: the released notebooks, the reference solution, the workbook's demo code)
-> read (each student's solution cells, bounded, never executed) -> public (known public engines, micrograd from its
package) -> fingerprint (copydetect's tokenising filter and winnowing, handed-out code subtracted) -> compare (shared
fingerprints weighted by how rare they are in the class; each pair's robust z-score against all pairs; groups)
-> page (the matched regions side by side, inert HTML) and command (the CLI step: read, compare, write, print).
"""
