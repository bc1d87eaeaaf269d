"""The package's shape, read from its files: imports go one way, the renderers and the command line keep out of the
simulation, no module imports main.py, every module stays short, no function takes more than 8 positional
parameters, no record but a catalog row has more than 30 fields, and main.py's constants are the only place a
setting's default is written (the package takes its Settings and keeps no default of its own). Each rule is also
shown to fail on a planted violation, so that none of them holds by accident."""
import ast
import dataclasses
import importlib
import inspect
import unittest

from support import CODE, MAIN_PATH

import rollout

PACKAGE = CODE / "rollout"
# What a renderer may not import: what computes (the cost model, the simulation, the serving and SLO runs, the
# decisions, the fits) and the stages above it. It reads the Report and the records.
COMPUTES = {"costmodel", "experts", "simulation", "serving", "goodput", "analysis", "calibration", "exercises",
            "decide", "readers", "hfconfig"}
RENDER_FORBIDDEN = COMPUTES | {"cli", "writes"}
CLI_FORBIDDEN = {"simulation", "serving", "goodput", "analysis", "calibration", "exercises", "decide", "costmodel"}
MODULE_LINES = 800
MAIN_LINES = 350
POSITIONAL = 8
RECORD_FIELDS = 30
CATALOG_ROWS = {"rollout.catalog.Engine", "rollout.catalog.Era"}   # one row of the catalog each: a table's columns


def path_of(name):
    """The file of a module named as rollout.MODULES names it ("render.tables", "render" is render/__init__.py)."""
    parts = name.split(".")
    if parts == ["render"]:
        return PACKAGE / "render" / "__init__.py"
    return PACKAGE.joinpath(*parts[:-1], parts[-1] + ".py")


def imports(source, name):
    """(line, module imported, as a rollout.MODULES name or "main"/"rollout.*") of every import in a module's source,
    lazy ones inside functions included."""
    package = name.split(".")[:-1] if name != "render" else ["render"]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:   # from . import x
                    target = ".".join(base + [node.names[0].name])
                found.append((node.lineno, target))
            else:
                found.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def violations(sources):
    """Every import against the rules, as (module, line, what), for {module name: source}."""
    order = {name: rank for rank, name in enumerate(rollout.MODULES)}
    wrong = []
    for name, source in sources.items():
        for line, target in imports(source, name):
            top = target.split(".")[0]
            if top in ("main", "rollout") or target.startswith("rollout."):
                wrong.append((name, line, f"imports {target}: the package imports itself relatively, never main"))
                continue
            if target not in order:
                continue   # the standard library
            if order[target] >= order[name] and not (name == "render" and target.startswith("render.")):
                wrong.append((name, line, f"imports {target}, which is not below it"))
            if (name == "render" or name.startswith("render.")) and top in RENDER_FORBIDDEN:
                wrong.append((name, line, f"a renderer imports {target}: it reads the Report, it computes nothing"))
            if name == "cli" and top in CLI_FORBIDDEN:
                wrong.append((name, line, f"the command line imports {target}: parsing simulates nothing"))
    return wrong


SOURCES = {}


def package_sources():
    """{module name: source} of every package module, read once (callers plant into a copy)."""
    if not SOURCES:
        SOURCES.update({name: path_of(name).read_text() for name in rollout.MODULES})
    return dict(SOURCES)


class Imports(unittest.TestCase):
    def test_every_module_is_listed_once(self):
        on_disk = sorted(str(p.relative_to(PACKAGE).with_suffix("")).replace("/", ".").replace(".__init__", "")
                         for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)
        self.assertEqual(on_disk, sorted(rollout.MODULES))

    def test_imports_go_one_way_and_the_renderers_and_cli_compute_nothing(self):
        self.assertEqual(violations(package_sources()), [])

    def test_main_imports_the_package_and_nothing_imports_main(self):
        for line, target in imports(MAIN_PATH.read_text(), "main"):
            if target.startswith("rollout"):
                self.assertIn(target.split(".", 1)[1], rollout.MODULES, line)

    def test_each_rule_fails_on_a_planted_import(self):
        sources = package_sources()
        for name, planted, words in (("render.plan", "from ..costmodel import FIT\n", "a renderer imports costmodel"),
                                     ("render.tables", "from ..simulation import NORMAL\n", "a renderer imports"),
                                     ("render.export", "from ..serving import serve_run\n", "a renderer imports"),
                                     ("cli", "from .simulation import NORMAL\n", "the command line imports"),
                                     ("cli", "from .goodput import search_slo\n", "the command line imports"),
                                     ("costmodel", "import main\n", "never main"),
                                     ("catalog", "from .costmodel import FIT\n", "not below it")):
            with self.subTest(name=name, planted=planted):
                found = violations({name: sources[name] + "\n" + planted})   # the planted module alone
                self.assertTrue(any(words in what for module, _, what in found if module == name), found)


def too_long(sources):
    """Modules past MODULE_LINES lines, for {module name: source}."""
    return [name for name, source in sources.items() if len(source.splitlines()) > MODULE_LINES]


