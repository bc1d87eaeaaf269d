"""A GEMM's weight read and its math on measured kernels: the transition costmodel.overlapped draws, fitted here.

A decode GEMM (m tokens against an n x k weight) streams the weight, 2 n k bytes, and does 2 m n k FLOPs; measured
kernels are neither the sum of the two times nor their max, but a smooth transition near the ridge. This script fits

    time = floor + overlapped(2 n k / (bandwidth x bw), 2 m n k / (peak x eff), p)

to the bf16 GEMMs of NVIDIA aiconfigurator's kernel database (H100 SXM and H200 on vLLM 0.24.0, A100 SXM on vLLM
0.14.0: bench/gemm_kernels.json, m = 1-8192, n and k 2048-16384), with one transition sharpness p for every GPU and a
share of bandwidth (bw), of peak FLOP/s (eff) and a launch floor (us) per GPU, by squared log error. costmodel.FIT
takes p (Fit.overlap), Hopper's eff (Fit.flop_eff, the H100's and H200's mean) and the A100's over it (Fit.flop_ampere)
from here; bench/calibrate.py holds them fixed and fits the rest on whole passes (tests/test_published_fit.py checks
that FIT carries what this fit gives). Standard library only:

    python bench/gemm_kernels.py              # a few seconds: the fit, the error by m
    /tmp/aic/bin/python bench/gemm_kernels.py --extract   # rewrite gemm_kernels.json (pip install aiconfigurator==0.12.0)
"""
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/
from rollout.costmodel import overlapped  # noqa: E402

DATA = HERE / "gemm_kernels.json"
# Each GPU of the database: its datasheet bandwidth (TB/s) and dense bf16 TFLOP/s (catalog.GPUS) and its family.
GPUS = {"h100_sxm": ("h100-sxm", "hopper"), "h200_sxm": ("h200", "hopper"), "a100_sxm": ("a100-sxm-80gb", "ampere")}
VERSIONS = {"h100_sxm": "0.24.0", "h200_sxm": "0.24.0", "a100_sxm": "0.14.0"}
SHARPNESS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0)   # p tried; 1 adds read and math, 6 is near their max


def extract():
    """bench/gemm_kernels.json from an installed aiconfigurator 0.12.0 (development time only)."""
    import aiconfigurator_core  # noqa: F401  (installed apart: see the docstring)
    import pyarrow.parquet as pq
    root = Path(aiconfigurator_core.__file__).parent / "systems" / "data"
    gpus = {}
    for gpu, version in VERSIONS.items():
        rows = pq.read_table(root / gpu / "gemm" / "vllm" / version / "gemm_perf.parquet").to_pylist()
        rows = [r for r in rows if r["gemm_dtype"] == "bfloat16"
                and r["kernel_source"] in ("torch.nn.functional.linear", "vllm_default")]
        keep = sorted([r["m"], r["n"], r["k"], round(r["latency"], 6)] for r in rows
                      if 2048 <= r["n"] <= 16384 and 2048 <= r["k"] <= 16384
                      and r["m"] in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192))
        gpus[gpu] = dict(version=version, kernel=rows[0]["kernel_source"], device=rows[0]["device"], rows=keep)
    note = ("bf16 GEMM latencies (ms) from NVIDIA aiconfigurator 0.12.0's kernel database (aiconfigurator_core/systems/"
            "data/<gpu>/gemm/vllm/<version>/gemm_perf.parquet, Apache-2.0): rows [m, n, k, latency_ms] for m = 1-8192 "
            "tokens and n, k = 2048-16384, the shapes of LLM layers; extracted by bench/gemm_kernels.py --extract")
    DATA.write_text(json.dumps(dict(note=note, gpus=gpus), separators=(",", ":")))


def load():
    return json.loads(DATA.read_text())["gpus"]


def units(rows, gpu):
    """Each GEMM's weight read and math at full bandwidth and peak (ms), and its measured time's log: what the loss
    reads, computed once per GPU rather than at every trial."""
    from rollout.catalog import GPUS as SPECS
    spec = SPECS[GPUS[gpu][0]]
    return [(2 * n * k / (spec["bandwidth_tbs"] * 1e9), 2 * m * n * k / (spec["bf16"] * 1e9), math.log(t))
            for m, n, k, t in rows]


