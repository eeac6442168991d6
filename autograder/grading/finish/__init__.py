"""The steps after grading: late penalties, the submission's other files."""
