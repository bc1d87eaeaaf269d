"""Build tests/fixtures/engine_releases.json: what each engine release's own parsers accept, read from its package.

For each covered release of vLLM and SGLang, from the package's sources (never from this program's output):
- vLLM: the flags `vllm serve` defines (every "--flag" literal of vllm/engine/arg_utils.py and the OpenAI server's
  cli_args.py), the flags `vllm bench serve` defines (vllm/benchmarks/), SpeculativeConfig's fields (the JSON keys
  of --speculative-config), its method values (the Literal types of its config module) and the environment
  variables vllm/envs.py reads;
- SGLang: the flags `python -m sglang.launch_server` defines: "--flag" literals of python/sglang/srt/server_args.py
  and its arg_groups, and, where flags are dataclass fields (0.5.14 on), "--" and each field's name with hyphens;
  the --speculative-algorithm values its speculative module names; and the variables srt/environ.py reads (before
  0.5.3, which has none, every "SGLANG_..." string constant of srt/).
And, beside those:
- vLLM: the flags the legacy `python benchmarks/benchmark_serving.py` defines (its add_argument calls; the file is not
  in the wheel but in the source tree, whose copy is the sdist vllm-X.tar.gz on PyPI: give its unpacked folder after a
  comma), the flags `vllm bench serve`'s own parser defines (serve.py's add_cli_args and the functions it calls, where
  "vllm bench serve" above is every flag literal of vllm/benchmarks/, other subcommands' included), each benchmark's
  choices and constant defaults, the keys its saved result holds and the spelling of its goodput key
  ("request_goodput:" or "request_goodput"), with the file and line;
- SGLang: the speculative Prometheus metrics it defines (name="sglang:spec..." and the like, with file and line), and
  the code that computes the spec_accept_rate gauge (file, lines and text; null where the release has no such gauge).
TensorRT-LLM's wheels are too large to fetch here; its entries in the fixture were written by hand from llm_args.py
and serve.py as read at each release (tests/fixtures/engine_releases.json says where), and this script keeps them.

    mkdir -p /tmp/wheels/tmp && cd /tmp/wheels
    pip download vllm==0.34.0 --no-deps -d .      # and 0.22.0, 0.10.0: one at a time, ~400 MB each
    pip download sglang==0.5.23 sglang==0.5.4 --no-deps -d .
    for w in *.whl; do d=$(echo "$w" | cut -d- -f1-2); mkdir -p "$d" && unzip -q -o "$w" "${d%%-*}/*" -d "$d"; done
    # vLLM's benchmarks/ folder is in its sdist only; pip unpacks it and, as its metadata cannot be built here,
    # stops, leaving the unpacked tree behind with --no-clean:
    TMPDIR=/tmp/wheels/tmp pip download vllm==0.9.1 --no-deps --no-binary vllm --no-build-isolation --no-clean -d .
    mv /tmp/wheels/tmp/pip-download-*/vllm_* vllm-0.9.1-sdist      # PKG-INFO there says Version: 0.9.1
    python bench/engine_flags.py vllm:0.34.0=/tmp/wheels/vllm-0.34.0,/tmp/wheels/vllm-0.34.0-sdist \\
        vllm:0.9.1=/tmp/wheels/vllm-0.9.1,/tmp/wheels/vllm-0.9.1-sdist ... \\
        sglang:0.5.23=/tmp/wheels/sglang-0.5.23 sglang:0.5.4=/tmp/wheels/sglang-0.5.4

Standard library only. It rewrites the vLLM and SGLang releases it is given and keeps every other entry.
"""
import ast
import json
import re
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "engine_releases.json"
FLAG = re.compile(r"--[a-z][a-z0-9_-]*")


def literals(paths):
    """Every string constant of the files that is a flag ("--name")."""
    found = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and FLAG.fullmatch(node.value):
                found.add(node.value)
    return found


