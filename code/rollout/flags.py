"""The command line's flags and their syntax: the parser (build_parser, its defaults main.py's constants through
Settings), each value's form and range (parse_one, parse_list, parse_grid, parse_slo, parse_mix), the lists of
files, and the progress meter. What the flags mean together, and the files they name, are cli's."""
from __future__ import annotations

from .workload import SLO_KEYS, Traffic
from .records import (
    CONCURRENCY_LIMIT, EPS_LIMIT, GRID_CELL_LIMIT, GRID_PAIR_LIMIT, GRID_WORK_LIMIT, K_LIMIT, shown, TOKENS_LIMIT,
    UNPRINTABLE, UsageError,
)
from .priors import DOMAINS
from .catalog import DRAFTS, ENGINES, GPUS, MODELS
from .report import Evidence, Grid
from .sizing import NODE_GPUS
from .deployment import make_deployment
from pathlib import Path
from .acceptance import profile_from_lengths, SWEEP_SLACK
import argparse
import math
import os
import re
import unicodedata
from dataclasses import dataclass, fields, replace
from .benchfiles import distinct_files
from .writes import emit


class _Parser(argparse.ArgumentParser):
    def __init__(self, **kw):
        super().__init__(**kw)
        # A value that looks like a negative number (-1e5, -0.5, -inf) is the flag's value, refused or not by
        # the flag's own check, never read as an unknown flag (argparse's own pattern misses exponents).
        self._negative_number_matcher = re.compile(r"^-(?:\d|\.\d|inf|nan)", re.IGNORECASE)

    def error(self, message):
        raise UsageError(message)

    def print_help(self, file=None):   # --help: on a full or closed standard output, exit 2, not argparse's 0
        if not emit(self.format_help()):
            raise UsageError("cannot write the help to standard output")


def ascii_number(text):
    """text, if written with ASCII digits and no underscores (int() and float() take "１２" and "1_000" too)."""
    if not text.isascii() or "_" in text:
        raise ValueError(text)
    return text


def parse_list(flag, text, convert, allowed, check, unique=True):
    """Parse a comma list, converting each item and checking it against `check`; unique: no value twice (a grid's
    would be computed and listed twice)."""
    items = [s.strip() for s in text.split(",")]
    if not text.strip() or any(s == "" for s in items):
        raise UsageError(f"{flag}: expected a comma list of {allowed}; got {shown(text)}")
    values = []
    for s in items:
        try:
            value = convert(ascii_number(s))
        except ValueError:
            raise UsageError(f"{flag}: each value must be {allowed}; got {shown(s)}") from None
        if not check(value):
            raise UsageError(f"{flag}: each value must be {allowed}; got {shown(s)}")
        if unique and value in values:
            raise UsageError(f"{flag}: {shown(s)} is given twice; give each value once")
        values.append(value)
    return tuple(values)


def parse_one(flag, text, convert, allowed, check=lambda value: True):
    """One value, converted and checked; else UsageError naming the flag, what it allows and what it got."""
    try:
        value = convert(ascii_number(text))
    except ValueError:
        value = None
    if value is None or not check(value):
        raise UsageError(f"{flag}: expected one value, {allowed}; got {shown(text)}")
    return value


