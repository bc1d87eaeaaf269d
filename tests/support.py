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
