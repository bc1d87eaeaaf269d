"""The model's error out of sample, by class of deployment: what rollout/trust.py's intervals are made of.

    python bench/intervals.py          # about two minutes: refits without each source, writes, prints

Every published point is predicted by a fit that did not see its source: the leave-one-source-out
fits of bench/calibrate.py for the points the constants are fitted on, and the published fit
itself for the SpecBundle runs, which it never sees. Each prediction's log error is written to
bench/held_out_errors.json with its class (what it predicts, engine, dense or MoE target, GPU
family, draft kind), and the table trust.MODEL_ERROR should hold is printed: per class, the
number of points and of sources, the spread of a source's points around its own mean, and the
spread of the sources' means (trust.error_table). tests/test_intervals.py checks that
MODEL_ERROR is this file's table and that the intervals built from it cover 70-90% of points
they did not see. Standard library only.
"""
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import calibrate  # noqa: E402  (bench/calibrate.py: the points and the fits)

from rollout import costmodel, trust  # noqa: E402
OUT = HERE / "held_out_errors.json"


def row(point, predicted, how):
    dep = point["dep"]
    return dict(source=point["source"], point=point["what"], how=how,
                **trust.error_class("speedup" if point["kind"] == "speedup" else "tpot", dep),
                log_error=round(math.log(predicted / point["published"]), 6))


def held_out_rows():
    points = calibrate.all_points()
    rows = []
    for source in sorted({p["source"] for p in points}):
        fit = calibrate.fit_constants([p for p in points if p["source"] != source])
        rows += [row(p, calibrate.predict(p, fit), "fitted without its source") for p in points
                 if p["source"] == source and p["kind"] != "slope"]   # a slope is a view of NIM's points
        print(f"  {source}", file=sys.stderr)
    rows += [row(p, calibrate.predict(p, costmodel.FIT), "never fitted") for p in calibrate.load_specbundle()]
    return rows


if __name__ == "__main__":
    rows = held_out_rows()
    OUT.write_text(json.dumps(dict(note=__doc__.split("\n\n")[1].replace("\n", " "), rows=rows), indent=1) + "\n")
    print("MODEL_ERROR = {")
    for key, value in trust.error_table(rows).items():
        print(f"    {key!r}: {value!r},")
    print("}")
    print(f"cross-validated coverage of the {trust.INTERVAL_LEVEL:.0%} intervals, sources weighted alike: "
          f"{trust.interval_coverage(rows):.2f}", file=sys.stderr)
