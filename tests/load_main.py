"""Load code/main.py by path: a folder named `code` would shadow the standard library's module."""
import contextlib
import importlib.util
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAIN_PATH = ROOT / "code" / "main.py"


def load_main():
    if "eagle3_main" in sys.modules:
        return sys.modules["eagle3_main"]
    spec = importlib.util.spec_from_file_location("eagle3_main", MAIN_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["eagle3_main"] = module   # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


def run(argv):
    """main(argv) in-process: (exit status, stdout, stderr)."""
    main = load_main()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main.main(argv)
    return status, out.getvalue(), err.getvalue()