def _finite(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _overhead(text):
    return "auto" if text == "auto" else _finite(text)


def _choice(flag, value, valid, extra=""):
    if value not in valid:
        raise UsageError(f"{flag}: unknown {value!r}; valid: {', '.join(valid)}{extra}")
    return value


DESCRIPTION = "EAGLE-3 rollout simulator: should speculative decoding be on for this deployment?"   # --help's first line


def build_parser(settings):
    p = _Parser(prog="main.py", description=DESCRIPTION, allow_abbrev=False)   # --predict is not --predict-bench
    grid = p.add_argument_group("grid (defaults: the constants at the top of main.py)")
    grid.add_argument("--alphas", help="per-token acceptance alphas, comma list in [0, 1]")
    grid.add_argument("--acceptance-rates", help="vLLM acceptance rates (accepted/drafted), comma list in [0, 1]")
    grid.add_argument("--acceptance-length", help="measured tau at the single K given by --ks, in [1, K+1]; or one "
                                                  "for each K of --ks 1,...,n (a sweep)")
    grid.add_argument("--ks", help=f"draft lengths K, comma list of integers 1-{K_LIMIT}")
    grid.add_argument("--verify-overheads", help='eps at B=1, comma list of numbers >= 0 or "auto"')
    grid.add_argument("--concurrency", help="batch sizes B, comma list of integers >= 1")
    dep = p.add_argument_group("deployment")
    dep.add_argument("--model", help=f"target model: {', '.join(MODELS)}")
    dep.add_argument("--gpu", help=f"GPU: {', '.join(GPUS)}, or custom (with the three numbers below)")
    dep.add_argument("--tp", help="tensor-parallel degree (default: the model's row of MODEL_SETTINGS in main.py, "
                                  f"else the smallest of at most {NODE_GPUS} that holds the plan's batch)")
    dep.add_argument("--ep", help="expert-parallel GPUs of a MoE target: 1 (experts split by --tp) or the --tp "
                                  "degree (whole experts per GPU)")
    dep.add_argument("--dp-attention", action="store_true",
                     help="with --ep: attention data parallel, each GPU its own share of the sequences")
    dep.add_argument("--weights-dtype", help="bf16, fp8 or fp4 (sized as MXFP4: 4.25 bits a weight; default: the "
                                             "model's row of MODEL_SETTINGS, else the dtype its checkpoint ships in)")
    dep.add_argument("--kv-dtype", help="bf16 or fp8 (default: the model's row of MODEL_SETTINGS, else bf16)")
    dep.add_argument("--input-tokens", help=f"mean prompt length, tokens (default {settings.deployment.input_tokens})")
    dep.add_argument("--output-tokens", help=f"mean output length, tokens (default {settings.deployment.output_tokens})")
    dep.add_argument("--context", help="mean decode context in tokens (default: input + output / 2)")
    dep.add_argument("--draft", help=f"draft: {', '.join(DRAFTS)}, or a catalog model")
    dep.add_argument("--draft-model", help="Hugging Face id or path of the draft head (default: the catalog's)")
    dep.add_argument("--model-config", help="a Hugging Face config.json to use as the target (instead of --model)")
    dep.add_argument("--draft-config", help="the EAGLE head's own config.json (its width, vocabulary, trained context), "
                                            "or with --draft model a draft model's")
    dep.add_argument("--draft-topk", help="tokens each draft step expands per sequence: 1 a chain, more a tree")
    dep.add_argument("--verify-tokens", help="tokens per sequence in a tree's verify pass (SGLang's "
                                             "--speculative-num-draft-tokens)")
    dep.add_argument("--engine", help=f"engine the plan is written for: {', '.join(ENGINES)} (default {settings.deployment.engine})")
    dep.add_argument("--engine-version", help="the engine's release, e.g. 0.13 or 0.5.10: the commands are written "
                                              "as it takes them, and a round's host costs are its era's (default: "
                                              "the newest release checked, releases.NEWEST)")
    dep.add_argument("--gpu-bandwidth", help="memory bandwidth per GPU, TB/s")
    dep.add_argument("--gpu-tflops", help="dense TFLOP/s per GPU for the weights dtype")
    dep.add_argument("--gpu-memory", help="memory per GPU, GiB")
    meas = p.add_argument_group("measurements and the gate")
    meas.add_argument("--metrics", help="a scrape of vLLM's or SGLang's /metrics (Prometheus text)")
    meas.add_argument("--metrics-before", help="an earlier scrape: measure the window between the two")
    meas.add_argument("--served-model", help="the model_name to measure when a scrape holds several")
    meas.add_argument("--bench-baseline", help="`vllm bench serve --save-result` JSON, speculation off")
    meas.add_argument("--bench-spec", help="the same benchmark with speculation on")
    meas.add_argument("--target-concurrency", help="the plan's batch: the verdict, the plan, the gate and the derived "
                                                   "TP answer at it (default: TARGET_CONCURRENCY in main.py, else "
                                                   "--bench-spec's max_concurrency, else the grid's largest)")
    meas.add_argument("--gate-margin", help=f"acceptance-rate margin over break-even (default {settings.gate_margin})")
    meas.add_argument("--p99-budget", help=f"largest P99 TPOT rise accepted, fraction (default {settings.p99_budget})")
    meas.add_argument("--gate", action="store_true", help="exit 0 if the gate passes, 1 if it fails")
    meas.add_argument("--mix", help="traffic mix name:share[:alpha[:tokens]],... (shares of generated tokens, sum 1; "
                                    "alpha left out: the published one for the head, by domain: chat, code, math, "
                                    "reasoning, other; tokens: the domain's mean output length)")
    meas.add_argument("--calibrate", help="your `vllm bench serve` results, comma list: fit the cost model on them")
    out = p.add_argument_group("output")
    out.add_argument("--exercises", action="store_true", help="print worked answers to the lesson's exercises")
    out.add_argument("--seed", help="seed of the simulated requests (integer)")
    out.add_argument("--alpha-spread", help=f"s.d. of a request's per-token alpha around the mean, in [0, 0.5] "
                                            f"(default {settings.alpha_spread})")
    out.add_argument("--output-spread", help=f"s.d. of ln(output tokens) over requests, in [0, 2] "
                                             f"(default {settings.output_spread})")
    out.add_argument("--input-spread", help=f"s.d. of ln(prompt tokens) over the requests of the plan's ShareGPT runs "
                                            f"and the SLO's search, in [0, 2] (default {settings.input_spread})")
    out.add_argument("--slo", help="the service level to serve at, ttft:MS,tpot:MS[,e2el:MS] (vllm bench serve's "
                                   "--goodput keys, each a bound on its P99; \"none\": no SLO; default "
                                   f"{settings.slo or 'none'})")
    out.add_argument("--out", help="where to write the rollout plan (default outputs/skill-eagle3-rollout.md; - : "
                                   "the plan alone to standard output, without its charts)")
    out.add_argument("--no-write", action="store_true", help="do not write the rollout plan")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    pick = p.add_argument_group("choosing the deployment: the cheapest to serve the traffic within the SLO")
    pick.add_argument("--choose", action="store_true", help="search GPUs, TP and expert layouts, engines and drafts (and "
                      "none) for the cheapest way to serve --request-rate (or --target-concurrency) within --slo; the "
                      "plan is then the chosen deployment's")
    pick.add_argument("--gpus", help="with --choose: the GPUs to search, comma list (default: every GPU with a price "
                                     "in the catalog)")
    pick.add_argument("--engines", help=f"with --choose: the engines to search, comma list (default: {', '.join(ENGINES)})")
    pick.add_argument("--gpu-price", help="with --choose: USD a GPU-hour, NAME=USD,... (default: the catalog's "
                                          "on-demand list prices, catalog.GPU_PRICES)")
    bench = p.add_argument_group("benchmark files: predicted before they are run, and held against the measured")
    bench.add_argument("--predict-bench", metavar="DIR", help="write the `vllm bench serve --save-result` file of "
                       "each run: a baseline and one per --ks at each --concurrency (or --request-rate)")
    bench.add_argument("--num-prompts", help="requests of each open-loop run, the SLO search's and those "
                       f"--predict-bench writes at a --request-rate (default {settings.num_prompts}, as vllm bench "
                       "serve's); of a closed-loop predicted run (default: the plan's, 10 a concurrent slot and at "
                       "least 200)")
    bench.add_argument("--request-rate", help="open loop instead: requests/s, comma list (vllm bench serve's "
                       "--request-rate); with --choose, the one rate to serve")
    bench.add_argument("--burstiness", help="gamma shape of an open loop's gaps, the SLO search's and "
                       f"--predict-bench's (default {settings.burstiness:g}; 1: Poisson)")
    bench.add_argument("--compare", help="measured `vllm bench serve` results, comma list: each key against the "
                       "prediction of its own run")
    return p


def parse_grid(args, settings):
    """The grid flags -> Grid. One acceptance flag at most; a length needs a single K."""
    ks = parse_list("--ks", args.ks, int, f"an integer from 1 to {K_LIMIT}", lambda k: 1 <= k <= K_LIMIT) \
        if args.ks is not None else settings.ks
    given = [f for f, v in (("--alphas", args.alphas), ("--acceptance-rates", args.acceptance_rates),
                            ("--acceptance-length", args.acceptance_length)) if v is not None]
    if len(given) > 1:
        raise UsageError(f"{given[0]} and {given[1]}: give acceptance one way only")
    if args.acceptance_rates is not None:
        kind, values = "rate", parse_list("--acceptance-rates", args.acceptance_rates, _finite,
                                          "a number in [0, 1]", lambda r: 0.0 <= r <= 1.0)
    elif args.acceptance_length is not None and len(ks) > 1:
        kind, values = "profile", (parse_length_sweep(args.acceptance_length, ks),)
    elif args.acceptance_length is not None:
        kind, values = "length", parse_list("--acceptance-length", args.acceptance_length, _finite,
                                            f"a number in [1, {ks[0] + 1}] (1 to K+1)",
                                            lambda t: 1.0 <= t <= ks[0] + 1)
    else:
        kind, values = "alpha", parse_list("--alphas", args.alphas, _finite, "a number in [0, 1]",
                                           lambda a: 0.0 <= a <= 1.0) if args.alphas is not None else settings.alphas
    overheads = parse_list("--verify-overheads", args.verify_overheads, _overhead,
                           f'a number >= 0 and at most {EPS_LIMIT:g}, or "auto"',
                           lambda e: e == "auto" or 0.0 <= e <= EPS_LIMIT) \
        if args.verify_overheads is not None else settings.verify_overheads
    concurrencies = parse_list("--concurrency", args.concurrency, int, f"an integer from 1 to {CONCURRENCY_LIMIT:,}",
                               lambda b: 1 <= b <= CONCURRENCY_LIMIT) \
        if args.concurrency is not None else settings.concurrencies
    pairs = len(set(values)) * len(set(ks))
    if pairs > GRID_PAIR_LIMIT:
        raise UsageError(f"the grid has {pairs:,} (acceptance, K) pairs to simulate ({len(set(values))} acceptance values "
                         f"x {len(set(ks))} Ks), more than {GRID_PAIR_LIMIT}: split it into several runs")
    work = len(set(values)) * sum(1 + (k / 8) ** 2 for k in set(ks))
    if work > GRID_WORK_LIMIT:
        raise UsageError(f"the grid's {pairs:,} (acceptance, K) pairs at K up to {max(ks)} are {work:,.0f} units of "
                         f"simulation (a pair is 1 + (K/8)^2), more than {GRID_WORK_LIMIT}: give fewer acceptance "
                         "values or Ks, or split it into several runs")
    cells = len(values) * len(ks) * len(overheads) * len(concurrencies)
    if cells > GRID_CELL_LIMIT:
        raise UsageError(f"the grid has {cells:,} cells ({len(values)} acceptance values x {len(ks)} Ks x "
                         f"{len(overheads)} overheads x {len(concurrencies)} concurrencies), more than "
                         f"{GRID_CELL_LIMIT:,}: split it into several runs")
    return Grid(acceptance=values, ks=ks, overheads=overheads, concurrencies=concurrencies, kind=kind)


def parse_length_sweep(text, ks):
    """--acceptance-length TAU1,...,TAUn with --ks 1,...,n: acceptance lengths measured at each K -> the conditional
    alphas by position they imply (profile_from_lengths), as a tuple."""
    if "," not in text:
        raise UsageError(f"--acceptance-length: one length is measured at one K, so --ks must name exactly one; got "
                         f"{','.join(map(str, ks))} (or give one length for each K of --ks 1,...,n)")
    if list(ks) != list(range(1, len(ks) + 1)):
        raise UsageError(f"--acceptance-length: one K takes one length; several lengths are a sweep measured at "
                         f"K = 1, 2, ..., n, so --ks must be 1,...,n; got {','.join(map(str, ks))}")
    lengths = parse_list("--acceptance-length", text, _finite, "a number in [1, K+1] for each K",
                         lambda t: 1.0 <= t <= K_LIMIT + 1, unique=False)   # one per K: two Ks may measure alike
    if len(lengths) != len(ks):
        raise UsageError(f"--acceptance-length: a sweep gives one length for each of the {len(ks)} --ks; got "
                         f"{len(lengths)}")
    profile = profile_from_lengths(lengths)
    if profile is None:
        raise UsageError("--acceptance-length: a sweep's length can rise from K to K + 1 by at most its rise from "
                         f"K - 1 to K (give or take {SWEEP_SLACK:g}), and by at most 1 at K = 1 (a position accepts "
                         "only if the one before did); got " + ", ".join(f"{t:g}" for t in lengths))
    return tuple(round(a, 9) for a in profile)


MIX_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,16}", re.ASCII)   # a traffic domain's name, as tables and the plan show it


