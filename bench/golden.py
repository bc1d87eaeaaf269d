"""Byte-identical check for refactors: run main.py over the documented flag combinations and
record every stdout, stderr, exit status and written file, then compare two recordings.

    python bench/golden.py RECORD_DIR OUT.json      # record (RECORD_DIR: a checkout, e.g. a worktree)
    python bench/golden.py --diff OLD.json NEW.json # list the cases whose output changed

A refactor that should change nothing is checked by recording the commit before it (a
`git worktree add /tmp/base <commit>`) and the working tree, then diffing. Inputs the cases
need beyond tests/fixtures are in bench/golden_inputs/ (five `vllm bench serve` files for
--calibrate, written once from a known deployment). Standard library only; about 2 minutes.
"""
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIX = "tests/fixtures/"
CFG = FIX + "configs/"
CAL = ",".join("golden_inputs/" + n for n in
               ("baseline_c1.json", "baseline_c16.json", "baseline_c128.json", "spec_k3_c1.json", "spec_k3_c32.json"))

CASES = [
    [],
    ["--json", "--no-write"],
    ["--exercises", "--no-write"],
    ["--alphas", "0.5,0.7", "--ks", "3,5", "--verify-overheads", "0.1,auto", "--concurrency", "1,64", "--seed", "1"],
    ["--acceptance-rates", "0.4,0.6", "--no-write"],
    ["--acceptance-length", "2.6", "--ks", "3", "--no-write"],
    ["--model", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--weights-dtype", "bf16",
     "--input-tokens", "3000", "--output-tokens", "500"],
    ["--model", "llama-3.1-8b", "--tp", "1", "--weights-dtype", "bf16", "--ks", "3", "--no-write"],
    ["--gpu", "custom", "--gpu-bandwidth", "4.0", "--gpu-tflops", "1500", "--gpu-memory", "96", "--tp", "2"],
    ["--engine", "sglang"],
    ["--engine", "trtllm"],
    ["--engine", "sglang", "--json", "--no-write"],
    ["--engine", "trtllm", "--json", "--no-write"],
    ["--model", "qwen3-30b-a3b", "--tp", "1", "--no-write"],
    ["--model", "qwen3-235b-a22b", "--gpu", "h200", "--tp", "8", "--engine", "sglang", "--no-write"],
    ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--draft", "mtp", "--no-write"],
    ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--draft", "mtp", "--engine", "sglang"],
    ["--model", "deepseek-v3", "--gpu", "b200", "--tp", "8", "--draft", "mtp", "--engine", "trtllm"],
    ["--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--tp", "2", "--weights-dtype", "fp4", "--no-write"],
    ["--model", "llama-4-maverick", "--gpu", "h200", "--tp", "8", "--no-write"],
    ["--model", "kimi-k2", "--gpu", "b200", "--tp", "8", "--weights-dtype", "fp4", "--no-write"],
    ["--gpu", "mi300x", "--tp", "2", "--no-write"],
    ["--draft", "ngram", "--no-write"],
    ["--draft", "ngram", "--engine", "sglang"],
    ["--draft", "ngram", "--engine", "trtllm"],
    ["--draft", "model", "--no-write"],
    ["--draft", "llama-3.2-1b", "--engine", "sglang", "--no-write"],
    ["--draft", "eagle", "--no-write"],
    ["--draft-topk", "4", "--verify-tokens", "16", "--acceptance-length", "3.2", "--ks", "3", "--engine", "sglang"],
    ["--draft-topk", "4", "--verify-tokens", "16", "--acceptance-length", "3.2", "--ks", "3", "--engine", "trtllm",
     "--no-write"],
    ["--draft-topk", "4", "--verify-tokens", "16", "--no-write"],
    ["--kv-dtype", "fp8", "--context", "8000", "--no-write"],
    ["--model-config", CFG + "llama-3.3-70b.config.json", "--no-write"],
    ["--model-config", CFG + "qwen3-30b-a3b-fp8.config.json", "--tp", "1",
     "--draft-config", CFG + "qwen3-30b-a3b-eagle3-head.config.json", "--no-write"],
    ["--model-config", CFG + "gpt-oss-120b.config.json", "--tp", "2", "--no-write"],
    ["--model-config", CFG + "llama-4-scout.config.json", "--tp", "4", "--no-write"],
    ["--metrics", FIX + "metrics_after.prom", "--metrics-before", FIX + "metrics_before.prom", "--no-write"],
    ["--metrics", FIX + "metrics_after.prom", "--metrics-before", FIX + "metrics_before.prom",
     "--bench-baseline", FIX + "bench_baseline.json", "--bench-spec", FIX + "bench_spec.json", "--gate"],
    ["--metrics", FIX + "metrics_k_by_batch.prom", "--no-write"],
    ["--metrics", FIX + "metrics_sglang.prom", "--engine", "sglang", "--no-write"],
    ["--metrics", FIX + "metrics_trtllm_after.prom", "--metrics-before", FIX + "metrics_trtllm_before.prom",
     "--engine", "trtllm", "--no-write"],
    ["--metrics", FIX + "metrics_two_models.prom", "--no-write"],
    ["--metrics", FIX + "metrics_two_models.prom", "--served-model", "Qwen/Qwen3-32B", "--no-write"],
    ["--metrics", FIX + "metrics_v0.prom", "--no-write"],
    ["--metrics", FIX + "metrics_openmetrics.txt", "--no-write"],
    ["--metrics", FIX + "metrics_ngram_drafted_per_pos.prom", "--draft", "ngram", "--no-write"],
    ["--bench-baseline", FIX + "bench_baseline.json", "--bench-spec", FIX + "bench_spec.json", "--json", "--no-write"],
    ["--bench-baseline", FIX + "bench_multi_turn_baseline.json", "--bench-spec", FIX + "bench_multi_turn_spec.json",
     "--no-write"],
    ["--bench-baseline", FIX + "bench_open_loop_baseline.json", "--bench-spec", FIX + "bench_open_loop_spec.json",
     "--target-concurrency", "32", "--gate-margin", "0.05", "--p99-budget", "0.2", "--gate", "--no-write"],
    ["--mix", "chat:0.5:0.6,code:0.3:0.8:400,json:0.2:0.9", "--no-write"],
    ["--mix", "chat:0.5:0.6,code:0.5:0.8", "--json", "--no-write"],
    ["--calibrate", CAL],
    ["--calibrate", CAL, "--json", "--no-write"],
    ["--seed", "7", "--alpha-spread", "0.2", "--output-spread", "0.5", "--no-write"],
    ["--alphas", "1.5"],
    ["--ks", "0"],
    ["--metrics", "/nonexistent.prom"],
    ["--model", "nope"],
    ["--help"],
]


