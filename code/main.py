"""EAGLE-3 rollout simulator: should speculative decoding be on for this deployment?

The lesson's toy decode loop, done right. For a grid of per-token acceptance alpha, draft
length K, verify overhead eps and concurrency B it prints the verdict first (turn it on or
not, at which K by batch size, the gain with its 80% range), then the lesson walked once on
the deployment, the lesson's speedup (1 + K*alpha)/(1 + eps) beside the exact tau/(1 + eps),
the break-even alpha both ways, the best K per batch size, and what `vllm bench serve` would
measure (throughput, P99 TPOT, ITL) from simulated requests whose alphas spread around the
mean, with eps from a cost model of the deployment calibrated on published measurements. It
reads vLLM's /metrics and `vllm bench serve` results to measure acceptance and gate the
rollout, and writes a staged plan with charts to outputs/.

    $ python code/main.py                                  # default grid and deployment
    $ python code/main.py --model llama-3.1-8b --tp 1 --weights-dtype bf16 --ks 3 --no-write
    $ python code/main.py --metrics after.prom --metrics-before before.prom --gate
    $ python code/main.py --exercises                      # the lesson's five exercises, answered
    $ python code/main.py --engine sglang                  # the plan's commands for SGLang (or trtllm)
    $ python code/main.py --predict-bench runs/            # (an existing folder) the files each run should write
    $ python code/main.py --compare base.json,spec.json    # measured files, key by key against their prediction
    $ python code/main.py --slo ttft:2000,tpot:50          # the most each GPU serves within an SLO, off and on

This file is the lesson: the constants to edit, the lesson's formulas and toy loop, the loop over
the grid, and main(). A run is four stages over three records (rollout/report.py): parse the
command line into Inputs (rollout/cli.py), decide everything into a Report (rollout/decide.py, with
the grid loop below), render its text and files into an Output (rollout/render/), write them
(rollout/writes.py). The package's modules are listed bottom to top in rollout/__init__.py.

Start here: the things a reader of the lesson looks for, and where they are.

    1. tau and the three meanings of alpha     tau (here); acceptance_length, acceptance_rate,
                                               alpha_from_rate (rollout/acceptance.py)
    2. the lesson's speedup and the exact one  lesson_speedup, exact_speedup (here; the package's twins
                                               in rollout/acceptance.py)
    3. the break-even, in both units           breakeven_rate, breakeven_alpha (here); exact_breakeven
    4. one round: draft, verify, accept        toy_decode (here); decode_request (rollout/acceptance.py)
    5. the P99 tail, and the two-pass model    tails (here); cell_latency, itl_parts (rollout/simulation.py);
                                               at load, with prefills stalling decodes: serve_run
                                               (rollout/serving.py); at an SLO: at_slo (rollout/goodput.py)
    6. what a round costs: eps                 round_ms, eps_decode, eps_seen (rollout/costmodel.py)
    7. every cell of the grid                  grid_cells (here), then evaluate_cell (rollout/cells.py)
    8. the verdict, the gate and the plan      best_k (rollout/bestk.py); plan_choices, gate, verdict
                                               (rollout/analysis.py); decide (rollout/decide.py);
                                               render_verdict (rollout/render/words.py), render_plan
                                               (rollout/render/plan.py)

Sources: Leviathan et al. 2023, arXiv 2211.17192 (tau, speedup); MagicDec, arXiv
2408.11049 (round cost at batch); EAGLE-3, arXiv 2503.01840 (the draft head); vLLM's
speculative-decoding docs, vllm/config/speculative.py and its spec-decode metrics; SGLang's
server_args.py; TensorRT-LLM's llm_args.py and trtllm-serve.
"""
from __future__ import annotations

import dataclasses
import os
import random
import signal
import sys

