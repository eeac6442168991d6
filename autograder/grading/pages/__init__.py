"""The nbconvert pieces: every page a person opens made inert, hidden tests redacted, the feedback page."""
