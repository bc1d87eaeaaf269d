"""The cross-validated intervals' coverage and median half-width: `python bench/interval_width.py` (seconds).

Each source's points against the error table of all the other sources (trust.interval_coverage), from
code/rollout/held_out_errors.json: the share inside, sources weighted alike, and the median over points of the
80% interval's half-width as a share of the prediction, (exp(z sd) - exp(-z sd)) / 2. Standard library only.
"""
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "code"))   # main.py's package, rollout, imports by name from code/

from rollout import simulation, trust  # noqa: E402


def widths(rows, level=trust.INTERVAL_LEVEL):
    z = simulation.NORMAL.inv_cdf(0.5 + level / 2)
    out = []
    for source in sorted({r["source"] for r in rows}):
        table = trust.error_table([r for r in rows if r["source"] != source])
        for r in rows:
            if r["source"] == source:
                sd = trust.class_error({k: r[k] for k in trust.ERROR_CLASS}, table).sd
                out.append((math.exp(z * sd) - math.exp(-z * sd)) / 2)
    return out


if __name__ == "__main__":
    rows = json.loads((HERE.parent / "code" / "rollout" / "held_out_errors.json").read_text())["rows"]
    print(f"coverage {trust.interval_coverage(rows):.2f}, median half-width {statistics.median(widths(rows)) * 100:.1f}%")
