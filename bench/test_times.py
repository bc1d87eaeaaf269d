"""The suite's time, test by test: runs `python -m unittest discover -s tests` in this process with a result that
times every test and every class's setUpClass, then prints the total and the slowest.

    python bench/test_times.py [N]     # N slowest (default 10); a pattern after it picks test files, e.g. "test_s*.py"

Wall time of the README's command, `python tests/run.py` (these modules over every core), is what its bound is on:
time that. This script, in one process, says where the time goes.
Standard library only.
"""
import sys
import time
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class TimedResult(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.times, self.started, self.classes = {}, None, {}

    def startTest(self, test):
        self.started = time.perf_counter()
        super().startTest(test)

    def stopTest(self, test):
        self.times[test.id()] = time.perf_counter() - self.started
        super().stopTest(test)


class TimedSuite(unittest.TestSuite):
    """A suite whose class fixtures are timed: setUpClass runs in _handleClassSetUp."""
    def _handleClassSetUp(self, test, result):
        started = time.perf_counter()
        super()._handleClassSetUp(test, result)
        name = f"{type(test).__module__}.{type(test).__name__}"
        if name not in getattr(result, "classes", {}) and hasattr(result, "classes"):
            result.classes[name] = time.perf_counter() - started


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    pattern = sys.argv[2] if len(sys.argv) > 2 else "test*.py"
    sys.path.insert(0, str(ROOT / "tests"))
    loader = unittest.TestLoader()
    loader.suiteClass = TimedSuite
    suite = loader.discover(str(ROOT / "tests"), pattern=pattern, top_level_dir=str(ROOT / "tests"))
    runner = unittest.TextTestRunner(resultclass=TimedResult, verbosity=0, stream=open("/dev/null", "w"))
    started = time.perf_counter()
    result = runner.run(suite)
    total = time.perf_counter() - started
    print(f"{result.testsRun} tests in {total:.1f} s ({len(result.failures)} failures, {len(result.errors)} errors)")
    by_module = {}
    for name, seconds in list(result.times.items()) + list(result.classes.items()):
        module = name.split(".")[0]
        by_module[module] = by_module.get(module, 0.0) + seconds
    print("by file:")
    for module, seconds in sorted(by_module.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:6.1f} s  {module}")
    print(f"the {top} slowest tests (a class's setUpClass counted as its own line):")
    rows = sorted(list(result.times.items()) + [(f"{n}.setUpClass", s) for n, s in result.classes.items()],
                  key=lambda kv: -kv[1])
    for name, seconds in rows[:top]:
        print(f"  {seconds:6.2f} s  {name}")
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
