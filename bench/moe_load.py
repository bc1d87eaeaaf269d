"""Mixture of experts and MTP at load: InferenceX's DeepSeek-R1-0528 runs (served_runs.json), with and without MTP,
predicted without calibration, each GPU left out in turn.

What is scored (error = predicted / measured - 1, medians of |error|):
  speedup  an MTP run's output throughput over its baseline's: the run without MTP of the same engine, GPUs (count,
           TP, EP, DP attention), weights, lengths and concurrency, the one nearest in date, and only where the two
           ran within PAIR_DAYS of each other (the file's baselines often come from other dates and images; a
           baseline months away measured other software).
  plain    a run without MTP, its output throughput: one run per configuration, the newest (older runs of a
           configuration ran older images; --all-runs scores every one).
Both leave out runs that failed: under FAILED_SHARE of their configuration's median throughput where it ran three
times or more (a few runs of 250 tokens/s beside 1,150).

Each run is simulated as served_load.py simulates it (serving.serve_run at its lengths, 10 C prompts at concurrency
C, the servers as InferenceX's launch scripts start them: served_load.inferencex_server), DP-attention runs as one
scheduler over the replica (the simulation has no per-rank schedulers; costmodel prices their passes per rank).

What is fitted:
  mlp_fixed_share   the share of a layer's fixed cost (Fit.layer_us) its MLP's kernels take, which a MoE layer pays
                    as its fused kernel's own latency (Engine.moe_layer_us) instead: on its grid, at the least mean
                    |log error| of the plain runs' throughputs (a plain step's fixed cost; the speedups are predicted),
                    NVIDIA's on the H200 and B200 runs, AMD's (mlp_fixed_share_cdna: ROCm's fused-MoE kernels, not
                    those the kernel sweeps timed) on the MI300X and MI355X runs; with a GPU left out, its vendor's
                    share comes from the vendor's other GPU
  alpha_<engine>    MTP's per-token acceptance per engine, on ALPHAS (0.6-0.9: DeepSeek's report gives 85-90% for the
                    first drafted token, SGLang's large-scale EP blog an acceptance length of 2.18-2.44 at K >= 2),
                    on the speedups: a nuisance the product never uses, for these files carry no acceptance.
Fit.expert_affinity is held at its published value (costmodel's comment): these runs cannot tell 0 from 0.4.
Tried and left out: TensorRT-LLM's own round and draft fixed costs (fitted within the folds' spread of vLLM's,
which it borrows) and a share of peak for the routed experts' grouped GEMMs (at its grid's edge, 0.25; it moved the
plain median by a point and not the TTFTs it was meant to explain).

Tables: A, the fit without InferenceX (no affinity, both shares 0: leave this source out, though its alphas are
fitted on every pair, in sample); B, in sample; C, each
GPU at the constants and alphas fitted on the other three (leave one GPU out), whose rows (MTP speedups, and the
plain runs' mean TPOTs) go to moe_held_out.json for bench/intervals.py. SpecBundle's MoE runs (SGLang EAGLE-3 at batch
8 on H200, calibrate.load_specbundle) are predicted beside them, never fitted.

    python bench/moe_load.py > bench/moe_load.txt   # A, B, C and moe_held_out.json (about two minutes on 2 cores)
    python bench/moe_load.py --all-runs             # the plain runs: every run, not the newest of each configuration
"""
import collections
import dataclasses
import json
import math
import statistics
import sys
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))
sys.path.insert(0, str(HERE))

from rollout import acceptance, costmodel, serving, trust  # noqa: E402
import calibrate  # noqa: E402
import served_load  # noqa: E402

FAILED_SHARE = 0.5
PAIR_DAYS = 31
ALPHAS = tuple(round(0.6 + 0.025 * i, 3) for i in range(13))
SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
GRID = dict(mlp_fixed_share=SHARES, mlp_fixed_share_cdna=SHARES, alpha_sglang=ALPHAS, alpha_trtllm=ALPHAS)
FITTED = tuple(name for name in GRID if not name.startswith("alpha"))
FAMILY = {"h200": "hopper", "b200": "blackwell", "mi300x": "cdna3", "mi355x": "cdna4"}


@dataclasses.dataclass
class Run:
    point: dict
    engine: str
    gpu: str          # catalog key
    setup: str        # the point's GPU string: count, TP, EP, DP attention
    dtype: str
    k: int
    dep: object
    work: object
    throughput: float
    tpot_ms: float

    @property
    def config(self):
        p = self.point
        return (self.engine, self.setup, self.dtype, p["input_tokens"], p["output_tokens"], p["concurrency"])

    @property
    def day(self):
        y, m, d = (int(x) for x in self.point["date"].split("-"))
        return y * 372 + m * 31 + d


