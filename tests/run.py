"""The fast tier on every core: `python tests/run.py` runs the test_*.py modules that
`python -m unittest discover -s tests` runs, the same tests with the same assertions, in one worker process per core
(at most WORKERS), then prints unittest's own summary ("Ran N tests in T s", then "OK" or "FAILED (...)") and exits 0
only when every module passed. `python tests/run.py -p "slow_*.py"` runs another pattern the same way.

The workers are forked once the package is imported (support imports main), so each starts warm, and take modules
off one queue, the largest files first: a module's tests run in one process, in order, as they do under unittest's
own runner. A line a module says how long it took; a failing module's report is printed whole. Standard library only.
"""
import gc
import io
import multiprocessing
import os
import sys
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support  # noqa: E402  (code/ on the path and the package imported before the workers fork)

TESTS = support.ROOT / "tests"

WORKERS = 4   # at most this many processes, however many cores


def run_module(name):
    """(name, seconds, tests run, failures, errors, skipped, unittest's report): one module's tests, run here."""
    stream, started = io.StringIO(), time.perf_counter()
    suite = unittest.defaultTestLoader.loadTestsFromName(name)
    result = unittest.TextTestRunner(stream=stream, verbosity=1).run(suite)
    return (name, time.perf_counter() - started, result.testsRun, len(result.failures),
            len(result.errors) + len(result.unexpectedSuccesses), len(result.skipped), stream.getvalue())


def modules(pattern):
    """The modules a pattern names in tests/, the largest files first (they take longest: the queue ends short)."""
    return [path.stem for path in sorted(TESTS.glob(pattern), key=lambda path: (-path.stat().st_size, path.name))]


def main(argv):
    pattern = argv[argv.index("-p") + 1] if "-p" in argv else "test*.py"
    names = modules(pattern)
    started = time.perf_counter()
    totals = [0, 0, 0, 0]
    workers = max(1, min(WORKERS, os.cpu_count() or 1, len(names)))
    gc.freeze()   # the imported package outlives every test: the collector need not walk it in each worker
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"   # no fork on Windows
    with multiprocessing.get_context(method).Pool(workers) as pool:
        for name, seconds, *counts, report in pool.imap_unordered(run_module, names):
            totals = [a + b for a, b in zip(totals, counts)]
            failed = counts[1] or counts[2]
            print(f"{name:32s} {counts[0]:4d} tests {seconds:6.1f} s  {'FAILED' if failed else 'ok'}", file=sys.stderr)
            if failed:   # a failing module's report whole; the others' dots say nothing more
                print(report, file=sys.stderr)
    ran, failures, errors, skipped = totals
    print("-" * 70, file=sys.stderr)
    print(f"Ran {ran} tests in {time.perf_counter() - started:.3f}s\n", file=sys.stderr)
    details = ", ".join(f"{key}={value}" for key, value in
                        (("failures", failures), ("errors", errors), ("skipped", skipped)) if value)
    ok = not failures and not errors and ran > 0
    print(("OK" if ok else "FAILED") + (f" ({details})" if details else ""), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
