"""Storing grades: the one writer, the only code that writes the gradebook, the resume journal, the files."""
