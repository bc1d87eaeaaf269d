"""Build tests/fixtures/engine_releases.json: what each engine release's own parsers accept, read from its package.

For each covered release of vLLM and SGLang, from the package's sources (never from this program's output):
- vLLM: the flags `vllm serve` defines (every "--flag" literal of vllm/engine/arg_utils.py and the OpenAI server's
  cli_args.py), the flags `vllm bench serve` defines (vllm/benchmarks/), SpeculativeConfig's fields (the JSON keys
  of --speculative-config), its method values (the Literal types of its config module) and the environment
  variables vllm/envs.py reads;
- SGLang: the flags `python -m sglang.launch_server` defines: "--flag" literals of python/sglang/srt/server_args.py
  and its arg_groups, and, where flags are dataclass fields (0.5.14 on), "--" and each field's name with hyphens;
  the --speculative-algorithm values its speculative module names; and the variables srt/environ.py reads.
TensorRT-LLM's wheels are too large to fetch here; its entries in the fixture were written by hand from llm_args.py
and serve.py as read at each release (tests/fixtures/engine_releases.json says where), and this script keeps them.

    mkdir -p /tmp/wheels && cd /tmp/wheels
    pip download vllm==0.34.0 --no-deps -d .      # and 0.22.0, 0.10.0: one at a time, ~400 MB each
    pip download sglang==0.5.23 sglang==0.5.4 --no-deps -d .
    for w in *.whl; do d=${w%%-py3*}; mkdir -p "$d" && unzip -q -o "$w" 'vllm/*' 'sglang/*' -d "$d"; done
    python bench/engine_flags.py vllm:0.34.0=/tmp/wheels/vllm-0.34.0 vllm:0.22.0=/tmp/wheels/vllm-0.22.0 \\
        vllm:0.10.0=/tmp/wheels/vllm-0.10.0 sglang:0.5.23=/tmp/wheels/sglang-0.5.23 sglang:0.5.4=/tmp/wheels/sglang-0.5.4

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


def vllm(root):
    pkg = root / "vllm"
    config = pkg / "config" / "speculative.py"
    if not config.exists():
        config = pkg / "config.py"
    serve = [pkg / "engine" / "arg_utils.py", *sorted((pkg / "entrypoints").rglob("cli_args.py"))]
    env = set(re.findall(r'"(VLLM_[A-Z0-9_]+)"\s*:', (pkg / "envs.py").read_text(encoding="utf-8")))
    return {"vllm serve": sorted(literals(serve)),
            "vllm bench serve": sorted(literals(sorted((pkg / "benchmarks").rglob("*.py")))),
            "--speculative-config keys": sorted(fields(config, "SpeculativeConfig")),
            "--speculative-config methods": sorted(literal_values(config, r"SpeculativeMethod|\w*ModelTypes|\w*Types")),
            "environment": sorted(env)}


def sglang(root):
    srt = root / "sglang" / "srt"
    files = [srt / "server_args.py", *sorted((srt / "arg_groups").rglob("*.py"))]
    flags = literals(files)
    for path in files:
        flags |= {"--" + name.replace("_", "-") for name in fields(path) if not name.startswith("_")}
    algorithms = set()
    for path in sorted((srt / "speculative").rglob("*.py")):
        algorithms |= set(re.findall(r'\b(EAGLE3?|NEXTN|STANDALONE|NGRAM|LOOKAHEAD)\b', path.read_text(encoding="utf-8")))
    env = set(re.findall(r"^\s+(SGLANG_[A-Z0-9_]+)\s*=", (srt / "environ.py").read_text(encoding="utf-8"), re.M))
    return {"python -m sglang.launch_server": sorted(flags), "--speculative-algorithm values": sorted(algorithms),
            "environment": sorted(env)}


def main(argv):
    if not argv or not all(re.fullmatch(r"(vllm|sglang):[0-9][0-9.]*=.+", a) for a in argv):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    data = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    for arg in argv:
        spec, path = arg.split("=", 1)
        engine, version = spec.split(":")
        read = vllm if engine == "vllm" else sglang
        entry = read(Path(path))
        entry["source"] = f"read from the {engine} {version} package's sources by bench/engine_flags.py"
        data.setdefault(engine, {})[version] = entry
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
