"""The slow tier: the repository installs with pip and its command, eagle3-rollout, runs the same main() as
`python code/main.py`. Run by .ci/run after the README's command, and by hand:

    python tests/run.py -p "slow_*.py"

In a fresh virtual environment (python -m venv, in a temporary folder), `pip install COPY`, where COPY is a copy of
the repository without .git and without any earlier build's leftovers: the build writes build/ and
code/eagle3_rollout.egg-info into the tree it builds, so the checkout is left as it was. Then, from an empty
folder, `eagle3-rollout --no-write` prints byte for byte what `python code/main.py --no-write` prints from the
checkout, both exit 0, and `eagle3-rollout --help` exits 0.

The install is the plain one, with pip's build isolation: pip brings the build backend pyproject.toml names
(setuptools>=61) from the package index it is set up with, PyPI or a local one in pip's configuration. Nothing
else can stand in for that: a fresh venv's own setuptools builds no wheel by itself (Python 3.11 bundles
setuptools 65.5, which needs the `wheel` package a venv lacks; 3.12's venv has no setuptools), so
`pip install --no-build-isolation --no-index .` fails there too. pip's HTTP and wheel caches are left alone
(--no-cache-dir).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from support import ROOT, MAIN_PATH

SCRIPTS = "Scripts" if os.name == "nt" else "bin"
COMMAND = "eagle3-rollout"
DATA_SUFFIXES = (".py", ".json", ".md")   # what the installed package must hold of code/rollout/, in any subpackage


def left_out(folder, names):
    """shutil.copytree's ignore: git's folder, bytecode, and what a build or a test run leaves in the tree."""
    at_top = Path(folder).resolve() == ROOT
    return {name for name in names
            if name in (".git", "__pycache__", ".pytest_cache", ".benchmarks") or name.endswith((".pyc", ".egg-info"))
            or (at_top and name in ("build", "dist", ".venv", "venv"))}


def clean_env():
    """The environment without what would let a run import the checkout's code instead of the installed copy."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONUSERBASE"):
        env.pop(name, None)
    return env


def run(args, cwd, timeout=120):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=clean_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout)


class PipInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        temporary = tempfile.TemporaryDirectory(prefix="eagle3-install-")
        cls.addClassCleanup(temporary.cleanup)
        top = Path(temporary.name).resolve()
        cls.source, cls.venv, cls.elsewhere = top / "source", top / "venv", top / "elsewhere"
        shutil.copytree(ROOT, cls.source, ignore=left_out)
        cls.elsewhere.mkdir()
        made = run([sys.executable, "-m", "venv", cls.venv], cwd=top)
        if made.returncode != 0:
            raise AssertionError(f"python -m venv failed:\n{made.stderr.decode(errors='replace')}")
        cls.python = cls.venv / SCRIPTS / ("python.exe" if os.name == "nt" else "python")
        cls.command = cls.venv / SCRIPTS / (COMMAND + (".exe" if os.name == "nt" else ""))
        cls.install = run([cls.python, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
                           cls.source], cwd=cls.elsewhere, timeout=300)

    def setUp(self):
        self.assertEqual(self.install.returncode, 0, "pip install failed:\n" + self.install.stdout.decode(
            errors="replace")[-3000:] + self.install.stderr.decode(errors="replace")[-3000:])

    def test_the_command_prints_what_main_py_prints(self):
        installed = run([self.command, "--no-write"], cwd=self.elsewhere)
        checkout = run([sys.executable, MAIN_PATH, "--no-write"], cwd=ROOT)
        self.assertEqual(checkout.returncode, 0, checkout.stderr.decode(errors="replace"))
        self.assertEqual(installed.returncode, 0, installed.stderr.decode(errors="replace"))
        self.assertTrue(checkout.stdout.startswith(b"== Verdict"), checkout.stdout[:200])
        self.assertEqual(installed.stdout, checkout.stdout)

    def test_help_exits_0(self):
        shown = run([self.command, "--help"], cwd=self.elsewhere)
        self.assertEqual(shown.returncode, 0, shown.stderr.decode(errors="replace"))
        self.assertTrue(shown.stdout.startswith(b"usage:"), shown.stdout[:200])

    def test_a_bad_flag_exits_2(self):   # main()'s return value is the command's exit status
        refused = run([self.command, "--no-such-flag"], cwd=self.elsewhere)
        self.assertEqual(refused.returncode, 2, refused.stderr.decode(errors="replace"))

    def test_the_installed_package_is_the_one_run_and_holds_its_data(self):
        where = run([self.python, "-c", "import main, rollout; print(main.__file__); print(rollout.__file__)"],
                    cwd=self.elsewhere)
        self.assertEqual(where.returncode, 0, where.stderr.decode(errors="replace"))
        main_file, package_init = (Path(line).resolve() for line in where.stdout.decode().splitlines())
        for path in (main_file, package_init):
            self.assertTrue(path.is_relative_to(self.venv), f"{path} is not inside the venv {self.venv}")
        package = package_init.parent
        source = ROOT / "code" / "rollout"
        wanted = sorted(p.relative_to(source) for p in source.rglob("*")
                        if p.suffix in DATA_SUFFIXES and p.is_file() and "__pycache__" not in p.parts)
        self.assertIn(Path("acceptance_table.json"), wanted)
        self.assertIn(Path("held_out_errors.json"), wanted)
        missing = [str(p) for p in wanted if not (package / p).is_file()]
        self.assertEqual(missing, [], f"not installed with the package at {package}")


if __name__ == "__main__":
    unittest.main()
