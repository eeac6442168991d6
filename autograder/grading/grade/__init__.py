"""Grading one notebook: the pipeline of steps, the sandboxed worker that runs its cells, the judge of its grade cells."""
