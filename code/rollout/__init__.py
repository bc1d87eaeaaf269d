"""rollout: the machinery behind code/main.py, one module per concern, standard library only.

main.py is the lesson's file: the grid and deployment constants, the grid's evaluation, the tables and main().
Everything it stands on is here. Imports go one way: a module imports only modules listed before it below
(records and catalog first, the command line last), never main.py; tests/test_layers.py holds it. The package
writes no default of its own: main.py's constants reach it as a flags.Settings.

    records       field metadata for --json, UsageError, echoing a value, the bounds on input
    report        one run's three records, Inputs -> Report -> Output, and the grid and evidence they carry
    catalog       GPUs, models, engines and their release eras, draft heads and models
    experts       the experts a MoE pass reads: routing skew, and the busiest GPU under expert parallelism
    acceptance    tau, alpha, the speedups, the break-even, one round, the decode loop
    schedule      a K-by-batch schedule in ranges and words: where speculation pays, the call a range makes
    priors        the published acceptance by draft, head, target and domain (acceptance_table.json): what a plan
                  assumes until measured
    deployment    the Deployment: its networks' parameters and bytes, what fits in memory, the step budget
    costmodel     what a step, a draft step, a verify pass and a prefill chunk cost; FIT; eps
    sizing        settings derived for the model asked about: its shipped dtype, the smallest TP that holds the batch
    releases      what each engine release accepts and refuses, with the source each fact was checked in
    workload      a benchmark run's traffic, prompts, saved metrics, SLO keys and --goodput words
    simulation    requests with spread alphas and lengths: TPOT and ITL, the two-pass model
    serving       a `vllm bench serve` run, step by step: TTFT, TPOT, ITL, E2EL at load; vLLM's goodput
    goodput       serving at an SLO: the most each GPU serves within it, with speculation off and at the K
    bounded       every input read bounded: a file or a pipe, within its size, time and line limits
    readers       /metrics scrapes: their counters, and the acceptance a window of them measures
    benchfiles    `vllm bench serve` result files: their keys checked, the runs --calibrate fits, the pair compared
    hfconfig      a Hugging Face config.json as a model shape
    trust         the model's error out of sample and the 80% intervals
    cells         a grid cell: the lesson's speedup, the exact one, the simulated requests' and their tail
    bestk         the best K by batch size, vLLM's K-by-batch table, the batches too close to call
    mix           a traffic mix: each domain at its own alpha, the blend weighted by rounds, its tail
    analysis      the plan's choices, the measurements' predictions, the verdict, the gate, the charts' data
    commands      the engines' server and benchmark commands, by engine and release
    exercises     the lesson's five exercises, answered
    calibration   fitting the cost model on your runs; the benchmark files a run should write
    choose        --choose: every candidate deployment at the SLO, priced; the cheapest, off and on
    decide        decide(inputs, grid loop) -> Report: the fits, the plan, the verdict, the predictions, before any text
    render/       render(report) -> Output: the text and the files, from the Report alone (its modules, in order:
                  words, the sentences several parts share (the verdict in words first); tables, the printed
                  tables' parts and the summary; exercises, the five exercises answered; charts, the four SVG charts; choice,
                  --choose's ranked deployments and their chart; plan,
                  the staged rollout plan in Markdown; export, --json, predicted benchmark files, --compare;
                  terminal, the printed report)
    writes        where a run may write; its files all or none; signals and the output streams
    flags         the flags and their syntax, the settings a run falls back on (Settings: main.py's constants)
    deployflags   the deployment's flags -> one Deployment, every rule checked; --choose's candidates built alike
    cli           parse(argv, settings) -> Inputs: the flags together, the files they name, every rule between them

The docstrings' examples run as tests (tests/test_formulas.py); in them example(...) is the reference deployment:
make_deployment on main.py's constants (flags.DeploymentSettings.build), any keyword changed.

    >>> from rollout.acceptance import acceptance_length, exact_speedup
    >>> round(acceptance_length(0.7, 3), 3), round(exact_speedup(0.7, 3, 0.2), 3)   # 1 + .7 + .49 + .343
    (2.533, 2.111)
"""

RENDER = ("words", "tables", "exercises", "charts", "choice", "plan", "export", "terminal")   # render/'s modules, bottom to top
LAYERS = ("records", "report", "catalog", "experts", "acceptance", "schedule", "priors", "deployment", "costmodel", "sizing", "releases", "workload", "simulation", "serving", "goodput", "bounded", "readers", "benchfiles", "hfconfig", "trust",
          "cells", "bestk", "mix", "analysis", "commands", "exercises", "calibration", "choose", "decide", "render", "writes",
          "flags", "deployflags", "cli")
MODULES = tuple(name for layer in LAYERS   # every module, bottom to top, render/'s as render.<name> before render
                for name in ([f"render.{r}" for r in RENDER] + ["render"] if layer == "render" else [layer]))
