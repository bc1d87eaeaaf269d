"""Make one function of the acceptance mathematics or the cost model 2% wrong, and see which tests notice.

    $ python bench/scale_check.py                    # every function listed below: ~15 minutes on 2 cores
    $ python bench/scale_check.py round_ms tau_for   # only these

Issue 14 asks that a 2% error in any function of the acceptance mathematics and of the cost
model fail a test that is not a byte-for-byte comparison. For each function this script
appends to a copy of code/main.py a wrapper that multiplies what the function returns by
SCALE (a float, an int rounded, or each number of a tuple or dict), so every caller in the
module gets the wrong value, runs the suite on the copy, and prints KILLED (a test other
than the two snapshots failed), SNAPSHOT (only they did) or SURVIVED, with the tests that
failed. The working tree is never touched.
"""
import concurrent.futures
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCALE = 1.02
SNAPSHOTS = {"test_table_excerpt_is_what_the_default_run_prints",
             "test_committed_outputs_are_what_the_default_run_writes"}

# The functions of the two sections that return numbers (the rest build deployments, find
# roots or look things up). Each is checked on its own.
ACCEPTANCE = ["acceptance_length", "acceptance_rate", "alpha_from_length", "alpha_from_rate", "profile_length",
              "lesson_speedup", "exact_speedup", "breakeven_rate", "required_rate", "exact_breakeven",
              "round_moments"]
COST_MODEL = ["attention_params", "expert_params", "mlp_params", "embedding_params", "model_params", "mtp_params",
              "eagle_head_params", "kv_bytes_per_layer", "kv_bytes_per_token", "weight_split", "expected_experts",
              "peak_tflops", "attention_width", "mean_context", "memory_budget_bytes", "static_bytes",
              "kv_bytes_per_sequence", "max_concurrency", "bandwidth_share", "allreduce_ms", "attended",
              "pass_parts", "pass_ms", "target_parts", "target_pass_ms", "fixed_ms", "prefill_tokens",
              "decode_step_ms", "plain_step_ms", "prefill_share_ms", "draft_step_ms", "round_ms", "model_overhead",
              "spec_tpot_ms", "seen_round_ms", "prefill_overhead", "drafted_overhead", "effective_overhead"]

WRAPPER = '''

def _scaled_by_the_check(f, scale={scale}):
    def wrong(*args, **kwargs):
        value = f(*args, **kwargs)
        one = lambda v: (round(v * scale) if isinstance(v, int) else v * scale) \\
            if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        if isinstance(value, dict):
            return {{key: one(v) for key, v in value.items()}}
        if isinstance(value, tuple):
            return tuple(one(v) for v in value)
        return one(value)
    return wrong


{name} = _scaled_by_the_check({name})
'''


def check(name):
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        main = copy / "code" / "main.py"
        text = main.read_text()
        if f"\ndef {name}(" not in text:
            return f"NOT FOUND {name}"
        # Before the entry point, so that the wrapped function is the one every caller finds.
        guard = '\nif __name__ == "__main__":'
        head, tail = text.rsplit(guard, 1)
        main.write_text(head + WRAPPER.format(scale=SCALE, name=name) + guard + tail)
        proc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests"], cwd=copy,
                              capture_output=True, text=True)
    failed = [line.split(" (")[0][6:].strip() for line in proc.stderr.splitlines()
              if line.startswith(("FAIL: ", "ERROR:"))]
    physics = [t for t in failed if t not in SNAPSHOTS]
    verdict = ("KILLED  " if physics else "SNAPSHOT") if proc.returncode else "SURVIVED"
    return f"{verdict} {name}" + (f"  [{', '.join(physics[:3])}{', ...' if len(physics) > 3 else ''}]"
                                  if physics else "")


def main(argv):
    names = argv or ACCEPTANCE + COST_MODEL
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:   # each check is its own process
        for line in pool.map(check, names):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