def parse_mix(text):
    """--mix chat:0.7,code:0.3:0.4[:tokens] -> ((name, share, alpha or None[, output tokens]), ...); shares sum to 1.
    An alpha left out is the published one for the head in that domain (priors.DOMAINS names them)."""
    mix = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            name, share = parts[0], float(ascii_number(parts[1]))
            alpha = float(ascii_number(parts[2])) if len(parts) > 2 else None
            tokens = int(ascii_number(parts[3])) if len(parts) == 4 else None
        except (IndexError, ValueError):
            raise UsageError(f"--mix: each item must be name:share, name:share:alpha or name:share:alpha:tokens; "
                             f"got {item!r}") from None
        if len(parts) not in (2, 3, 4) or not MIX_NAME.fullmatch(name) or not 0.0 < share <= 1.0 \
                or (alpha is not None and not 0.0 <= alpha <= 1.0) \
                or (tokens is not None and not 2 <= tokens <= TOKENS_LIMIT):
            raise UsageError(f"--mix: each item needs a name (up to 16 letters, digits and . _ + -), a share in "
                             f"(0, 1], optionally an alpha in [0, 1] and then a mean output length of 2 to "
                             f"{TOKENS_LIMIT:,} tokens; got {item!r}")
        if alpha is None and name not in DOMAINS:
            raise UsageError(f"--mix: {name!r} takes its alpha from the published acceptance, which is by domain: name "
                             f"one of {', '.join(DOMAINS)}, or give its alpha (name:share:alpha); got {item!r}")
        mix.append((name, share, alpha) if tokens is None else (name, share, alpha, tokens))
    if len({row[0] for row in mix}) != len(mix):
        raise UsageError(f"--mix: domain names must differ; got {text!r}")
    if abs(sum(row[1] for row in mix) - 1.0) > 1e-3:
        raise UsageError(f"--mix: shares must sum to 1; got {sum(row[1] for row in mix):g}")
    return tuple(mix)


