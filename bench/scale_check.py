"""Make one function of the acceptance mathematics or the cost model 2% wrong, and see which tests notice.

    $ python bench/scale_check.py                    # every function listed below: ~15 minutes on 2 cores
    $ python bench/scale_check.py round_ms tau_for   # only these

Issue 14 asks that a 2% error in any function of the acceptance mathematics and of the cost
model fail a test that is not a byte-for-byte comparison. For each function this script
appends to a copy of the module that defines it (code/rollout/acceptance.py or costmodel.py)
a wrapper that multiplies what the function returns by SCALE (a float, an int rounded, or each
number of a tuple or dict); the wrapper rebinds the name before any other module imports it,
so every caller in the package gets the wrong value, runs the suite on the copy, and prints KILLED (a test other
than the two snapshots failed), SNAPSHOT (only they did) or SURVIVED, with the tests that
failed. The working tree is never touched.
"""
import concurrent.futures
import sys

from plant_bugs import suite_with   # the copy, the suite and the verdict are plant_bugs.py's

SCALE = 1.02

# The functions of rollout/acceptance.py and rollout/costmodel.py that return numbers (the rest build deployments, find
# roots or look things up). Each is checked on its own.
ACCEPTANCE = ["acceptance_length", "acceptance_rate", "alpha_from_length", "alpha_from_rate", "profile_length",
              "speedup", "lesson_speedup", "exact_speedup", "breakeven_rate", "required_rate", "exact_breakeven",
              "round_distribution", "round_moments"]
COST_MODEL = ["attention_params", "expert_params", "mlp_params", "embedding_params", "model_params", "mtp_params",
              "eagle_head_params", "kv_bytes_per_layer", "kv_bytes_per_token", "weight_split", "expected_experts",
              "peak_tflops", "attention_width", "mean_context", "memory_budget_bytes", "static_bytes",
              "kv_bytes_per_sequence", "max_concurrency", "bandwidth_share", "allreduce_ms", "attended",
              "pass_parts", "pass_ms", "target_parts", "target_pass_ms", "fixed_ms", "prefill_tokens",
              "decode_step_ms", "plain_step_ms", "prefill_share_ms", "draft_step_ms", "round_ms", "eps_decode",
              "spec_tpot_ms", "tpot_speedup", "eps_seen", "eps_grown"]

WRAPPER = '''

def _scaled_by_the_check(f, scale={scale}):
    def wrong(*args, **kwargs):
        value = f(*args, **kwargs)
        one = lambda v: (round(v * scale) if isinstance(v, int) else v * scale) \\
            if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        if isinstance(value, dict):
            return {{key: one(v) for key, v in value.items()}}
        if isinstance(value, (tuple, list)):
            return type(value)(one(v) for v in value)
        return one(value)
    return wrong


{name} = _scaled_by_the_check({name})
'''


def check(name):
    def change(code):
        for module in ("acceptance", "costmodel"):
            path = code / "rollout" / f"{module}.py"
            text = path.read_text()
            if f"\ndef {name}(" in text:   # at the module's end: importers see the wrapped function
                return path, text + WRAPPER.format(scale=SCALE, name=name)
        return None
    head, _, tests = suite_with(change).partition(" [")
    return f"{head.strip()} {name}" + (f"  [{tests}" if tests else "")


def main(argv):
    names = argv or ACCEPTANCE + COST_MODEL
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:   # each check is its own process
        for line in pool.map(check, names):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