if __name__ == "__main__":   # Ctrl-C or SIGTERM while the package loads (a third of a second): nothing is written yet
    def _stopped(signum, frame):
        os.write(2, b"main.py: error: interrupted; nothing was written\n")
        os._exit(2)
    for _name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGUSR1", "SIGUSR2"):   # writes.STOP_SIGNALS
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _stopped)
    if os.path.dirname(os.path.abspath(__file__)) not in sys.path:   # python -I, PYTHONSAFEPATH: the package is here
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pathlib import Path

from rollout.report import BreakEven, GridCells
from rollout.acceptance import breakeven_rate as rate_breakeven, exact_breakeven, JITTER_MU, ROUND_JITTER
from rollout.deployment import max_concurrency
from rollout.costmodel import eps_decode, eps_grown, FIT, plain_step_ms
from rollout.cells import Cell, evaluate_cell, per_token_alpha
from rollout.decide import decide
from rollout.render import render
from rollout.writes import finish
from rollout.cli import parse
from rollout.flags import DeploymentSettings, progress_meter, Settings


# ---------------------------------------------------------------- the grid (edit me)
ALPHAS = (0.30, 0.40, 0.50, 0.60, 0.70, 0.80)  # per-token acceptance probability a
KS = (3, 5)                                     # draft length K: tokens drafted per round
VERIFY_OVERHEADS = (0.10, "auto")               # eps at B=1, fraction of a plain step; "auto": from the cost model
CONCURRENCIES = (1, 32, 128, 256)               # decode batch size B: sequences decoding together
TARGET_CONCURRENCY = None   # the plan's batch, the one B the verdict, the plan and the gate answer at; None: a
                            # --bench-spec run's max_concurrency, else the grid's largest (the most that fit, if fewer)
EXPECTED_ALPHA = None   # per-token alpha the plan assumes until measured; None: the published acceptance of the
                        # head (or its target, family, kind) in each domain of TRAFFIC_MIX (rollout/priors.py)
GATE_MARGIN = 0.10      # acceptance-rate margin the gate demands above break-even
P99_BUDGET = 0.10       # largest rise of P99 TPOT over baseline the gate accepts (with benchmark files)
TRAFFIC_MIX = (("chat", 0.70), ("code", 0.30))   # (domain, share of generated tokens[, per-token alpha[, mean output
                        # tokens]]): the lesson's shares; an alpha left out is the published one for the head in that
                        # domain (chat, code, math, reasoning, other); tokens default OUTPUT_TOKENS
CHART_ALPHAS = (0.5, 0.7, 0.8)   # per-token alphas of the best-K chart
ALPHA_SPREAD = 0.11     # s.d. of a request's per-token alpha around the mean: per head, alpha's s.d. across
                        # SpecBundle's 7 datasets is 0.07-0.17, median 0.11 (bench/specbundle_h200_bs8.json, K=3)
OUTPUT_SPREAD = 0.8     # s.d. of ln(output tokens) over requests: an assumption, set it from your traffic
                        # (0: every request OUTPUT_TOKENS long, as `vllm bench serve --dataset-name random` makes them:
                        # its --random-range-ratio defaults to 0.0, benchmarks/benchmark_serving.py, now vllm/benchmarks)
INPUT_SPREAD = 0.8      # s.d. of ln(prompt tokens) over requests in the plan's ShareGPT runs and the SLO's search: an
                        # assumption as OUTPUT_SPREAD is (random prompts, as the calibration runs send them: 0)
SEED = 0                # seeds every simulated request: same seed, same bytes
LESSON_REQUESTS = 50    # the lesson's toy requests (walk_the_lesson): their P99 TPOT, plain, speculative, two-pass
LESSON_TOKENS = 128     # tokens each of them decodes
EXPECTED_FALLBACK = 0.70   # the lesson's mid-range alpha for chat, where the published table has no row of the draft
CHECKOUT = Path(__file__).resolve().parent.parent   # code/main.py in a checkout: outputs/ beside code/
OUT_PATH = (CHECKOUT / "outputs" if (CHECKOUT / "code" / "main.py").is_file() and (CHECKOUT / "outputs").is_dir()
            else Path("outputs")) / "skill-eagle3-rollout.md"   # installed (pip, pipx): ./outputs/ where it runs
