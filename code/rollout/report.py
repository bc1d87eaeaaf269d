"""One run's three records, each frozen, each the only thing a stage hands the next:

    parse(argv, settings) -> Inputs     everything the command line and its files say, checked once (cli.parse)
    decide(inputs, grid)  -> Report     everything decided: the grid's cells, the plan, the verdict, the predictions,
                                        the fits (decide.decide); no text
    render(report)        -> Output     the text a run prints and the files it writes (render.render)
    write(output)                       the files, all or none, then the text (writes.write)

The records hold no behaviour. Their fields' types are named, not imported (this module sits at the bottom of the
package, below everything the records carry).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .records import NOT_IN_JSON


@dataclass(frozen=True)
class Replay:
    """A --compare file, read and checked (cli.parse): the run it holds, to be replayed (decide)."""
    path: str                #: as given
    bench: object            #: readers.BenchResult
    workload: object         #: workload.Workload of its own run (cli.replay_workload)
    acceptance: object       #: readers.Acceptance it ran at (its spec_decode_* keys, or the --metrics scrape for
                             #: the --bench-spec file); None: speculation off
    slo: tuple               #: the --goodput bounds its request_goodput is predicted at (--slo); (): not compared
    server_cap: int          #: the server's running cap it is replayed under: its max_concurrency, or (open loop)
                             #: the plan's batch, as the plan's command sets it
    notes: tuple             #: how it was read


@dataclass(frozen=True)
class Inputs:
    """Everything a run was asked (cli.parse): the flags and main.py's constants, the files they name read and every
    rule between them checked. No simulation and no fit has run."""
    grid: object             #: report.Grid: the acceptance values, Ks, verify overheads and concurrencies
    dep: object              #: deployment.Deployment
    evidence: object         #: report.Evidence: measurements, targets, the gate's settings
    traffic: object          #: workload.Traffic: seeds and spreads of the simulated requests, the SLO
    settings: object         #: flags.Settings the run fell back on (main.py's constants)
    out: Path = None         #: where the plan goes (None: --no-write; records.STANDARD_OUTPUT: --out -)
    as_json: bool = False    #: --json
    as_gate: bool = False    #: --gate: the exit status is the gate's
    exercises: bool = False  #: --exercises
    runs: tuple = None       #: readers.CalibrationRun per --calibrate file (None: none given)
    bench: object = None     #: cli.BenchFlags: --predict-bench, --compare and their flags
    replays: tuple = ()      #: Replay per --compare file
    choose: object = None    #: cli.ChooseAsk: the deployments --choose searches (None: one deployment, as given)


@dataclass(frozen=True)
class BreakEven:
    """One row of the break-even table: where speculation stops paying at (K, eps at B=1, B)."""
    k: int                   #: draft length K
    verify_overhead: object  #: the grid's eps at B=1, or "auto"
    concurrency: int         #: batch size B
    feasible: bool           #: whether B sequences fit in memory
    eps_eff: float           #: decode eps at B
    lesson: float            #: break-even acceptance rate eps / K (the lesson's "alpha"); None: none below 1
    exact: float             #: break-even per-token alpha, tau(alpha, K) = 1 + eps; None: none


@dataclass(frozen=True)
class GridCells:
    """What main.py's loop over the grid returns (main.grid_cells): every cell, the break-even rows, and eps at B=1."""
    cells: list              #: cells.Cell per (K, eps at B=1, B, alpha), infeasible ones without numbers
    breakeven: list          #: BreakEven per (K, eps at B=1, B)
    eps_b1: dict             #: {(K, the grid's eps at B=1): decode eps at B=1}


@dataclass(frozen=True)
class Report:
    """Everything decided (decide.decide): what the tables, the plan, the charts and --json show. No text."""
    inputs: Inputs = field(default=None, metadata=NOT_IN_JSON)   #: what it was decided from
    cells: list = None       #: cells.Cell per grid cell
    breakeven: list = None   #: BreakEven rows
    eps_b1: dict = field(default=None, metadata=NOT_IN_JSON)   #: {(K, the grid's eps at B=1): decode eps at B=1}
    facts: object = None     #: analysis.Facts: what the deployment lines and the summary say about the deployment
    alpha_spread: float = None   #: the simulated requests' spread of alpha
    output_spread: float = None  #: their spread of ln(output tokens)
    input_spread: float = None   #: the ShareGPT-like runs' spread of ln(prompt tokens)
    best_k: list = None      #: bestk.BestK rows
    plan: object = None      #: analysis.Plan
    mix: object = None       #: mix.Mix; None when no mix is given
    charts: object = None    #: analysis.Charts; None unless the plan's files are written
    measured: object = None  #: analysis.Measured
    gate: object = None      #: analysis.Gate
    calibration: object = None   #: calibration.Calibration
    exercises: object = None     #: exercises.Exercises
    trust: object = None     #: trust.Trust: how far to believe the predictions
    benches: list = None     #: calibration.PredictedBench per file --predict-bench writes
    gate_runs: list = None   #: stage 1's pair of runs at the plan's batch and K, predicted: only when the plan is
                             #: written
    comparisons: list = None   #: (path, PredictedBench, rows, notes) per --compare file
    verdict: object = None   #: analysis.Verdict: on or off, at which K by batch size, the gain and its range
    at_slo: object = None    #: goodput.AtSlo: the most each GPU serves within the SLO, off and at the K
    choice: object = None    #: choose.Choice: the cheapest deployment for the traffic (--choose), whose plan this is
    lesson: list = field(default=None, metadata=NOT_IN_JSON)   #: main.py's walk of the lesson, its printed lines


@dataclass(frozen=True)
class Output:
    """What a run prints and writes (render.render): the exit status, the text for standard output, the files."""
    status: int              #: 0; with --gate, 1 when the gate fails
    text: str                #: standard output
    files: dict              #: {Path: text} written all or none (writes.write)


@dataclass(frozen=True)
class Grid:
    """The grid the tables sweep: every acceptance value at every K, eps at B=1 and concurrency B."""
    acceptance: tuple        #: acceptance values of one kind (below)
    ks: tuple                #: draft lengths K
    overheads: tuple         #: eps at B=1, a fraction of a plain step, or "auto" (the cost model's)
    concurrencies: tuple     #: batch sizes B
    kind: str = "alpha"      #: "alpha" (per-token), "rate" (vLLM's accepted/drafted, read as measured at each K) or
                             #: "length" (tau, measured at the single K of ks)


@dataclass(frozen=True)
class Evidence:
    """What was measured, and what the gate and the plan are for (parse_evidence)."""
    measured: object = None      #: readers.Measurement, or None
    comparison: object = None    #: benchfiles.Comparison of two benchmark runs, or None
    pair_workload: object = None      #: the pair's own workload (workload.Workload), to replay it; None: not replayable
    target_concurrency: int = None   #: the plan's batch: every part of the run answers at it (None: the grid's largest)
    target_from: str = "the grid's largest concurrency"   #: how it was chosen (cli.parse_target), as the verdict says
    mix: tuple = ()              #: traffic-mix rows (name, share of tokens, alpha or None: the published
                                 #: prior's[, output tokens])
    margin: float = None         #: the gate's margin over the break-even rate
    budget: float = None         #: largest P99 TPOT rise the gate accepts, fraction
    served_model: str = None     #: --served-model: the name the measured server served (the gate command repeats it)
    mix_assumed: bool = True     #: whether mix is main.py's TRAFFIC_MIX, not the user's --mix
    expected_alpha: float = None   #: per-token alpha the plan assumes until measured (None: the published priors')