def runs():
    """Every InferenceX run on SGLang or TensorRT-LLM whose weights fit, as the model sees it
    (served_load.inferencex_runs), DP attention included."""
    return [Run(p, engine, dep.gpu, p["gpu"], dtype, p["K"], dep, work, p["metrics"]["output_throughput"],
                p["metrics"].get("mean_tpot_ms") or p["metrics"].get("median_tpot_ms") or 0.0)
            for p, engine, dtype, dep, work in served_load.inferencex_runs()]


def cleaned(all_runs):
    """(kept, failed): a run under FAILED_SHARE of its configuration's median throughput (three runs or more)."""
    by = collections.defaultdict(list)
    for r in all_runs:
        by[(r.config, r.k)].append(r)
    keep, failed = [], []
    for group in by.values():
        mid = statistics.median(r.throughput for r in group)
        for r in group:
            (failed if len(group) >= 3 and r.throughput < FAILED_SHARE * mid else keep).append(r)
    return keep, failed


def pairs(kept):
    """[(MTP run, baseline)]: the baseline of the same configuration nearest in date, within PAIR_DAYS."""
    base = collections.defaultdict(list)
    for r in kept:
        if not r.k:
            base[r.config].append(r)
    out = []
    for r in kept:
        if r.k and base.get(r.config):
            b = min(base[r.config], key=lambda b: (abs(b.day - r.day), b.day))
            if abs(b.day - r.day) <= PAIR_DAYS:
                out.append((r, b))
    return out


def newest(kept):
    """The newest plain run of each configuration."""
    latest = {}
    for r in kept:
        if not r.k and (r.config not in latest or r.day > latest[r.config].day):
            latest[r.config] = r
    return list(latest.values())


RUNS = []   # the runs the workers predict, by index (filled before the pool starts: forked workers inherit it)


MODEL = FITTED + ("expert_affinity",)   # the Fit fields a prediction takes from the parameters


def share_of(run):
    """The Fit field of the MoE layer's fixed share on this run's GPU: AMD's or NVIDIA's (costmodel.moe_share_field)."""
    return costmodel.moe_share_field(run.dep)


def relevant(run, params):
    """The parameters a run's prediction depends on: a plain run's only its GPU's MoE layer fixed share (one token a
    sequence: no affinity)."""
    if not run.k:
        return (params[share_of(run)],)
    return tuple(params[name] for name in MODEL) + (params["alpha_" + run.engine],)


def predict_one(job):
    index, key = job
    run = RUNS[index]
    fit = costmodel.FIT._replace(**dict(zip(MODEL, key[:len(MODEL)]))) if run.k else \
        costmodel.FIT._replace(**{share_of(run): key[0]})
    alpha = key[-1] if run.k else 0.0
    served = serving.serve_run(run.dep, run.work, run.k, alpha, 0.05, 0, fit, run.work.max_concurrency)
    result = serving.bench_result(served, run.work, run.dep)
    return result["output_throughput"], result["mean_tpot_ms"]


class Predictor:
    """Output throughputs of RUNS under parameters, each (run, relevant parameters) simulated once; tpot() their
    mean TPOTs, from the same simulations."""

    def __init__(self, pool):
        self.pool, self.memo = pool, {}

    def both(self, indices, params):
        jobs = [(i, relevant(RUNS[i], params)) for i in indices]
        todo = [j for j in dict.fromkeys(jobs) if j not in self.memo]
        for job, value in zip(todo, self.pool.map(predict_one, todo, chunksize=4)):
            self.memo[job] = value
        return [self.memo[j] for j in jobs]

    def __call__(self, indices, params):
        return [throughput for throughput, _ in self.both(indices, params)]

    def tpot(self, indices, params):
        return [tpot for _, tpot in self.both(indices, params)]


def errors(predict, plain, spec_pairs, params):
    """(plain throughput log errors, speedup log errors) of the given runs (indices into RUNS) and pairs."""
    asked = list(plain) + [i for pair in spec_pairs for i in pair]
    got = dict(zip(asked, predict(asked, params)))
    plain_e = [math.log(got[i] / RUNS[i].throughput) for i in plain]
    spec_e = [math.log((got[s] / got[b]) / (RUNS[s].throughput / RUNS[b].throughput)) for s, b in spec_pairs]
    return plain_e, spec_e