CALIBRATION_FILES = ()  # your `vllm bench serve` result files to fit the cost model on (--calibrate; stage 0/1 of the plan)

# ---------------------------------------------------------------- the deployment (edit me)
MODEL = "llama-3.3-70b"        # catalog name of the target model
GPU = "h100-sxm"               # catalog name of the GPU
MODEL_SETTINGS = {             # a model's own TP (GPUs per replica), weights and KV cache dtypes ("bf16", "fp8", or
                               # "fp4" for weights: MXFP4, as gpt-oss ships its experts) on one GPU. A (model, GPU)
                               # without a row, or a setting its row leaves out, is derived for it (rollout/sizing.py):
                               # the dtype its checkpoint ships in, a bf16 KV cache, the smallest TP that holds the batch
    ("llama-3.3-70b", "h100-sxm"): dict(tp=4, weights_dtype="fp8", kv_dtype="bf16"),   # the example: fp8 on 4 x H100
}
EP = 1                         # expert-parallel GPUs of a MoE target: 1 (experts split by TP) or TP (whole experts
                               # per GPU; vLLM --enable-expert-parallel, SGLang --ep-size, TensorRT-LLM --ep_size)
DP_ATTENTION = False           # with EP: attention data parallel, each GPU its own share of the sequences and a
                               # whole copy of the weights that are not routed experts (--dp-attention)
INPUT_TOKENS = 1024            # mean prompt length of the traffic, tokens
OUTPUT_TOKENS = 1024           # mean generated length, tokens: 1k in / 1k out, a common serving-benchmark shape
CONTEXT = None                 # mean decode context, tokens; None: INPUT_TOKENS + OUTPUT_TOKENS / 2
DRAFT = "eagle3"               # "eagle3", "eagle", "mtp", "ngram", or a catalog model as a draft model ("model" with
                               # --draft-config: any draft model)
DRAFT_MODEL = None             # Hugging Face id of the draft head or model; None: the catalog's for this engine
ENGINE = "vllm"                # engine the plan is written for: "vllm", "sglang" or "trtllm" (rollout.catalog.ENGINES)
ENGINE_VERSION = None          # ENGINE's release, e.g. "0.13" (numbering per engine): its commands and era; None: newest
TEMPERATURE = 0.7              # sampling temperature of the plan's benchmark runs: use your traffic's own
SLO = "ttft:2000,tpot:50"      # the service level you serve at: a bound in ms on the P99 of each of TTFT, TPOT and
                               # E2EL it names (vllm bench serve's --goodput keys); "none": no SLO. An example: set yours
NUM_PROMPTS = 1000             # requests of each open-loop run at the SLO: vllm bench serve's default --num-prompts
BURSTINESS = 1.0               # the gamma shape of the gaps between its requests: 1, Poisson arrivals


# ---------------------------------------------------------------- the lesson, walked once on this deployment
# A chain of K drafts is kept token by token with probability alpha (the per-token alpha) until the first rejection.
# A round of one draft pass and one verify pass emits tau tokens: the kept drafts and the one the target samples
# after them. It costs 1 + eps plain steps, so speculation runs tau / (1 + eps) times as fast. The lesson writes
# tau = 1 + K*alpha, which is exact only when alpha is vLLM's acceptance rate r = (tau - 1) / K, not the chance a
# drafted token is kept. The package's versions (rollout/acceptance.py, rollout/simulation.py) are tested equal to
# these (tests/test_lesson.py); the grid below uses them.

def tau(alpha, k):
    """Tokens a round emits: 1 + alpha + alpha^2 + ... + alpha^K (P(at least j kept) = alpha^j)."""
    return sum(alpha ** j for j in range(k + 1))


