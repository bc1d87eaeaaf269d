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
    from rollout import costmodel, decide
    return decide.run_model(grid, dep, grid_cells=main.grid_cells, evidence=evidence or main.SETTINGS.evidence(),
                            traffic=traffic or main.SETTINGS.traffic(slo=()), fit=fit or costmodel.FIT,
                            settings=main.SETTINGS,
                            charts=charts, trust=trust)


def build_deployment(model=None, gpu=None, tp=None, **changes):
    """The reference deployment of the tests: main.py's constants and the example's TP and dtypes (for any model),
    with changes (make_deployment's keywords), as flags.DeploymentSettings.build makes it."""
    return main.SETTINGS.deployment.build(model, gpu, tp, **changes)


def traffic(**changes):
    """main.py's traffic (its seed and spreads) with no SLO, with changes: workload.Traffic's fields."""
    return main.SETTINGS.traffic(**{"slo": (), **changes})


def evidence(**changes):
    """A run's Evidence with nothing measured: main.py's mix, margin and budget, with changes."""
    return main.SETTINGS.evidence(**changes)


def serve_run(dep, work, k=0, alpha=0.0, **given):
    """serving.serve_run at main.py's seed and alpha spread unless given: plain decoding unless k and alpha are."""
    given = {"spread": main.SETTINGS.alpha_spread, "seed": main.SETTINGS.seed, **given}
    from rollout import serving
    return serving.serve_run(dep, work, k, alpha, **given)


def simulate_run(dep, work, k=0, alpha=0.0, **given):
    """serving.simulate_run (afresh, past the run memo) as serve_run above takes it."""
    given = {"spread": main.SETTINGS.alpha_spread, "seed": main.SETTINGS.seed, **given}
    from rollout import serving
    return serving.simulate_run(dep, work, k, alpha, **given)


def replayed(**given):
    """The keywords the calibration's replays take (seed, spread): main.py's, unless given."""
    return {"seed": main.SETTINGS.seed, "spread": main.SETTINGS.alpha_spread, **given}


def calibrate_on_runs(dep, runs, fit=None, expected_alpha=None):
    """calibration.calibrate_on_runs at main.py's seed and spread, the lesson's alpha where a run has none."""
    from rollout import calibration, costmodel
    return calibration.calibrate_on_runs(dep, runs, fit or costmodel.FIT, expected_alpha or main.SETTINGS.expected_fallback,
                                         **replayed())