def fields(path, class_name=None):
    """The annotated field names of a module's classes (of one class, when named)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and class_name in (None, node.name):
            found |= {st.target.id for st in node.body if isinstance(st, ast.AnnAssign)
                      and isinstance(st.target, ast.Name)}
    return found


def literal_values(path, name_pattern):
    """The strings of module-level `Name = Literal[...]` assignments whose name matches."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and re.fullmatch(name_pattern, node.targets[0].id)):
            found |= {c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return found


def parse(path):
    """A file's syntax tree (a leading byte-order mark allowed), or an empty module, said on stderr, where this Python
    cannot parse it."""
    try:
        return ast.parse(path.read_text(encoding="utf-8-sig"))
    except SyntaxError as error:
        print(f"{path}: not parsed ({error.msg}, line {error.lineno}); its strings are not read", file=sys.stderr)
        return ast.Module(body=[], type_ignores=[])


def relative(path, root):
    """A file's path inside the package or source tree, as its repository names it."""
    return path.relative_to(root).as_posix()


def value(node, dicts):
    """A node's constant value (a list for a list or tuple of constants, a dict's keys for list(NAME.keys()) of a
    module-level dict literal), or None when it is not one."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in node.elts):
        return [e.value for e in node.elts]
    text = ast.unparse(node)
    keys = re.fullmatch(r"list\((\w+)\.keys\(\)\)|(\w+)", text)
    name = keys and (keys.group(1) or keys.group(2))
    if name in dicts:
        return list(dicts[name])
    return None


def module_dicts(paths):
    """The module-level `NAME = {"key": ...}` literals of the files: {NAME: [keys]}."""
    found = {}
    for path in paths:
        for node in parse(path).body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
                node.target if isinstance(node, ast.AnnAssign) else None)
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict):
                keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
                if keys:
                    found[target.id] = keys
    return found


def arguments(functions, dicts):
    """The add_argument calls of the functions (nodes): ({flag: "file:line" of its string}, {flag: choices},
    {flag: default}). A BooleanOptionalAction flag adds its --no- twin, as argparse does."""
    where, choices, defaults = {}, {}, {}
    for node, path in functions:
        for call in ast.walk(node):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "add_argument"):
                continue
            names = [(a.value, a.lineno) for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                     and FLAG.fullmatch(a.value)]
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            if "BooleanOptionalAction" in ast.unparse(kw.get("action", ast.Constant(None))):
                names += [("--no-" + n[2:], line) for n, line in names]
            for name, line in names:
                where.setdefault(name, f"{path}:{line}")
                if "choices" in kw and value(kw["choices"], dicts) is not None:
                    choices[name] = value(kw["choices"], dicts)
                if "default" in kw and isinstance(kw["default"], ast.Constant):
                    defaults[name] = kw["default"].value
    return where, choices, defaults


def parser_functions(root, files, start_file, start):
    """The function `start` of start_file and, transitively, the module-level functions it calls by name that one of
    the files defines (all of them, where several files define the name): [(node, relative path)]."""
    defs = {}
    for path in files:
        for node in parse(path).body:
            if isinstance(node, ast.FunctionDef):
                defs.setdefault(node.name, []).append((node, relative(path, root)))
    first = [(n, relative(start_file, root)) for n in parse(start_file).body
             if isinstance(n, ast.FunctionDef) and n.name == start]
    seen, todo, out = set(), list(first), []
    while todo:
        node, path = todo.pop()
        if (path, node.name) in seen:
            continue
        seen.add((path, node.name))
        out.append((node, path))
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id != start:
                todo += defs.get(call.func.id, [])
    return out


def result_keys(path, root):
    """What a benchmark's saved result holds: the constant keys of `result = {...}` and of result[...] = and
    result_json[...] = (an f-string key as its template), and where the goodput key is written."""
    keys, goodput = set(), None
    for node in ast.walk(parse(path)):
        found = []
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id in ("result", "result_json") for t in node.targets)):
            found = [k for k in node.value.keys if k is not None]
        elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
              and node.value.id in ("result", "result_json")):
            found = [node.slice]
        for key in found:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
                if re.fullmatch(r"request_goodput:?", key.value):
                    goodput = {"key": key.value, "at": f"{relative(path, root)}:{key.lineno}"}
            elif isinstance(key, ast.JoinedStr):
                keys.add(ast.unparse(key))
    return sorted(keys), goodput


def benchmark(root, files, main_file, start):
    """One benchmark's parser (from the function `start` of main_file) and result, as the fixture records them."""
    where, choices, defaults = arguments(parser_functions(root, files, main_file, start), module_dicts(files))
    keys, goodput = result_keys(main_file, root)
    return sorted(where), {"choices": choices, "defaults": defaults, "result keys": keys, "goodput result key": goodput,
                           "parser": relative(main_file, root) + f", {start}"}


def legacy_benchmark(source):
    """vLLM's benchmarks/benchmark_serving.py in a source tree (the sdist), read as the bench serve client is, its
    parser being every add_argument call of the file (built under `if __name__ == "__main__":`, or in a function of
    it); None when the tree has no such file; its flags empty where it is the stub that points to `vllm bench serve`."""
    path = source / "benchmarks" / "benchmark_serving.py"
    if not path.exists():
        return None
    where, choices, defaults = arguments([(parse(path), relative(path, source))],
                                         module_dicts(sorted((source / "benchmarks").glob("*.py"))))
    keys, goodput = result_keys(path, source)
    facts = {"choices": choices, "defaults": defaults, "result keys": keys, "goodput result key": goodput,
             "parser": relative(path, source) + ", every add_argument call"}
    if not where:
        facts["stub"] = " ".join(path.read_text(encoding="utf-8").split())[:300]
    version = re.search(r"^Version: (.+)$", (source / "PKG-INFO").read_text(encoding="utf-8"), re.M) \
        if (source / "PKG-INFO").exists() else None
    facts["source tree"] = f"the sdist, whose PKG-INFO says Version: {version.group(1)}" if version else str(source)
    return sorted(where), facts


def vllm(root, source=None):
    pkg = root / "vllm"
    config = pkg / "config" / "speculative.py"
    if not config.exists():
        config = pkg / "config.py"
    serve = [pkg / "engine" / "arg_utils.py", *sorted((pkg / "entrypoints").rglob("cli_args.py"))]
    env = set(re.findall(r'"(VLLM_[A-Z0-9_]+)"\s*:', (pkg / "envs.py").read_text(encoding="utf-8")))
    return {"vllm serve": sorted(literals(serve)),
            "vllm bench serve": sorted(literals(sorted((pkg / "benchmarks").rglob("*.py")))),
            "--speculative-config keys": sorted(fields(config, "SpeculativeConfig")),
            "--speculative-config methods": sorted(literal_values(config, r"SpeculativeMethod|\w*ModelTypes|\w*Types")
                                                   | compared_methods(config)),
            "environment": sorted(env), **vllm_benchmarks(root, source)}


def compared_methods(path):
    """The method names SpeculativeConfig's own code compares self.method with (`self.method == "eagle3"`,
    `self.method in ("eagle", "eagle3")`): before its Literal listed eagle3 (0.9.1), 0.8.5's config took it this way,
    the Literal being a type hint no one checks at run time."""
    found = set()
    for node in ast.walk(parse(path)):
        if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "method"
                and isinstance(node.left.value, ast.Name) and node.left.value.id == "self"):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, (ast.Eq, ast.In)):
                    found |= {c.value for c in ast.walk(right) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                              and re.fullmatch(r"[a-z][a-z0-9_]*", c.value)}
    return found


