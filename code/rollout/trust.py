"""How far to trust a number: the model's error out of sample by class of deployment (MODEL_ERROR), the 80% intervals
built on it, and when a gain is too close to call.
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from .catalog import fitted_era_before
from .acceptance import exact_breakeven
from .costmodel import FIT, round_ms
from .deployment import draft_kind, gpu_family
from .simulation import NORMAL
from .readers import RUN_NOISE
from .records import percentile


# Every predicted speedup and TPOT carries an interval at INTERVAL_LEVEL. Before calibration its
# width is the model's own error out of sample on published deployments like this one
# (MODEL_ERROR, from bench/intervals.py: each point predicted by a fit that did not see its
# source), widened for each way this deployment lies outside those data; after --calibrate, it
# is the held-out error of your own runs.

INTERVAL_LEVEL = 0.8   # share of measurements an interval should hold
ERROR_CLASS = ("what", "target", "engine", "draft", "family")   # what sets the model's error, most telling first


Z_INTERVAL = NORMAL.inv_cdf(0.5 + INTERVAL_LEVEL / 2)   # 1.28: an interval is the prediction times exp(+-z sd)
# The model's error out of sample by class, (what, target, engine, draft, family) -> (points, sources, within,
# between): within, the RMS of a source's log errors around the source's own mean; between, the RMS of the sources'
# means (error_table). Read from held_out_errors.json beside this file, as bench/intervals.py writes it: every
# published point and served run predicted by a fit that did not see its source. A TPOT's class has no draft: a plain
# step runs none.
HELD_OUT_PATH = Path(__file__).resolve().parent / "held_out_errors.json"
HELD_OUT = json.loads(HELD_OUT_PATH.read_text(encoding="utf-8"))["rows"]


def measured_layouts(rows):
    """{engine: the layouts its held-out rows ran} ("tp", "ep", "ep+dp"): tensor parallel everywhere; expert parallel
    and attention data parallel only where a source ran them (InferenceX's DeepSeek-R1 runs, bench/moe_load.py)."""
    order = ("tp", "ep", "ep+dp")
    return {engine: tuple(x for x in order if any(r["engine"] == engine and r["layout"] == x for r in rows))
            for engine in sorted({r["engine"] for r in rows})}


MEASURED_LAYOUTS = measured_layouts(HELD_OUT)   # another engine's EP layout is outside the data (class_error)
# The GPUs some held-out row ran on: a GPU no published run timed (a B300, an MI325X, a GH200) takes its family's
# constants (costmodel.bandwidth_share, flop_share), which no measurement on it checks: outside the data once more.
MEASURED_GPUS = frozenset(r["gpu"] for r in HELD_OUT if r.get("gpu"))


def error_class(what, dep):
    """A prediction's class for MODEL_ERROR: what it predicts ("speedup" or "tpot") and the deployment's kind."""
    return dict(what=what, target="moe" if dep.target.experts else "dense", engine=dep.engine.key,
                draft=draft_kind(dep.draft) if what == "speedup" else "", family=gpu_family(dep),
                layout="ep+dp" if dep.dp_attention else "ep" if dep.ep > 1 else "tp", gpu=dep.gpu)


def error_table(rows):
    """MODEL_ERROR from held-out rows (dicts with the ERROR_CLASS keys, "source" and "log_error")."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[key] for key in ERROR_CLASS), {}).setdefault(r["source"], []).append(r["log_error"])
    table = {}
    for key, sources in sorted(groups.items()):
        means = {name: statistics.fmean(errors) for name, errors in sources.items()}
        points = sum(len(errors) for errors in sources.values())
        within = math.sqrt(sum((e - means[name]) ** 2 for name, errors in sources.items() for e in errors) / points)
        between = math.sqrt(statistics.fmean(m * m for m in means.values()))
        table[key] = (points, len(sources), round(within, 4), round(between, 4))
    return table


MODEL_ERROR = error_table(HELD_OUT)


@dataclass(frozen=True)
class ModelError:
    """How far off the model was, held out, on published deployments of this one's class (model_error): where the
    class has KNOWN_POINTS or more, the verdict's numbers are corrected by it (corrected), and the verdict says so
    where its median error is past MISS_LINE or its median moves them by render/words.MOVED."""
    what: str                #: "speedup"
    target: str              #: "dense" or "moe"
    engine: str              #: the engine's key
    draft: str               #: the draft kind
    family: str              #: the GPU family
    median: float            #: median |predicted / measured - 1| over the class's held-out points
    worst: float             #: the largest
    bias: float              #: median of predicted / measured - 1: above 0, the model ran high
    n: int                   #: held-out points
    sources: list            #: the sources they come from
    low: float = 0.0         #: the 10th percentile of predicted / measured - 1 (KNOWN_QUANTILES)
    high: float = 0.0        #: the 90th


MISS_LINE = 0.15   # a class whose median held-out error is past this is a known miss (ModelError)


def model_error(dep, what="speedup", rows=None):
    """The held-out error of this deployment's class (error_class): a ModelError, or None where no published point of
    the class was held out."""
    cls = error_class(what, dep)
    mine = [r for r in (HELD_OUT if rows is None else rows) if all(r[key] == cls[key] for key in ERROR_CLASS)]
    if not mine:
        return None
    errors = sorted(abs(math.expm1(r["log_error"])) for r in mine)
    signed = sorted(math.expm1(r["log_error"]) for r in mine)
    low, high = (percentile(signed, q) for q in KNOWN_QUANTILES)
    return ModelError(**{key: cls[key] for key in ERROR_CLASS}, median=statistics.median(errors), worst=errors[-1],
                      bias=statistics.median(signed), n=len(errors), sources=sorted({r["source"] for r in mine}),
                      low=low, high=high)


KNOWN_POINTS = 5   # held-out points a class needs before its errors move the numbers (known): fewer say little
KNOWN_QUANTILES = (0.1, 0.9)   # the class's errors a known range spans: the 80% interval's


def known(error):
    """Whether a class's held-out errors (a ModelError, or None) are known well enough to correct its numbers."""
    return error is not None and error.n >= KNOWN_POINTS


def corrected(value, bounds, error):
    """(value, [low, high]) of a prediction where its class's held-out errors are known (known): the value divided by
    one plus their median (a class that ran high is pulled down), and the range the value divided by one plus
    their 90th and 10th percentiles, widened where needed to hold `bounds` (the model's own 80% range) moved with
    the value. As given where the class is not known.

    >>> e = ModelError("speedup", "moe", "sglang", "mtp", "hopper", median=0.28, worst=0.4, bias=0.25, n=6,
    ...                sources=["x"], low=0.1, high=0.4)
    >>> v, (lo, hi) = corrected(1.5, [1.4, 1.6], e)
    >>> round(v, 3), round(lo, 3), round(hi, 3)
    (1.2, 1.071, 1.364)
    """
    if not known(error) or value is None:
        return value, bounds
    shift = 1.0 + error.bias
    low, high = value / (1.0 + error.high), value / (1.0 + error.low)
    if bounds is not None:
        low, high = min(low, bounds[0] / shift), max(high, bounds[1] / shift)
    return value / shift, [low, high]



@dataclass(frozen=True)
class ClassError:
    """How far the model errs for a class of deployment (class_error): s.d. of log(measured / predicted)."""
    sd: float                #: the whole s.d.: within, between and outside added in quadrature
    within: float            #: the spread of a source's points around its own mean, same kind of target
    between: float           #: the spread between sources of the same target kind: a new deployment is a new source
    outside: tuple           #: the attributes (target, engine, draft, family) with no data, each adding the spread
                             #: between all sources once more


def class_error(cls, table=MODEL_ERROR, layouts=MEASURED_LAYOUTS, gpus=MEASURED_GPUS):
    """The model's error for a prediction of class `cls` (error_class): the spreads within and between the sources
    of the same kind of target, and the spread between all sources once more for each attribute (engine, draft,
    GPU family, or the target's kind itself) that no source shares. Pooled by target, not matched on every
    attribute: few classes hold more than one source, and one source says nothing of the next."""
    rows = {key: value for key, value in table.items() if key[0] == cls["what"]}
    order = ERROR_CLASS[1:]
    alike = [value for key, value in rows.items() if key[1] == cls["target"]] or list(rows.values())
    within = sum(v[0] * v[2] ** 2 for v in alike) / sum(v[0] for v in alike)

    def between_of(values):
        return sum(v[1] * v[3] ** 2 for v in values) / sum(v[1] for v in values)
    outside = tuple(name for name in order if not any(key[order.index(name) + 1] == cls[name] for key in rows))
    # A layout no held-out row of its engine ran is one more attribute no source shares.
    outside += ("layout",) if cls.get("layout", "tp") not in layouts.get(cls.get("engine"), ("tp",)) else ()
    # A GPU no held-out row ran on borrows its family's constants: once more the spread between all sources.
    outside += ("gpu",) if cls.get("gpu") and gpus and cls["gpu"] not in gpus and "family" not in outside else ()
    squared = within + between_of(alike) + len(outside) * between_of(rows.values())
    return ClassError(sd=math.sqrt(squared), within=math.sqrt(within), between=math.sqrt(between_of(alike)),
                      outside=outside)


def source_coverage(rows, level=INTERVAL_LEVEL):
    """{source: the share of its points inside their intervals}, each source's points against the table of all the
    other sources (a new deployment is a new source)."""
    z = NORMAL.inv_cdf(0.5 + level / 2)
    shares = {}
    for source in sorted({r["source"] for r in rows}):
        table = error_table([r for r in rows if r["source"] != source])
        mine = [r for r in rows if r["source"] == source]
        inside = [abs(r["log_error"]) <= z * class_error({k: r[k] for k in ERROR_CLASS}, table).sd for r in mine]
        shares[source] = sum(inside) / len(inside)
    return shares


def interval_coverage(rows, level=INTERVAL_LEVEL):
    """Cross-validated coverage of the intervals: each source's share of points inside (source_coverage), the
    sources weighted alike."""
    return statistics.fmean(source_coverage(rows, level).values())


@dataclass(frozen=True)
class Trust:
    """How far to believe this run's predictions (trust): the s.d. of log(measured / predicted) for a speedup and
    a mean TPOT, and where it comes from."""
    level: float             #: share of measurements an interval holds
    speedup_sd: float        #: s.d. of a predicted speedup's log error
    tpot_sd: float           #: s.d. of a predicted mean TPOT's log error, speculation off
    spec_tpot_sd: float      #: likewise with speculation on
    calibrated: bool         #: from your runs' held-out errors (else the published data's)
    outside: tuple           #: attributes of this deployment no published data share (uncalibrated)
    basis: str               #: in words
    acceptance_sd: float = 0.0   #: the part of speedup_sd an assumed acceptance adds (widened)


def trust_in(dep, calibration=None, table=MODEL_ERROR):
    """The model's error here: after --calibrate your runs' held-out errors (baselines for a TPOT; a speedup is a
    ratio of two TPOTs, so both kinds add), before it the published data's for this class of deployment."""
    speedup, tpot = class_error(error_class("speedup", dep), table), class_error(error_class("tpot", dep), table)
    if calibration is None:
        outside = tuple(dict.fromkeys(speedup.outside + tpot.outside))
        era = era_sd(dep)
        outside += ("era",) if era else ()
        speedup_sd = math.hypot(speedup.sd, era)
        return Trust(level=INTERVAL_LEVEL, speedup_sd=speedup_sd, tpot_sd=tpot.sd,
                     spec_tpot_sd=math.hypot(speedup_sd, tpot.sd), calibrated=False, outside=outside,
                     basis="the model's error on published deployments like this one, each predicted by a fit that "
                           "did not see it" + (f", plus an s.d. of {era:.2f} in log for the engine release, as large "
                                               "as the release's unmeasured change to a round (taken off rounds only: "
                                               "had the plain step's host time shrunk too, the speedup would be lower)"
                                               if era else ""))

    def rms(errors):
        return math.sqrt(statistics.fmean(math.log1p(e) ** 2 for e in errors)) if errors else None
    base = rms([r.held_out_error for r in calibration.runs if r.k is None])
    spec = rms([r.held_out_error for r in calibration.runs if r.k is not None])
    base = max(RUN_NOISE, base)
    speedup_sd = math.hypot(base, max(RUN_NOISE, spec)) if spec is not None else speedup.sd
    return Trust(level=INTERVAL_LEVEL, speedup_sd=speedup_sd, tpot_sd=base,
                 spec_tpot_sd=max(RUN_NOISE, spec) if spec is not None else math.hypot(base, speedup_sd),
                 calibrated=True, outside=(),
                 basis="your runs, each predicted by a fit on the others"
                       + ("" if spec is not None else "; no speculative run: a speedup keeps the published data's error"))


def widened(trust, acceptance_sd):
    """The trust with a speedup's log s.d. widened by what an assumed acceptance adds (priors.PlanAcceptance's
    acceptance_sd): a prior matched no closer than the target's family is as uncertain as its rows' spread."""
    speedup_sd = math.hypot(trust.speedup_sd, acceptance_sd)
    return replace(trust, speedup_sd=speedup_sd, spec_tpot_sd=math.hypot(trust.spec_tpot_sd, acceptance_sd),
                   acceptance_sd=acceptance_sd,
                   basis=trust.basis + f", and an s.d. of {acceptance_sd:.2f} in log for an acceptance assumed from "
                                       "heads other than this target's (the spread of their published alphas)")


ERA_REFERENCE = (1, 3)   # (B, K) where an era's saving is sized for the interval: batch 1, where fixed costs weigh most


def era_sd(dep, fit=FIT):
    """The s.d. (of a speedup's log) the engine era adds: the log of the round in the newest fitted era before it over
    this era's at ERA_REFERENCE, i.e. what the era's unmeasured change moves it by: a derived saving (SGLang's spec
    v2), or host work hidden by rule for a draft kind no fitted era hid (vLLM's async draft-model rounds from 0.28).
    No published point times a round in an era that is not fitted, so the change is taken to be uncertain by as much
    as it moves the round (0 for a fitted era, and for a draft kind the change leaves alone)."""
    if dep.era.fitted:
        return 0.0
    fitted = replace(dep, era=fitted_era_before(dep.engine.key, dep.era))
    batch, k = ERA_REFERENCE
    return abs(math.log(round_ms(fitted, batch, k, fit) / round_ms(dep, batch, k, fit)))


def interval(value, sd):
    """[low, high] around a prediction: value times exp(-+ Z_INTERVAL sd), the INTERVAL_LEVEL share of outcomes."""
    if value is None:
        return None
    spread = math.exp(Z_INTERVAL * sd)
    return [value / spread, value * spread]


def span(bounds, digits=2):
    """An interval as printed: "0.93-1.22"."""
    return f"{bounds[0]:.{digits}f}-{bounds[1]:.{digits}f}"


def too_close(bounds, line=1.0):
    """Whether an interval straddles a line (1.0 for a speedup): the prediction cannot tell the side."""
    return bounds is not None and bounds[0] < line < bounds[1]


def breakeven_range(k, eps, sd):
    """[low, high] of the break-even rate eps / K when a round's cost over a plain step, 1 + eps, is uncertain by
    the s.d. sd of a speedup's log (the speedup is tau over it): None when even the low end is above 1.

    >>> [round(x, 4) for x in breakeven_range(2, 0.5, 0.0)]
    [0.25, 0.25]
    """
    spread = math.exp(Z_INTERVAL * sd)
    low, high = max(0.0, ((1.0 + eps) / spread - 1.0) / k), ((1.0 + eps) * spread - 1.0) / k
    return None if low > 1.0 else [low, min(high, 1.0)]


def breakeven_alpha_range(k, eps, sd):
    """[low, high] of the break-even per-token alpha when 1 + eps is uncertain by sd (breakeven_range); None
    without sd, and high None where the dear end of the range has no break-even below 1."""
    if sd is None:
        return None
    spread = math.exp(Z_INTERVAL * sd)
    low = exact_breakeven(k, max(0.0, (1.0 + eps) / spread - 1.0))
    return None if low is None else [low, exact_breakeven(k, (1.0 + eps) * spread - 1.0)]


