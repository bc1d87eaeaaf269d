"""Is P99 TPOT as precise as the simulation claims? `python bench/check_precision.py [margin ...]`

For a few (alpha, K) it simulates the requests under 60 seeds and compares the real 95%
half-width of P99 TPOT (1.96 x its s.d. over seeds, relative) with the half-width each run
claims, for each stopping margin given (default: simulation.PRECISION_MARGIN and 1.0).
The real one must stay under simulation.PRECISION. About a minute.
"""
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "code"))   # rollout imports by name from code/
import main  # noqa: E402
from rollout import cells, records, simulation  # noqa: E402


def check(margins, seeds=60):
    for margin in margins:
        simulation.PRECISION_MARGIN = margin
        cells.DECODE_MEMO.clear()   # its keys leave the margin out: without this, every margin repeats the first
        for alpha, k in ((0.8, 5), (0.7, 3), (0.5, 3)):
            p99s, requests, claimed = [], [], []
            for seed in range(seeds):
                dec = cells.decoder(seed, main.ALPHA_SPREAD, main.OUTPUT_SPREAD, main.OUTPUT_TOKENS)(alpha, k)
                p99s.append(records.percentile(dec.tpot_spec, 0.99))
                requests.append(dec.requests)
                claimed.append(dec.precision)
            real = 1.96 * statistics.stdev(p99s) / statistics.fmean(p99s)
            print(f"margin {margin:.2f} alpha {alpha} K {k}: real half-width {real * 100:.2f}%, claimed median "
                  f"{statistics.median(claimed) * 100:.2f}%, {statistics.fmean(requests):.0f} requests on average")


if __name__ == "__main__":
    check([float(a) for a in sys.argv[1:]] or [simulation.PRECISION_MARGIN, 1.0])