def vllm_benchmarks(root, source):
    """The benchmarks' own parsers and results: `vllm bench serve` (vllm/benchmarks/serve.py's add_cli_args) and,
    where the source tree is given and has it, `python benchmarks/benchmark_serving.py`."""
    bench = root / "vllm" / "benchmarks"
    flags, facts = benchmark(root, sorted(bench.rglob("*.py")), bench / "serve.py", "add_cli_args")
    out = {"parsed by vllm bench serve": flags, "benchmark facts": {"vllm bench serve": facts}}
    legacy = legacy_benchmark(source) if source else None
    if legacy:
        out["python benchmarks/benchmark_serving.py"] = legacy[0]
        out["benchmark facts"]["python benchmarks/benchmark_serving.py"] = legacy[1]
    return out


def sglang_metrics(root):
    """SGLang's speculative Prometheus metrics ({name: "file:line"}, from the name= of each metric's constructor) and
    the code that computes its spec_accept_rate gauge: the branch of the decode log that assigns spec_accept_rate a
    computed value, from its first statement to that assignment ({"at": "file:first-last", "code": [...]}), or None
    where no such code is."""
    metrics, rate = {}, None
    for path in sorted((root / "sglang" / "srt").rglob("*.py")):
        text = path.read_text(encoding="utf-8-sig")
        if "sglang:" not in text and "spec_accept_rate" not in text:
            continue
        tree, lines = parse(path), text.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for k in node.keywords:
                    if (k.arg == "name" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str)
                            and re.fullmatch(r"sglang:\w*(spec|accept|draft)\w*", k.value.value)):
                        metrics.setdefault(k.value.value, f"{relative(path, root)}:{k.value.lineno}")
            if isinstance(node, ast.If) and rate is None:
                for i, st in enumerate(node.orelse):
                    if (isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "spec_accept_rate"
                                                           for t in st.targets)
                            and not isinstance(st.value, ast.Constant)):
                        first = node.orelse[0].lineno
                        code = [line.strip() for line in lines[first - 1:st.end_lineno]]
                        rate = {"at": f"{relative(path, root)}:{first}-{st.end_lineno}",
                                "code": [c for c in code if c and not c.startswith("#")]}
    return {"Prometheus speculative metrics": metrics, "spec_accept_rate computed": rate}