def bundle_errors(points, params):
    """SpecBundle's MoE speedups (SGLang EAGLE-3 at batch 8 on H200, calibrate.load_specbundle): log errors."""
    fit = costmodel.FIT._replace(**{name: params[name] for name in MODEL})
    return [math.log(calibrate.predict(p, fit) / p["published"]) for p in points]


def plain_loss(predict, plain, params):
    """The mean |log error| of the plain runs' throughputs."""
    return statistics.fmean(map(abs, errors(predict, plain, [], params)[0]))


def fit_share(predict, plain, params):
    """Each vendor's mlp_fixed_share at the least plain_loss of its own GPUs' plain runs on its grid: it is a plain
    step's fixed cost, so the plain runs' throughputs set it and the speedups are predicted, not fitted. A vendor
    with no run among them takes the other's."""
    params = dict(params)
    for name in ("mlp_fixed_share", "mlp_fixed_share_cdna"):
        mine = [i for i in plain if share_of(RUNS[i]) == name]
        if mine:
            params[name] = min(GRID[name], key=lambda v: plain_loss(predict, mine, dict(params, **{name: v})))
    for name, other in (("mlp_fixed_share", "mlp_fixed_share_cdna"), ("mlp_fixed_share_cdna", "mlp_fixed_share")):
        if not any(share_of(RUNS[i]) == name for i in plain):
            params[name] = params[other]
    return params


def start_params():
    return dict({name: getattr(costmodel.FIT, name) for name in MODEL}, alpha_sglang=0.75, alpha_trtllm=0.75)


def summary(values):
    if not values:
        return f"{'-':>4} {'':>7} {'':>7}"
    return f"{len(values):>4} {statistics.median(map(abs, values)) * 100:6.1f}% {max(map(abs, values)) * 100:6.1f}%"


def table(title, rows, bundle=()):
    """rows: [(run, kind, log error)] by engine, GPU family and all; bundle: SpecBundle's log errors."""
    print(title)
    print(f"   {'':<26}{'speedups: n, median, worst':<30}{'plain throughput: n, median, worst'}")
    keys = collections.defaultdict(lambda: ([], []))
    for run, kind, e in rows:
        for key in (f"engine {run.engine}", f"GPU {FAMILY[run.gpu]} ({run.gpu})",
                    f"{run.engine} on {run.gpu}", "all"):
            keys[key][kind == "plain"].append(math.expm1(e))
    for key in sorted(keys, key=lambda k: (k == "all", k)):
        spec, plain = keys[key]
        print(f"   {key:<26}{summary(spec):<30}{summary(plain)}")
    if bundle:
        print(f"   {'SpecBundle MoE (h200)':<26}{summary([math.expm1(e) for e in bundle])}")
    print()


def scored(predict, plain, spec, bundle, params):
    plain_e, spec_e = errors(predict, plain, spec, params)
    return ([(RUNS[i], "plain", e) for i, e in zip(plain, plain_e)]
            + [(RUNS[s], "spec", e) for (s, _), e in zip(spec, spec_e)]), bundle_errors(bundle, params)


def nuisance(predict, spec, params):
    """params with each engine's alpha fitted on the given pairs alone (the model's constants as they are)."""
    params = dict(params)
    for engine in ("sglang", "trtllm"):
        mine = [p for p in spec if RUNS[p[0]].engine == engine]
        if mine:
            params["alpha_" + engine] = min(ALPHAS, key=lambda a: statistics.fmean(map(abs, errors(
                predict, [], mine, dict(params, **{"alpha_" + engine: a}))[1])))
    return params


OUT = HERE / "moe_held_out.json"
ROWS_NOTE = ("InferenceX's DeepSeek-R1 runs, each GPU predicted at the constants fitted on the others (bench/moe_load.py, "
             "table C): an MTP run's speedup over its baseline (the nuisance alpha fitted on the other GPUs' pairs) and a "
             "plain run's mean TPOT, with trust.error_class's keys; the source is the GPU left out.")


def interval_row(run, what, log_error):
    """A held-out row as bench/intervals.py writes them (trust.error_table's keys)."""
    return dict(source=f"InferenceX {run.gpu}", point=f"{run.setup} {run.dtype} {run.point['input_tokens']}/"
                f"{run.point['output_tokens']} C {run.point['concurrency']} {run.point['date']}",
                how="leave one GPU out (bench/moe_load.py)", era=f"{run.dep.engine.key} {run.dep.era.key}",
                **trust.error_class(what, run.dep), log_error=round(log_error, 6))


