"""bench/plant_bugs.py plants one bug at a time in a copy of main.py: every mutant must still apply (its snippet
occurs exactly once and the mutated file compiles), or a rename has silently turned it into "NOT APPLIED".

The mutation run itself (the whole suite once per mutant, about 40 s each on 2 cores) is the slow tier:
EAGLE3_ROLLOUT_SLOW=1 python -m unittest tests.test_mutants runs it and fails on a surviving mutant."""
import importlib.util
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
        self.assertGreaterEqual(len(self.bugs.MUTANTS), 25)
        for name, old, new in self.bugs.MUTANTS:
            with self.subTest(mutant=name):
                self.assertEqual(self.text.count(old), 1)
                self.assertNotEqual(old, new)
                compile(self.text.replace(old, new), str(MAIN_PATH), "exec")

    @unittest.skipUnless(os.environ.get("EAGLE3_ROLLOUT_SLOW"), "the mutation run is the slow tier")
    def test_no_mutant_survives(self):
        for index, (name, old, new) in enumerate(self.bugs.MUTANTS, 1):
            with self.subTest(mutant=name):
                self.assertNotIn("SURVIVED", self.bugs.run(index, name, old, new))


if __name__ == "__main__":
    unittest.main()
