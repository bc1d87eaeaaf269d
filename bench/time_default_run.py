"""Wall time of the default run, as a user starts it: `python bench/time_default_run.py [runs] [checkout]`.

Starts `python code/main.py --no-write` of this checkout (or of another one, e.g. a `git worktree` of an
older commit, to compare the two in one session) in a fresh interpreter each time, so start-up counts, and
prints the minimum and median. Python writes and reads its bytecode cache as it does for a user (the run
removes PYTHONDONTWRITEBYTECODE, which some machines set); the first run, which may compile, is left out.
The goal is under 1 second on 2 cores.
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def main(runs=7, checkout=HERE):
    script = Path(checkout) / "code" / "main.py"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(script), "--no-write"], check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - start)
    times = times[1:]   # the first may compile the package
    print(f"default run of {checkout}, {runs} runs: min {min(times):.3f} s, median {statistics.median(times):.3f} s")
    return 0 if statistics.median(times) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 7, sys.argv[2] if len(sys.argv) > 2 else HERE))