def predict(unit, bw, eff, floor_us, p):
    """A GEMM's time: its floor, then its read at a share bw of bandwidth and its math at a share eff of peak,
    overlapped (costmodel.overlapped)."""
    read, math_ms, _ = unit
    return floor_us / 1e3 + overlapped(read / bw, math_ms / eff, p)


def loss(unit_rows, values, p):
    """The mean squared log error of predict over the GEMMs, with predict and costmodel.overlapped written out in
    the same arithmetic (the same floats) and statistics.fmean's fsum over a list: the fit calls it for 6,048 GEMMs
    at each of its trials, and the slow tier's test for three sharpnesses."""
    bw, eff, floor_us = values
    floor, root, log, squares = floor_us / 1e3, 1.0 / p, math.log, []
    for read, math_ms, log_time in unit_rows:
        read, math_ms = read / bw, math_ms / eff
        if read and math_ms:
            top = read if read >= math_ms else math_ms
            overlap = top * ((read / top) ** p + (math_ms / top) ** p) ** root
        else:
            overlap = read + math_ms
        squares.append((log(floor + overlap) - log_time) ** 2)
    return math.fsum(squares) / len(squares)


def fit_gpu(rows, gpu, p):
    """(bw, eff, floor_us) for one GPU at sharpness p: a coordinate search, each step halved when none gains."""
    rows = units(rows, gpu)
    best, steps = [0.8, 0.8, 4.0], [0.1, 0.1, 2.0]
    value = loss(rows, best, p)
    for _ in range(40):
        gained = False
        for i in range(3):
            for sign in (1, -1):
                trial = list(best)
                trial[i] = max(0.0, trial[i] + sign * steps[i])
                trial_value = loss(rows, trial, p)
                if trial_value < value - 1e-12:
                    best, value, gained = trial, trial_value, True
        if not gained:
            steps = [s / 2 for s in steps]
    return [round(x, 3) for x in best], value


def fit(data=None):
    """{"p": the sharpness, gpu: (bw, eff, floor_us, rms log error)}: the p with the least summed loss."""
    data = data or load()
    results = {}
    for p in SHARPNESS:
        per = {gpu: fit_gpu(v["rows"], gpu, p) for gpu, v in data.items()}
        results[p] = (sum(value for _, value in per.values()), per)
    p = min(results, key=lambda q: results[q][0])
    return dict(p=p, **{gpu: (*values, math.sqrt(value)) for gpu, (values, value) in results[p][1].items()},
                by_p={q: math.sqrt(total / len(data)) for q, (total, _) in results.items()})


def constants(result):
    """What costmodel.FIT takes from the fit: (overlap, flop_eff, flop_ampere)."""
    hopper = statistics.fmean(result[gpu][1] for gpu in GPUS if GPUS[gpu][1] == "hopper")
    return result["p"], round(hopper, 2), round(result["a100_sxm"][1] / round(hopper, 2), 2)


def main(argv):
    if "--extract" in argv:
        extract()
        return 0
    data = load()
    result = fit(data)
    print(f"{sum(len(v['rows']) for v in data.values())} bf16 GEMMs; time = floor + overlapped(read / bw, math / eff, p)")
    print("rms log error by p: " + ", ".join(f"{p:g}: {e:.3f}" for p, e in result["by_p"].items()))
    print(f"p = {result['p']:g}")
    for gpu in data:
        bw, eff, floor, rms = result[gpu]
        errors = {}
        for r, u in zip(data[gpu]["rows"], units(data[gpu]["rows"], gpu)):
            errors.setdefault(r[0], []).append(predict(u, bw, eff, floor, result["p"]) / r[3] - 1)
        print(f"  {gpu:9s} (vLLM {data[gpu]['version']}): bw {bw:.3f}, eff {eff:.3f}, floor {floor:.1f} us, "
              f"rms log {rms:.3f}")
        print("    median error by m: " + ", ".join(f"{m}: {statistics.median(e) * 100:+.1f}%"
                                                   for m, e in sorted(errors.items())))
    overlap, flop_eff, flop_ampere = constants(result)
    print(f"costmodel.FIT: overlap={overlap:g}, flop_eff={flop_eff:g}, flop_ampere={flop_ampere:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
