"""The model's error out of sample, by class of deployment: what rollout/trust.py's intervals are made of.

    python bench/intervals.py             # about twenty minutes on 2 cores: refits without each source, writes, prints
    python bench/intervals.py --report    # the same reports from the files the last run wrote, in seconds

Every published point and served run is predicted by a fit that did not see its source: the leave-one-source-out
fits of bench/calibrate.py for the points the constants are fitted on (written to bench/held_out_fits.json), and the
fit itself for the SpecBundle runs, which it never sees, and bench/moe_load.py's InferenceX runs, each GPU
predicted at the constants fitted on the others (bench/moe_held_out.json, which this script reads as it stands: rerun
moe_load.py first when the model changes). Each prediction's log error is written to
code/rollout/held_out_errors.json with its class (what it predicts, engine, dense or MoE target, GPU
family, draft kind), and the table trust.MODEL_ERROR should hold is printed: per class, the
number of points and of sources, the spread of a source's points around its own mean, and the
spread of the sources' means (trust.error_table). tests/test_intervals.py checks that
MODEL_ERROR is this file's table and that the intervals built from it cover 70-90% of points
they did not see. The reports on standard error: each source's held-out error, by engine era and draft
kind, the served runs by K, concurrency and load, the served A pairs read as an H100 SXM, and each
left-out source's share inside its 80% interval, overall and by class. Standard library only.
"""
import json
import math
import multiprocessing
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import calibrate  # noqa: E402  (bench/calibrate.py: the points and the fits)
import served_runs  # noqa: E402  (bench/served_runs.py: the served runs' deployments)

from rollout import costmodel, trust  # noqa: E402
OUT = HERE.parent / "code" / "rollout" / "held_out_errors.json"   # read by the run itself (trust.py)
MOE_ROWS = HERE / "moe_held_out.json"   # written by bench/moe_load.py (a few minutes), read here as it stands


def row(point, predicted, how):
    """A point's held-out row: its class (a served pair or forced-alpha ratio is a speculative speedup's) and log error."""
    dep = point["dep"]
    return dict(source=point["source"], point=point["what"], how=how, era=f"{dep.engine.key} {dep.era.key}",
                **trust.error_class("speedup" if point["kind"] in ("speedup", "served") else "tpot", dep),
                log_error=round(math.log(predicted / point["published"]), 6))


def fit_without(source):
    """The fit on every point but those of one source (a worker's task: POINTS is inherited by fork)."""
    return calibrate.fit_constants([p for p in POINTS if p["source"] != source])


POINTS = []


def held_out_fits(points, workers=2):
    """{source: the fit without it}, the fits run in parallel (each is deterministic, so the result is too)."""
    POINTS[:] = points
    sources = sorted({p["source"] for p in points})
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return dict(zip(sources, pool.map(fit_without, sources)))


def held_out_rows(fits=None):
    """Every point's held-out row, and the fits without each source (written to FITS; --report reads them back)."""
    points = calibrate.all_points()
    rows, fits = [], fits or held_out_fits(points)
    for source, fit in fits.items():
        rows += [row(p, calibrate.predict(p, fit), "fitted without its source") for p in points
                 if p["source"] == source and p["kind"] != "slope"]   # a slope is a view of NIM's points
    rows += [row(p, calibrate.predict(p, costmodel.FIT), "never fitted") for p in calibrate.load_specbundle()]
    rows += json.loads(MOE_ROWS.read_text())["rows"]   # InferenceX's MoE runs, each GPU left out (bench/moe_load.py)
    return rows, fits


def report_served_gpu(fits, gpu="h100-sxm"):
    """The served A pairs on another GPU than the one their baselines identify (the issue's reading: --gpu
    h100-sxm), each source predicted by the same fit without it."""
    print(f"held out, served A read as {gpu} (served_runs.LLAMA_GPU is {served_runs.LLAMA_GPU}):", file=sys.stderr)
    for source, fit in fits.items():
        points = [p for p in calibrate.load_served_pairs() if p["source"] == source]
        if not points:
            continue
        line(source, [calibrate.predict(dict(p, dep=served_runs.llama_deployment(p["dep"].draft, p["dep"].era, gpu)),
                                        fit) / p["published"] - 1 for p in points])


def line(name, errors):
    """One row of a report: the count, median and worst |relative error| and the mean signed one."""
    size = sorted(abs(e) for e in errors)
    print(f"  {name:46s} {len(size):4d} {statistics.median(size) * 100:6.1f}% {size[-1] * 100:6.1f}% "
          f"{statistics.fmean(errors) * 100:+6.1f}%", file=sys.stderr)


