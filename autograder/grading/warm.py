"""Imported once by the fork server, so every grading worker starts with these already loaded."""

import IPython.core.interactiveshell  # noqa: F401
import matplotlib.pyplot  # noqa: F401  (the inline backend itself loads in the worker, once its shell exists)
import numpy  # noqa: F401

import autograder.catalog
import autograder.grading.worker  # noqa: F401