def mix_setting(rows):
    """TRAFFIC_MIX's rows as parse_mix gives them: (name, share, alpha or None[, tokens])."""
    return tuple((row[0], row[1], row[2] if len(row) > 2 else None, *row[3:]) for row in rows)


@dataclass(frozen=True)
class DeploymentSettings:
    """main.py's constants for the deployment: the model, GPU, engine and traffic lengths a run falls back on."""
    model: str
    gpu: str
    model_settings: dict
    ep: int
    dp_attention: bool
    input_tokens: int
    output_tokens: int
    context: int
    draft: str
    draft_model: str
    engine: str
    engine_version: str
    temperature: float

    def build(self, model=None, gpu=None, tp=None, **changes):
        """make_deployment on these constants, the example's row of MODEL_SETTINGS (its TP and dtypes) for any
        model, as the reference deployment of tests and bench/: changes are make_deployment's keywords. A run
        derives what the row leaves out instead (cli.parse_deployment)."""
        row = self.model_settings[(self.model, self.gpu)]
        given = dict(weights_dtype=row["weights_dtype"], kv_dtype=row["kv_dtype"], context=self.context,
                     draft=self.draft, engine=self.engine, draft_hf=self.draft_model, input_tokens=self.input_tokens,
                     output_tokens=self.output_tokens, ep=self.ep, dp_attention=self.dp_attention,
                     temperature=self.temperature)
        return make_deployment(model or self.model, gpu or self.gpu, tp or row["tp"], **{**given, **changes})


