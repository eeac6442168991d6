"""`python -m autograder`."""

import sys

# jsonschema (imported by nbformat) loads rfc3987_syntax when it is installed (jupyter_events' extra pulls it in),
# and that module builds a Lark grammar at import: 1-9 s here, more than the rest of the grader's start. It only
# checks the "iri" string formats, which no notebook schema uses; without it jsonschema skips that one checker.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]
# Likewise isoduration (and the arrow it loads: ~0.15 s), for the "duration" format only.
sys.modules.setdefault("isoduration", None)  # type: ignore[assignment]

if __name__ == "__main__":  # grading workers re-import the main module under another name
    if sys.argv[1:2] == ["grade"]:  # warm the workers' fork server while the grader imports nbgrader
        from .grading.nbgrader_light import archive_util_on_first_use, import_without_server_extensions

        import_without_server_extensions()
        archive_util_on_first_use()
        if "--unsafe-no-sandbox" in sys.argv:
            from .grading.worker import forkserver_context

            forkserver_context(start=True)
        elif not any(arg == "--cluster" or arg.startswith("--cluster=") for arg in sys.argv):
            # (with --cluster the Dask workers run the sandboxes: the driver runs no learner code and starts none)
            from .grading.sandbox import MODE

            MODE.pool.warm()

    import gc

    from .cli import main

    code = main()
    gc.freeze()  # the process ends here: a last collection over the whole heap took ~0.5 s after a batch
    sys.exit(code)