def sglang(root):
    srt = root / "sglang" / "srt"
    files = [srt / "server_args.py", *sorted((srt / "arg_groups").rglob("*.py"))]
    flags = literals(files)
    for path in files:
        flags |= {"--" + name.replace("_", "-") for name in fields(path) if not name.startswith("_")}
    algorithms = set()
    for path in sorted((srt / "speculative").rglob("*.py")):
        algorithms |= set(re.findall(r'\b(EAGLE3?|NEXTN|STANDALONE|NGRAM|LOOKAHEAD)\b', path.read_text(encoding="utf-8")))
    if (srt / "environ.py").exists():
        env = set(re.findall(r"^\s+(SGLANG_[A-Z0-9_]+)\s*=", (srt / "environ.py").read_text(encoding="utf-8"), re.M))
    else:   # before 0.5.3 no environ.py: every "SGLANG_..." string of srt/, where each variable is read
        env = {node.value for path in sorted(srt.rglob("*.py"))
               for node in ast.walk(parse(path))
               if isinstance(node, ast.Constant) and isinstance(node.value, str)
               and re.fullmatch(r"SGLANG_[A-Z0-9_]+", node.value)}
    return {"python -m sglang.launch_server": sorted(flags), "--speculative-algorithm values": sorted(algorithms),
            "environment": sorted(env), **sglang_metrics(root)}


def main(argv):
    if not argv or not all(re.fullmatch(r"(vllm|sglang):[0-9][0-9.]*=.+", a) for a in argv):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    data = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    for arg in argv:
        spec, paths = arg.split("=", 1)
        engine, version = spec.split(":")
        path, _, source = paths.partition(",")
        if engine == "vllm":
            entry = vllm(Path(path), Path(source) if source else None)
        else:
            entry = sglang(Path(path))
        entry["source"] = f"read from the {engine} {version} package's sources by bench/engine_flags.py" + (
            f"; benchmarks/ from its sdist, vllm-{version}.tar.gz on PyPI" if source else "")
        data.setdefault(engine, {})[version] = entry
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