def lesson_speedup(alpha, k, eps):
    """The lesson's speedup, (1 + K*alpha) / (1 + eps): exact for the acceptance rate, not the per-token alpha."""
    return (1 + k * alpha) / (1 + eps)


def exact_speedup(alpha, k, eps):
    """tau / (1 + eps): tokens a round emits over what a round costs in plain steps."""
    return tau(alpha, k) / (1 + eps)


def breakeven_rate(k, eps):
    """The acceptance rate below which speculation is slower: 1 + K*r = 1 + eps, so r = eps / K."""
    return eps / k


def breakeven_alpha(k, eps):
    """The per-token alpha below which speculation is slower: tau(alpha, K) = 1 + eps, by bisection (None: none)."""
    if tau(1.0, k) <= 1 + eps:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if tau(middle, k) < 1 + eps else (low, middle)
    return (low + high) / 2


def toy_decode(alpha, k, tokens, rng):
    """One request decoded round by round: (drafts kept each round, time in rounds). Each round is one draft of K
    tokens and one verify pass (a round's time, with a lognormal jitter of 3%); the target keeps the drafts one by
    one with probability alpha until the first rejection, and emits the kept ones and one of its own."""
    kept, time, emitted = [], 0.0, 0
    while emitted < tokens:
        time += rng.lognormvariate(JITTER_MU, ROUND_JITTER)
        accepted = 0
        while accepted < k and rng.random() < alpha:
            accepted += 1
        kept.append(accepted)
        emitted += accepted + 1
    return kept, time


def p99(values):
    """The 99th percentile as numpy and vllm bench take it: linear between the two nearest ranks."""
    values = sorted(values)
    at = 0.99 * (len(values) - 1)
    low = int(at)
    return values[low] + (at - low) * (values[min(low + 1, len(values) - 1)] - values[low])


def tails(alpha, k, eps, plain_ms, rng, requests=LESSON_REQUESTS, tokens=LESSON_TOKENS):
    """P99 TPOT over toy requests, ms: plain decoding (a plain step a token), speculation (a round of 1 + eps plain
    steps a round), and the lesson's two-pass model (a round with a rejection pays one more plain step)."""
    plain, spec, two_pass = [], [], []
    for _ in range(requests):
        kept, time = toy_decode(alpha, k, tokens, rng)
        rejected = sum(accepted < k for accepted in kept)
        spec.append(time * (1 + eps) * plain_ms / tokens)
        two_pass.append((time * (1 + eps) + rejected) * plain_ms / tokens)
        plain.append(sum(rng.lognormvariate(JITTER_MU, ROUND_JITTER) for _ in range(tokens)) * plain_ms / tokens)
    return p99(plain), p99(spec), p99(two_pass)


def walk_the_lesson(dep, alpha, k, seed):
    """The lesson's formulas, the toy loop and the two-pass tail on this deployment at B = 1 (eps from the cost
    model): the few lines the run prints before the grid."""
    eps, plain_ms = eps_decode(dep, 1, k, FIT), plain_step_ms(dep, 1, FIT)
    tail = tails(alpha, k, eps, plain_ms, random.Random(seed))
    rounds = [len(toy_decode(alpha, k, LESSON_TOKENS, random.Random(seed + i))[0]) for i in range(LESSON_REQUESTS)]
    gate = breakeven_alpha(k, eps)
    return [f"== The lesson on {dep.model}, one request at a time: per-token alpha {alpha:.2f}, K = {k}, "
            f"eps {eps:.3f} ==",
            f"tau = 1 + a + ... + a^K = {tau(alpha, k):.3f} tokens a round (the lesson's 1 + K*a: {1 + k * alpha:.3f}); "
            f"the toy loop: {LESSON_REQUESTS * LESSON_TOKENS / sum(rounds):.3f}",
            f"speedup: (1 + K*a)/(1 + eps) = {lesson_speedup(alpha, k, eps):.2f}x, "
            f"exact tau/(1 + eps) = {exact_speedup(alpha, k, eps):.2f}x",
            f"break-even: rate r = eps/K = {breakeven_rate(k, eps):.3f}, per-token alpha "
            + (f"{gate:.3f}" if gate is not None else "none below 1"),
            f"P99 TPOT over {LESSON_REQUESTS} requests of {LESSON_TOKENS} tokens: plain {tail[0]:.2f} ms, speculative "
            f"{tail[1]:.2f} ms, two-pass {tail[2]:.2f} ms", ""]


