"""Discovering what to grade: the course folder, the assignment as nbgrader stored it, the submissions."""