def record(checkout, out):
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "repo"
        shutil.copytree(Path(checkout) / "code", work / "code")
        shutil.copytree(Path(checkout) / "tests" / "fixtures", work / "tests" / "fixtures")
        shutil.copytree(HERE / "golden_inputs", work / "golden_inputs")
        for args in CASES:
            shutil.rmtree(work / "outputs", ignore_errors=True)
            (work / "outputs").mkdir()
            done = subprocess.run([sys.executable, "code/main.py", *args], cwd=work, capture_output=True,
                                  text=True, timeout=120)
            files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((work / "outputs").iterdir())}
            results.append(dict(args=args, rc=done.returncode, stdout=done.stdout, stderr=done.stderr, files=files))
            print(f"{done.returncode} {' '.join(args)[:90]}", file=sys.stderr)
    Path(out).write_text(json.dumps(results, indent=1))


def diff(old_path, new_path):
    old, new = (json.loads(Path(p).read_text()) for p in (old_path, new_path))
    changed = 0
    for a, b in zip(old, new):
        keys = [key for key in ("rc", "stdout", "stderr", "files") if a[key] != b[key]]
        if keys:
            changed += 1
            print(f"CHANGED {'/'.join(keys)}: {' '.join(a['args'])}"[:160])
    print(f"{len(old)} cases, {changed} changed")
    return 1 if changed or len(old) != len(new) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--diff"]:
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    record(sys.argv[1], sys.argv[2])
