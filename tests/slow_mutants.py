"""bench/plant_bugs.py plants one bug at a time in a copy of the code: every mutant must still apply (its snippet
occurs exactly once in the definition it names, and the mutated statement compiles), or a rename has silently turned
it into "NOT APPLIED".

This module is in the slow tier (tests/slow_*.py, which .ci/run runs after the README's command). The mutation run
itself (both tiers once per mutant, about a minute and a half each on 2 cores) is the manual tier:
EAGLE3_ROLLOUT_SLOW=1 python -m unittest discover -s tests -p slow_mutants.py runs it and fails on a surviving
mutant."""
import importlib.util
import os
import textwrap
import unittest

from support import CODE, ROOT


def load_plant_bugs():
    spec = importlib.util.spec_from_file_location("eagle3_plant_bugs", ROOT / "bench" / "plant_bugs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Mutants(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bugs = load_plant_bugs()

    def test_every_mutant_applies_once_and_compiles(self):
        # A mutant names a top-level statement (a def, a class, an assignment) and changes one snippet inside it:
        # the mutated file compiles if that statement does, far cheaper than the whole file once per mutant.
        self.assertGreaterEqual(len(self.bugs.MUTANTS), 25)
        for name, target, old, new in self.bugs.MUTANTS:
            with self.subTest(mutant=name):
                self.assertNotEqual(old, new)
                path, text, start, end = self.bugs.source_of(CODE, target)
                self.assertEqual(text[start:end].count(old), 1, target)
                compile(textwrap.dedent(text[start:end].replace(old, new)), f"{path}:{target}", "exec")
                self.assertIsNotNone(self.bugs.planted(CODE, target, old, new))

    @unittest.skipUnless(os.environ.get("EAGLE3_ROLLOUT_SLOW"), "the mutation run is the manual tier")
    def test_no_mutant_survives(self):
        for index, (name, target, old, new) in enumerate(self.bugs.MUTANTS, 1):
            with self.subTest(mutant=name):
                self.assertNotIn("SURVIVED", self.bugs.run(index, name, target, old, new))


if __name__ == "__main__":
    unittest.main()