@dataclass(frozen=True)
class Settings:
    """What a run falls back on where no flag is given: main.py's editable constants, one field each (the
    constant's name in lower case), the deployment's apart (DeploymentSettings)."""
    alphas: tuple
    ks: tuple
    verify_overheads: tuple
    concurrencies: tuple
    expected_alpha: float
    gate_margin: float
    p99_budget: float
    traffic_mix: tuple
    alpha_spread: float
    output_spread: float
    input_spread: float
    seed: int
    out_path: Path
    calibration_files: tuple
    deployment: DeploymentSettings   #: the deployment's constants
    slo: str
    num_prompts: int
    burstiness: float
    target_concurrency: int
    chart_alphas: tuple
    expected_fallback: float

    def traffic(self, **changes):
        """The Traffic these constants draw requests from (slo: as parse_slo reads SLO), with changes."""
        given = dict(seed=self.seed, alpha_spread=self.alpha_spread, output_spread=self.output_spread,
                     input_spread=self.input_spread, slo=parse_slo(self.slo, "SLO in main.py"),
                     num_prompts=self.num_prompts, burstiness=self.burstiness)
        return Traffic(**{**given, **changes})

    def evidence(self, **changes):
        """The Evidence of a run with no measurement and no flag: these constants' mix, margin and budget."""
        given = dict(mix=mix_setting(self.traffic_mix), margin=self.gate_margin, budget=self.p99_budget,
                     expected_alpha=self.expected_alpha)
        return Evidence(**{**given, **changes})

    def edited(self, **constants):
        """These settings with some constants changed, each by its name in lower case, wherever it is kept: as
        editing main.py's constants would (tests and bench/ build theirs from main.SETTINGS this way)."""
        ours = {f.name for f in fields(DeploymentSettings)}
        deployment = replace(self.deployment, **{k: v for k, v in constants.items() if k in ours})
        return replace(self, deployment=deployment, **{k: v for k, v in constants.items() if k not in ours})