# ---------------------------------------------------------------- every cell of the grid
def grid_cells(grid, dep, decode, fit, progress=None):
    """Every cell of the grid, (alpha, K, eps at B=1, B), and the break-even at each (K, eps, B): a GridCells.

    decode: the simulated requests of each (alpha, K), shared with the plan so that every part sees the same ones;
    progress, if given, is called with (pairs simulated, pairs) as each (alpha, K) is simulated.
    """
    pairs = [(per_token_alpha(grid.kind, value, k), k) for k in grid.ks for value in grid.acceptance]
    for done, (alpha, k) in enumerate(pairs, 1):
        decode(alpha, k)
        if progress:
            progress(done, len(pairs))
    batch_limit = max_concurrency(dep)
    cells, breakeven = [], []
    for k in grid.ks:
        for eps_b1 in grid.overheads:
            for batch in grid.concurrencies:
                feasible = batch <= batch_limit
                eps = eps_grown(eps_b1, dep, batch, k, fit)
                breakeven.append(BreakEven(k=k, verify_overhead=eps_b1, concurrency=batch, feasible=feasible,
                                           eps_eff=eps, lesson=rate_breakeven(k, eps), exact=exact_breakeven(k, eps)))
                for value in grid.acceptance:
                    alpha = per_token_alpha(grid.kind, value, k)
                    # An infeasible cell keeps its coordinates but shows no number: it cannot run.
                    cells.append(evaluate_cell(alpha, k, eps, batch, dep, decode(alpha, k), fit, eps_b1) if feasible
                                 else Cell(alpha=alpha, k=k, verify_overhead=eps_b1, concurrency=batch, feasible=False))
    return GridCells(cells=cells, breakeven=breakeven,
                     eps_b1={(k, e): eps_grown(e, dep, 1, k, fit) for k in grid.ks for e in grid.overheads})


# ---------------------------------------------------------------- main
def settings():
    """What a run falls back on where no flag is given: every constant above, by its name in lower case (the
    deployment's kept apart), as nanoGPT's config_keys collects its globals."""
    def constants(record):
        return {f.name: globals()[f.name.upper()] for f in dataclasses.fields(record) if f.name != "deployment"}
    return Settings(deployment=DeploymentSettings(**constants(DeploymentSettings)), **constants(Settings))


SETTINGS = settings()


def stages(argv):
    """parse, the grid (grid_cells, handed to decide), decide, the lesson's lines, render: the run's Output."""
    inputs = parse(argv, SETTINGS)
    report = decide(inputs, grid_cells, FIT, progress_meter(inputs.grid, sys.stderr))
    if not (inputs.as_json or inputs.exercises):
        k = inputs.grid.ks[0]
        report = dataclasses.replace(report, lesson=walk_the_lesson(inputs.dep, report.plan.alpha, k,
                                                                    inputs.traffic.seed))
    return render(report)


def main(argv=None):
    """Run the grid, print tables (or JSON), write the rollout plan. Returns the exit status: 2 for bad input, a
    failed write or a signal, with one line on stderr that says what is on disk; with --gate, 0 if the gate passes
    and 1 if it fails (1 means nothing else). The writing, the signals and the streams: rollout/writes.py."""
    return finish(stages, sys.argv[1:] if argv is None else argv, whole_process=argv is None)


if __name__ == "__main__":
    sys.exit(main())
