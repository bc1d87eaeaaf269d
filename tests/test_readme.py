"""README.md: at most 20,000 bytes, every count it states read from the code, every relative link resolving.

A count is a number (digits or a word, "four") next to one of the nouns below: "four SVG charts", "five exercises".
Each is compared with the code's own value, so a README that states a count the code does not bear out fails here,
wherever in the README it is written. The values are found by name anywhere in code/rollout/, not in a named module,
so that moving a definition between modules does not break this file."""
import importlib
import importlib.util
import pkgutil
import re
import unittest
from functools import lru_cache

from support import ROOT

import main
import rollout

README = ROOT / "README.md"
LIMIT_BYTES = 20_000
PLAN = ROOT / "outputs" / "skill-eagle3-rollout.md"

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
         "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}
NUMBER = r"\b(\d[\d,]*|" + "|".join(WORDS) + r")"


def number(text):
    text = text.lower().replace(",", "")
    return WORDS[text] if text in WORDS else int(text)


def readme():
    return README.read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def package_attribute(name):
    """The one object called `name` in the modules of code/rollout/ (a module that imports it holds the same)."""
    found = {}
    for info in pkgutil.walk_packages(rollout.__path__, "rollout."):
        module = importlib.import_module(info.name)
        if name in vars(module):
            found[id(vars(module)[name])] = vars(module)[name]
    if len(found) != 1:
        raise LookupError(f"{name}: {len(found)} different objects of that name in code/rollout/")
    return next(iter(found.values()))


def chart_count():
    return len(package_attribute("CHART_FILES"))


def flag_count():
    """Options of the command line, --help aside."""
    parser = package_attribute("build_parser")(main.SETTINGS)
    return sum(1 for action in parser._actions if action.option_strings and "--help" not in action.option_strings)


def exercise_count():
    """The exercises the run answers: the distinct "== Exercise N" headings the code prints."""
    code = ROOT / "code"
    numbers = {n for path in code.rglob("*.py") for n in re.findall(r"== Exercise (\d+)", path.read_text())}
    if not numbers:
        raise LookupError('no "== Exercise N" heading in code/: how does the run print its exercises now?')
    return len(numbers)


def engine_count():
    return len(package_attribute("ENGINES"))


def draft_kind_count():
    """The kinds of --draft besides a catalog model: eagle3, eagle, ngram, mtp, model."""
    return len(package_attribute("DRAFTS"))