def described(params):
    return ", ".join(f"{k} {v:g}" for k, v in params.items())


def main():
    global RUNS
    kept, failed = cleaned(runs())
    spec_pairs = pairs(kept)
    plain_runs = kept if "--all-runs" in sys.argv else newest(kept)
    RUNS = list(kept)
    index = {id(r): i for i, r in enumerate(RUNS)}
    plain = [index[id(r)] for r in plain_runs if not r.k]
    spec = [(index[id(s)], index[id(b)]) for s, b in spec_pairs]
    bundle = [p for p in calibrate.load_specbundle() if p["dep"].target.experts]
    print(f"# python bench/moe_load.py{' --all-runs' if '--all-runs' in sys.argv else ''}")
    print(f"{len(kept)} InferenceX runs ({len(failed)} failed runs left out), {len(plain)} plain runs scored, "
          f"{len(spec)} MTP runs paired with a baseline within {PAIR_DAYS} days; {len(bundle)} SpecBundle MoE points\n")
    with Pool(2) as pool:
        predict = Predictor(pool)
        before = nuisance(predict, spec, dict(start_params(), mlp_fixed_share=0.0, mlp_fixed_share_cdna=0.0,
                                              expert_affinity=0.0))
        rows, bundle_e = scored(predict, plain, spec, bundle, before)
        table("A. Before (the fit without InferenceX: no expert affinity, both fixed shares 0), alpha fitted per "
              "engine on these pairs (" + described({k: v for k, v in before.items() if k.startswith("alpha")})
              + ")", rows, bundle_e)
        everything = nuisance(predict, spec, fit_share(predict, plain, start_params()))
        rows, bundle_e = scored(predict, plain, spec, bundle, everything)
        table(f"B. Each vendor's mlp_fixed_share fitted on its GPUs' plain runs, alpha on every pair (in sample): "
              f"{described(everything)}", rows, bundle_e)
        rows, held_out, tpots = [], [], collections.defaultdict(list)
        for gpu in FAMILY:
            train_plain = [i for i in plain if RUNS[i].gpu != gpu]
            train_spec = [p for p in spec if RUNS[p[0]].gpu != gpu]
            params = nuisance(predict, train_spec, fit_share(predict, train_plain, start_params()))
            print(f"without {gpu}: {described(params)}", flush=True)
            test_plain = [i for i in plain if RUNS[i].gpu == gpu]
            test_spec = [p for p in spec if RUNS[p[0]].gpu == gpu]
            more, _ = scored(predict, test_plain, test_spec, [], params)
            rows += more
            timed = [i for i in test_plain if RUNS[i].tpot_ms]
            for i, t in zip(timed, predict.tpot(timed, params)):
                held_out.append(interval_row(RUNS[i], "tpot", math.log(t / RUNS[i].tpot_ms)))
                tpots[f"GPU {FAMILY[gpu]} ({gpu})"].append(t / RUNS[i].tpot_ms - 1)
            held_out += [interval_row(RUNS[s], "speedup", e) for (s, _), e in zip(test_spec, errors(
                predict, [], test_spec, params)[1])]
        print()
        table("C. Each GPU at the constants and alphas fitted on the others (leave one GPU out)", rows)
        print("   the same plain runs' mean TPOT (n, median, worst)")
        for key in sorted(tpots):
            print(f"   {key:<26}{summary(tpots[key])}")
        print()
        print("Rounds at concurrency 4, K = 3 (TensorRT-LLM, 8 x B200): the most a round can cost for the measured "
              "speedup at alpha 0.9, against the model's, each over a plain step")
        for s, b in spec:
            run = RUNS[s]
            if (run.engine, run.gpu, run.dep.tp, run.point["concurrency"], run.k) == ("trtllm", "b200", 8, 4, 3):
                measured = run.throughput / RUNS[b].throughput
                model = costmodel.round_ms(run.dep, 4, 3) / costmodel.decode_step_ms(run.dep, 4)
                print(f"   {run.setup} {run.dtype} {run.point['input_tokens']}/{run.point['output_tokens']}: measured "
                      f"{measured:.2f}x, at most {acceptance.acceptance_length(0.9, 3) / measured:.2f}; model {model:.2f}")
        print()
        if "--all-runs" not in sys.argv:
            OUT.write_text(json.dumps(dict(note=ROWS_NOTE, rows=held_out), indent=1) + "\n")
            print(f"wrote {OUT.name}: {len(held_out)} held-out rows (bench/intervals.py adds them to trust.MODEL_ERROR)")


if __name__ == "__main__":
    main()
