"""bench/plant_bugs.py plants one bug at a time in a copy of main.py: every mutant must still apply (its snippet
occurs exactly once and the mutated file compiles), or a rename has silently turned it into "NOT APPLIED".

The mutation run itself (the whole suite once per mutant, about 40 s each on 2 cores) is the slow tier:
EAGLE3_ROLLOUT_SLOW=1 python -m unittest tests.test_mutants runs it and fails on a surviving mutant."""
import ast
import importlib.util
import itertools
import os
import unittest

from load_main import MAIN_PATH, ROOT


def load_plant_bugs():
    spec = importlib.util.spec_from_file_location("eagle3_plant_bugs", ROOT / "bench" / "plant_bugs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Mutants(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bugs = load_plant_bugs()
        cls.text = MAIN_PATH.read_text()

    def test_every_mutant_applies_once_and_compiles(self):
        # The file compiles, and a mutant changes one top-level statement (a def, a class, an assignment): it
        # compiles if that statement does, which is far cheaper than the whole file once per mutant.
        self.assertGreaterEqual(len(self.bugs.MUTANTS), 25)
        compile(self.text, str(MAIN_PATH), "exec")
        lines = self.text.splitlines(keepends=True)
        starts = [0, *itertools.accumulate(map(len, lines))]   # offset of each line's start
        spans = [(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]), node.end_lineno)
                 for node in ast.parse(self.text).body]
        for name, old, new in self.bugs.MUTANTS:
            with self.subTest(mutant=name):
                self.assertEqual(self.text.count(old), 1)
                self.assertNotEqual(old, new)
                at, end = self.text.index(old), self.text.index(old) + len(old)
                first, last = next((a, b) for a, b in spans if starts[a - 1] <= at and end <= starts[b])
                statement = self.text[starts[first - 1]:starts[last]]
                compile(statement.replace(old, new), f"{MAIN_PATH}:{first}", "exec")

    @unittest.skipUnless(os.environ.get("EAGLE3_ROLLOUT_SLOW"), "the mutation run is the slow tier")
    def test_no_mutant_survives(self):
        for index, (name, old, new) in enumerate(self.bugs.MUTANTS, 1):
            with self.subTest(mutant=name):
                self.assertNotIn("SURVIVED", self.bugs.run(index, name, old, new))


if __name__ == "__main__":
    unittest.main()
