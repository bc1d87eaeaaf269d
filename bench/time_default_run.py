"""Wall time of the default run, as a user starts it: `python bench/time_default_run.py [runs]`.

Starts `python code/main.py --no-write` in a fresh interpreter each time (so start-up
counts) and prints the minimum and median. The goal is under 1 second on 2 cores.
"""
import statistics
import subprocess
import sys
import time
from pathlib import Path

MAIN = Path(__file__).resolve().parent.parent / "code" / "main.py"


def main(runs=7):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(MAIN), "--no-write"], check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    print(f"default run, {runs} runs: min {min(times):.3f} s, median {statistics.median(times):.3f} s")
    return 0 if statistics.median(times) < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 7))