def too_many_positional(sources):
    """(module, function, count) of every function with more than POSITIONAL positional parameters."""
    wide = []
    for name, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                positional = len(node.args.posonlyargs) + len(node.args.args)
                if positional > POSITIONAL:
                    wide.append((name, node.name, positional))
    return wide


def setting_names():
    """The settings main.py's constants hold, by field name (lower case): flags.Settings and DeploymentSettings."""
    from rollout import flags
    return {f.name for record in (flags.Settings, flags.DeploymentSettings) for f in dataclasses.fields(record)
            if f.name != "deployment"}


def holds_a_value(node):
    """Whether a default (an expression, or field(default=...)) is a value, not None ("not given")."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return False
    if isinstance(node, ast.Tuple) and not node.elts:   # (): none at all (no SLO, no concurrencies)
        return False
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        given = {k.arg: k.value for k in node.keywords}
        return holds_a_value(given.get("default")) or "default_factory" in given
    return True


# Names a setting shares with something else, whose default is that other thing's. A Workload's prompt spread is a
# benchmark's own lengths (0: `--dataset-name random` prompts, every one of a length), not the traffic's;
# Counters.engine is the format of the /metrics text its counters were read from; Run.burstiness is a measured
# file's own.
NOT_THE_SETTING = {("workload", "Workload", "input_spread"), ("readers", "Counters", "engine"),
                   ("benchfiles", "Run", "burstiness")}


def package_defaults(sources):
    """(module, where, name) of every default of a setting the package writes: a module constant named as main.py's
    (SEED), a parameter or a record's field named as a setting (seed=0) whose default is not None."""
    names = setting_names()
    found = []
    for module, source in sources.items():
        tree = ast.parse(source)
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            found += [(module, "module", t.id) for t in targets if isinstance(t, ast.Name) and t.id.lower() in names]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                plain = args.posonlyargs + args.args
                pairs = list(zip(plain[len(plain) - len(args.defaults):], args.defaults))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
                found += [(module, node.name, a.arg) for a, d in pairs if a.arg in names and holds_a_value(d)]
            elif isinstance(node, ast.ClassDef):
                found += [(module, node.name, item.target.id) for item in node.body
                          if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                          and item.target.id in names and holds_a_value(item.value)]
    return [where for where in found if where not in NOT_THE_SETTING]


class Sizes(unittest.TestCase):
    def test_every_module_stays_short(self):
        self.assertEqual(too_long(package_sources()), [])
        self.assertLessEqual(len(MAIN_PATH.read_text().splitlines()), MAIN_LINES)

    def test_no_function_takes_more_than_eight_positional_parameters(self):
        self.assertEqual(too_many_positional(package_sources()), [])

    def test_each_size_rule_fails_on_a_planted_violation(self):
        sources = package_sources()
        self.assertEqual(too_long({"trust": sources["trust"] + "\n" * MODULE_LINES}), ["trust"])
        wide = "def wide(a, b, c, d, e, f, g, h, i):\n    return a\n"
        self.assertEqual(too_many_positional({"trust": sources["trust"] + wide}), [("trust", "wide", 9)])

    def test_no_record_but_a_catalog_row_has_more_than_thirty_fields(self):
        wide = []
        for name in rollout.MODULES:
            module = importlib.import_module(f"rollout.{name}")
            for _, cls in inspect.getmembers(module, inspect.isclass):
                qualified = f"{cls.__module__}.{cls.__qualname__}"
                if cls.__module__ == module.__name__ and dataclasses.is_dataclass(cls) and qualified not in CATALOG_ROWS:
                    if len(dataclasses.fields(cls)) > RECORD_FIELDS:
                        wide.append((qualified, len(dataclasses.fields(cls))))
        self.assertEqual(wide, [])



class OnePlacePerSetting(unittest.TestCase):
    def test_the_package_writes_no_default_of_a_setting(self):
        self.assertEqual(package_defaults(package_sources()), [])

    def test_it_fails_on_a_planted_default(self):
        sources = package_sources()
        for planted, where in (("SEED = 0\n", ("trust", "module", "SEED")),
                               ("def f(dep, seed=0):\n    return seed\n", ("trust", "f", "seed")),
                               ("def f(dep, *, alpha_spread=0.11):\n    return 0\n", ("trust", "f", "alpha_spread")),
                               ("class R:\n    engine: str = 'vllm'\n", ("trust", "R", "engine"))):
            with self.subTest(planted=planted):
                self.assertIn(where, package_defaults({"trust": sources["trust"] + "\n" + planted}))

    def test_main_writes_each_setting_once(self):
        written = [t.id for node in ast.parse(MAIN_PATH.read_text()).body if isinstance(node, ast.Assign)
                   for t in node.targets if isinstance(t, ast.Name)]
        for name in sorted(setting_names()):
            with self.subTest(setting=name):
                self.assertEqual(written.count(name.upper()), 1)


if __name__ == "__main__":
    unittest.main()