SLO_LIMIT_MS = 86_400_000   # a bound of a day: past it a bound bounds nothing a benchmark can run


def parse_slo(text, flag="--slo"):
    """--slo ttft:2000,tpot:50[,e2el:MS] -> (("ttft", 2000.0), ("tpot", 50.0)) in SLO_KEYS' order; "none" or "": ().
    Each key once, each bound a number of ms above 0 (vllm bench serve's --goodput keys and units)."""
    if text is None or text.strip().lower() in ("", "none"):
        return ()
    bounds = {}
    for item in text.split(","):
        key, _, value = item.strip().partition(":")
        try:
            ms = float(ascii_number(value))
        except ValueError:
            ms = math.nan
        if key.strip().lower() not in SLO_KEYS or not 0.0 < ms <= SLO_LIMIT_MS:
            raise UsageError(f"{flag}: each item must be ttft:MS, tpot:MS or e2el:MS with MS a number above 0 and "
                             f"at most {SLO_LIMIT_MS:,}; got {shown(item)}")
        if key.strip().lower() in bounds:
            raise UsageError(f"{flag}: {key.strip().lower()} given twice")
        bounds[key.strip().lower()] = ms
    return tuple((key, bounds[key]) for key in SLO_KEYS if key in bounds)


def file_list(flag, text):
    """A comma list of files, each once however it is spelled (a, ./a, d/../a, a link to a: one file, its first
    spelling kept); a file whose own name holds a comma is refused by name, since the list splits there."""
    if "," in text and os.path.isfile(text):
        raise UsageError(f"{flag}: {shown(text, 200)} is one file whose name holds a comma, and {flag} splits its "
                         "files at commas: rename or link it")
    paths = [p.strip() for p in text.split(",")]
    if any(not p for p in paths):
        raise UsageError(f"{flag}: expected a comma list of files; got {shown(text)}")
    return distinct_files(paths)


def check_values(args):
    """Refuse a flag given an empty value (it would silently mean the default), or one that holds a character that
    could break a line of the plan or a terminal: a control, a line separator, or bytes that are not UTF-8."""
    for dest, value in vars(args).items():
        if isinstance(value, str):
            flag = "--" + dest.replace("_", "-")
            if not value.strip():
                raise UsageError(f"{flag}: empty value; give one, or leave the flag out for its default")
            if any(unicodedata.category(c) in UNPRINTABLE for c in value):
                raise UsageError(f"{flag}: {ascii(value)} holds a control character, a line separator or bytes "
                                 "that are not UTF-8")


PROGRESS_AFTER = 2.0   # seconds: a run expected to take longer shows its progress on stderr, if a terminal


def progress_meter(grid, stream):
    """A progress callback for main.analyse when stream is a terminal and the run should take over PROGRESS_AFTER, else None.

    The estimate, 10 ms an (alpha, K) pair plus 2 ms per draft token of its K (a long K at a high alpha needs
    more simulated requests: up to 0.12 s at alpha 0.99, K = 32), and 0.2 ms a cell, is what grids took on a
    2-core machine (22 alphas x 5 Ks x 4 overheads x 8 concurrencies: 3,520 cells in about 1 s).
    """
    pairs = len(grid.ks) * len(grid.acceptance)
    cells = pairs * len(grid.overheads) * len(grid.concurrencies)
    seconds = (0.010 * pairs + 0.002 * sum(grid.ks) * len(grid.acceptance)) + 0.0002 * cells
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError, OSError):   # closed (2>&-: None)
        terminal = False
    if not terminal or seconds < PROGRESS_AFTER:
        return None

    def show(done, total):
        line = f"simulating requests: {done}/{total} (alpha, K) pairs"
        stream.write("\r" + (line if done < total else " " * len(line) + "\r"))
        stream.flush()

    return show