def report(rows):
    """Each source's held-out error (median and worst |relative error|, mean signed), then by engine era and by
    draft kind: what the README's table gives."""
    for title, key in (("source", lambda r: r["source"]), ("engine era", lambda r: r["era"]),
                       ("draft kind (speculative points)", lambda r: r["draft"] or None)):
        print(f"held out, by {title}:   n  median   worst  signed", file=sys.stderr)
        groups = defaultdict(list)
        for r in rows:
            if key(r) is not None:
                groups[key(r)].append(math.expm1(r["log_error"]))
        for name, errors in sorted(groups.items()):
            line(name, errors)


def report_served(rows):
    """The served sources' held-out errors by what their done-when reads: A's signed error by K, B's by load."""
    groups = defaultdict(list)
    for r in rows:
        if r["source"].startswith("served A"):
            draft, k, c = r["point"].split()
            groups["A " + draft + " " + k].append(math.expm1(r["log_error"]))
            groups["A " + draft + " " + c].append(math.expm1(r["log_error"]))
        elif r["source"].startswith("served B"):
            load = r["point"].split(" ", 2)[2].rsplit(" ", 1)[0]
            groups["B " + r["source"].split(": ")[1] + ", " + load].append(math.expm1(r["log_error"]))
    print("held out, served runs by K, concurrency and load:   n  median   worst  signed", file=sys.stderr)
    for name, errors in sorted(groups.items()):
        line(name, errors)


def report_coverage(rows):
    """Each source's share of points inside its 80% interval, built from the table of all the other sources."""
    print(f"{trust.INTERVAL_LEVEL:.0%} intervals, share of each left-out source's points inside:", file=sys.stderr)
    counts = defaultdict(int)
    for r in rows:
        counts[r["source"]] += 1
    for source, share in trust.source_coverage(rows).items():
        print(f"  {source:46s} {share:5.0%} of {counts[source]}", file=sys.stderr)


def report_class_coverage(rows, least=10):
    """Each class with at least `least` held-out points (the issue's line): its share inside its 80% interval, every
    point's interval built from the table without the point's source, as source_coverage builds it."""
    tables = {source: trust.error_table([r for r in rows if r["source"] != source]) for source in {r["source"] for r in rows}}
    groups = defaultdict(list)
    for r in rows:
        groups[tuple(r[key] for key in trust.ERROR_CLASS)].append(r)
    print(f"{trust.INTERVAL_LEVEL:.0%} intervals by class (at least {least} points), share inside, sources:",
          file=sys.stderr)
    held = 0
    for key, mine in sorted(groups.items()):
        if len(mine) < least:
            continue
        inside = [abs(r["log_error"]) <= trust.Z_INTERVAL * trust.class_error(r, tables[r["source"]]).sd for r in mine]
        share = sum(inside) / len(inside)
        held += 0.7 <= share <= 0.9
        print(f"  {' '.join(k for k in key if k):46s} {share:5.0%} of {len(mine):4d}, {len({r['source'] for r in mine})} "
              f"source(s)", file=sys.stderr)
    print(f"  {held} of {sum(len(m) >= least for m in groups.values())} classes inside 70-90%", file=sys.stderr)


FITS = HERE / "held_out_fits.json"


if __name__ == "__main__":
    if "--report" in sys.argv[1:]:   # the rows and reports again from the fits the last full run wrote
        stored = json.loads(FITS.read_text())
        if any(set(fit) != set(costmodel.Fit._fields) for fit in stored.values()):   # no field may take a default
            sys.exit(f"{FITS.name} was written for other Fit fields: run python bench/intervals.py in full")
        rows, fits = held_out_rows({source: costmodel.Fit(**fit) for source, fit in stored.items()})
    else:
        rows, fits = held_out_rows()
        FITS.write_text(json.dumps({source: fit._asdict() for source, fit in fits.items()}, indent=1) + "\n")
    report(rows)
    report_served(rows)
    report_served_gpu(fits)
    report_coverage(rows)
    report_class_coverage(rows)
    OUT.write_text(json.dumps(dict(note=__doc__.split("\n\n")[1].replace("\n", " "), rows=rows), indent=1) + "\n")
    print("MODEL_ERROR = {")
    for key, value in trust.error_table(rows).items():
        print(f"    {key!r}: {value!r},")
    print("}")
    print(f"cross-validated coverage of the {trust.INTERVAL_LEVEL:.0%} intervals, sources weighted alike: "
          f"{trust.interval_coverage(rows):.2f}", file=sys.stderr)
