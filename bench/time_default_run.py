"""Wall time of the default run against the lesson's toy, both as a user starts them, in the same session:
`python bench/time_default_run.py [runs] [checkout]`.

Starts, in fresh interpreters and interleaved so that both meet the same machine, `python code/main.py --no-write`
of this checkout (or of another, e.g. a `git worktree` of an older commit), the toy `../shared/bench/lesson_toy.py`
(the lesson's loop as a learner writes it: the yardstick), and a run of the largest grid the command line takes
(22 alphas x 5 Ks x 4 overheads x 8 concurrencies: 3,520 cells). Prints each one's median and minimum over `runs`
(default 7; the first of each, which may compile, is left out) and the two ratios the speed issue holds them to: the
default run at most 2x the toy, the largest grid at most 12x. Where ../shared is absent it says so and times the
default run alone. Python writes and reads its bytecode cache as it does for a user (PYTHONDONTWRITEBYTECODE is
removed from the environment). Exit 1 when a ratio is past its bound.
"""
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
TOY = HERE.parent / "shared" / "bench" / "lesson_toy.py"
ALPHAS = ",".join(f"{0.05 + 0.04 * i:.2f}" for i in range(22))   # 0.05 .. 0.89
LARGEST = ["--alphas", ALPHAS, "--ks", "1,2,3,4,5", "--verify-overheads", "0.05,0.1,0.2,auto",
           "--concurrency", "1,2,4,8,16,32,64,128"]
BOUNDS = {"default run": 2.0, "largest grid": 12.0}   # times the toy, the issue's


def timed(argv, env):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def main(runs=7, checkout=HERE):
    script = Path(checkout) / "code" / "main.py"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    commands = {"default run": [sys.executable, str(script), "--no-write"],
                "largest grid": [sys.executable, str(script), "--no-write", *LARGEST]}
    if TOY.exists():
        commands["toy"] = [sys.executable, str(TOY)]
    else:
        print(f"{TOY} is absent: the default run and the largest grid are timed alone")
    times = {name: [] for name in commands}
    for round_ in range(runs + 1):
        for name, argv in commands.items():
            seconds = timed(argv, env)
            if round_:   # the first may compile
                times[name].append(seconds)
    for name, values in times.items():
        print(f"{name:13s} median {statistics.median(values):.3f} s, min {min(values):.3f} s ({runs} runs)")
    if "toy" not in times:
        return 0
    toy, failed = statistics.median(times["toy"]), False
    for name, bound in BOUNDS.items():
        ratio = statistics.median(times[name]) / toy
        failed |= ratio > bound
        print(f"{name}: {ratio:.2f}x the toy (at most {bound:g}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 7, sys.argv[2] if len(sys.argv) > 2 else HERE))