def planted_bug_count():
    spec = importlib.util.spec_from_file_location("plant_bugs", ROOT / "bench" / "plant_bugs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return len(module.MUTANTS)


def suite_count():
    """The fast tier's tests, as `python -m unittest discover -s tests` counts them."""
    return unittest.defaultTestLoader.discover(str(ROOT / "tests")).countTestCases()


# noun (a regular expression after the number) -> the code's value, computed only if the README states that count.
COUNTS = {
    "charts": (r"(?:SVG\s+)?charts?\b|`?chart-\*\.svg`?\s+files\b", chart_count),
    "flags": (r"(?:command-line\s+)?(?:flags?|options)\b", flag_count),
    "exercises": (r"exercises?\b", exercise_count),
    "engines": (r"(?:serving\s+)?engines?\b", engine_count),
    "draft kinds": (r"(?:draft\s+kinds?|kinds\s+of\s+drafts?)\b", draft_kind_count),
    "planted bugs": (r"(?:planted\s+)?bugs\b|mutants\b", planted_bug_count),
    "tests": (r"(?:unit\s+)?tests\b", suite_count),
}


def stated(noun_pattern, text=None):
    """Every number README states next to the noun: [(the number as written, the number)]."""
    text = readme() if text is None else text
    return [(m.group(0), number(m.group(1)))
            for m in re.finditer(NUMBER + r"\s+(?:" + noun_pattern + ")", text, flags=re.IGNORECASE)]


class Size(unittest.TestCase):
    def test_readme_is_at_most_20_kb(self):
        size = README.stat().st_size
        self.assertLessEqual(size, LIMIT_BYTES, f"README.md is {size:,} bytes: move detail to MODEL.md or FIT.md")


class Counts(unittest.TestCase):
    def test_every_count_is_the_codes(self):
        for noun, (pattern, value) in COUNTS.items():
            claims = stated(pattern)
            if not claims:
                continue
            want = value()
            for written, claimed in claims:
                with self.subTest(noun=noun, written=written):
                    self.assertEqual(claimed, want, f"README says {written!r}; the code has {want} {noun}")

    def test_the_chart_count_is_stated_and_the_default_run_writes_that_many(self):
        self.assertTrue(stated(COUNTS["charts"][0]), "README no longer says how many charts the run writes")
        names = set(package_attribute("CHART_FILES").values())
        written = {path.name for path in (ROOT / "outputs").glob("chart-*.svg")}
        self.assertEqual(written, names)
        self.assertEqual(len(names), chart_count())

    def test_the_matcher_reads_numbers_next_to_their_nouns(self):
        # The matcher itself, so that a count written another way is not silently let through.
        self.assertEqual(stated(COUNTS["charts"][0], "writes the plan and 3 SVG charts"), [("3 SVG charts", 3)])
        self.assertEqual(stated(COUNTS["charts"][0], "and four\ncharts:"), [("four\ncharts", 4)])
        self.assertEqual(stated(COUNTS["flags"][0], "It takes 1,024 flags"), [("1,024 flags", 1024)])
        self.assertEqual(stated(COUNTS["planted bugs"][0], "(48 planted bugs)"), [("48 planted bugs", 48)])
        self.assertEqual(stated(COUNTS["exercises"][0], "the lesson's exercises"), [])

    def test_calibration_runs_are_those_the_plan_asks_for(self):
        # "stage 0 benchmarks speculation off at three concurrencies ..., and stage 1 speculation on at two Ks":
        # the default plan's --calibrate line names the files of both.
        text = readme()
        line = re.search(r"--calibrate (\S*baseline_c\S+)", PLAN.read_text()).group(1)
        baselines = set(re.findall(r"baseline_c(\d+)\.json", line))
        ks = set(re.findall(r"spec_k(\d+)_c\d+\.json", line))
        concurrencies = re.findall(NUMBER + r"\s+concurrencies\s+\(1, the geometric middle", text)
        stated_ks = re.findall(r"speculation on at " + NUMBER + r"\s+Ks\b", text)
        self.assertTrue(concurrencies and stated_ks, "README no longer states the calibration runs this test reads")
        for word in concurrencies:
            self.assertEqual(number(word), len(baselines), line)
        for word in stated_ks:
            self.assertEqual(number(word), len(ks), line)

    def test_interval_level(self):
        level = round(package_attribute("INTERVAL_LEVEL") * 100)
        claims = re.findall(r"\b(\d+)% (?:range|interval)", readme())
        self.assertTrue(claims)
        for claim in claims:
            self.assertEqual(int(claim), level)

    def test_every_engine_is_named(self):
        text = readme()
        for key, engine in package_attribute("ENGINES").items():
            self.assertIn(getattr(engine, "name", key), text)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    heads, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            heads.add(slug(line.lstrip("#")))
    return heads


class Links(unittest.TestCase):
    def test_relative_links_and_their_anchors_exist(self):
        text = readme()
        links = re.findall(r"\]\(([^)\s]+)\)", text)
        self.assertTrue(links)
        for link in links:
            if re.match(r"[a-z]+:", link):
                continue
            target, _, anchor = link.partition("#")
            path = README if not target else (README.parent / target)
            with self.subTest(link=link):
                self.assertTrue(path.exists(), link)
                if anchor and path.suffix == ".md":
                    self.assertIn(anchor, anchors(path), link)


class Commands(unittest.TestCase):
    def test_the_run_the_tests_and_the_slow_tier(self):
        text = readme()
        self.assertIn("\npython code/main.py ", text)
        self.assertIn("\npython tests/run.py ", text)
        self.assertIn('python tests/run.py -p "slow_*.py"', " ".join(text.split()))

    def test_ci_runs_the_readmes_commands(self):
        ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        self.assertIn("\npython tests/run.py 2>&1", ci)
        self.assertIn('\npython tests/run.py -p "slow_*.py" 2>&1', ci)
        self.assertIn("\npython code/main.py ", ci)

    def test_the_runner_runs_what_unittest_discovers(self):
        import run
        discovered = {test.id().split(".")[0] for test in iterate(unittest.defaultTestLoader.discover(str(ROOT / "tests")))}
        self.assertEqual({name for name in run.modules("test*.py")}, discovered)


def iterate(suite):
    """The test cases of a suite, its nested suites opened."""
    for item in suite:
        yield from iterate(item) if isinstance(item, unittest.TestSuite) else (item,)


if __name__ == "__main__":
    unittest.main()
