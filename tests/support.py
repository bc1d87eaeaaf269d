"""What every test module shares: the repository's paths, code/ on the import path (main.py and its package
rollout/ import by name from there), and run(argv), main.main in-process."""
import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = ROOT / "code"
MAIN_PATH = CODE / "main.py"
if str(CODE) not in sys.path:
    sys.path.insert(0, str(CODE))

import main  # noqa: E402  (after code/ is on the path)


def run(argv):
    """main(argv) in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main.main(argv)
    return status, out.getvalue(), err.getvalue()


def model(grid, dep, evidence=None, traffic=None, *, charts=True, fit=None, trust=None):
    """decide.run_model with main.py's grid loop and constants: the Report the tables show (no calibration, no
    files), for a grid and a deployment built by the test."""
    from rollout import costmodel, decide, report, workload
    return decide.run_model(grid, dep, grid_cells=main.grid_cells, evidence=evidence or report.Evidence(),
                            traffic=traffic or workload.Traffic(), fit=fit or costmodel.FIT, settings=main.SETTINGS,
                            charts=charts, trust=trust)
