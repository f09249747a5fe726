"""House rules: no import circles among raysim's modules (module-level and function-level imports;
imports under `if TYPE_CHECKING:` are annotations only and do not count), and a run imports what
its runtime and policy use, not every policy's solvers or Ray."""

import ast
import collections
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def import_graph() -> dict[str, set[str]]:
    """Module -> the raysim modules it imports (a `from package import submodule` names the submodule)."""
    mods = {}
    for p in list(REPO.glob("raysim/**/*.py")) + list(REPO.glob("hydra_plugins/**/*.py")):
        name = ".".join(p.relative_to(REPO).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    graph = collections.defaultdict(set)
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        annotations_only = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
                annotations_only.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if id(node) in annotations_only:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_no_import_circles():
    assert cycles(import_graph()) == []


def test_the_check_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_run_pipeline_imports_no_policy_until_one_is_asked_for():
    code = ("import sys, json; import raysim.run.config, raysim.run.simulate; from raysim.policy import policy_class; "
            "from raysim.rounds.policies import round_policy; before = sorted(sys.modules); "
            "policy_class('fifo_perf'), round_policy('fifo_perf'); print(json.dumps([before, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    before, after = (set(names) for names in json.loads(out))
    heavy = {"ray", "scipy.optimize", "raysim.elastic", "raysim.harvest", "raysim.policy.bftrainer",
             "raysim.policy.sia", "raysim.rounds.lp"}
    assert not heavy & before and not any(m.startswith("raysim.policy.") for m in before - {"raysim.policy.base"})
    assert "raysim.policy.rounds" in after and not heavy & after  # (fifo_perf solves no LP: no solver imported)


def test_every_registry_entry_names_its_class():
    from raysim.policy import POLICIES
    from raysim.rounds.policies import POLICIES as ROUND_POLICIES

    assert all(cls.name == name for name, cls in POLICIES.items())
    assert all(cls.name == name for name, cls in ROUND_POLICIES.items())


#: Packages of the simulation's lower layers, and the layers above them they must not import.
LOWER = ("raysim.cluster", "raysim.sim", "raysim.trace", "raysim.placement")
UPPER = ("raysim.report", "raysim.run", "raysim.policy")


def test_lower_layers_import_nothing_from_the_layers_above():
    """cluster/, sim/, trace/ and placement/ read their inputs and simulate; what they share with
    every layer (errors, CSV input, tables for people) lives in the base modules below them."""
    def within(module, packages):
        return any(module == p or module.startswith(p + ".") for p in packages)

    upward = sorted((m, t) for m, targets in import_graph().items() if within(m, LOWER)
                    for t in targets if within(t, UPPER))
    assert upward == []


def test_no_policy_knows_hydra():
    """Policies receive their typed settings and the run's inputs (Policy.prepare(settings, run,
    trace, spec)), not the Hydra config: no module of raysim/policy imports hydra or omegaconf or
    takes a `cfg`."""
    for path in sorted((REPO / "raysim" / "policy").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(n.split(".")[0] in ("hydra", "omegaconf") for n in names), (path.name, names)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert "cfg" not in [a.arg for a in node.args.args + node.args.kwonlyargs], (path.name, node.name)


def test_no_config_below_the_run_layer():
    """Only raysim/run (and the command line, raysim/cli.py) read the composed config: every other
    module receives typed settings (raysim.settings) and plain values, so no function outside them
    takes a `cfg` or a DictConfig."""
    outside = [p for p in sorted((REPO / "raysim").rglob("*.py"))
               if "run" not in p.relative_to(REPO / "raysim").parts[:1] and p.name != "cli.py"]
    for path in outside:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                assert "cfg" not in [a.arg for a in args], (str(path.relative_to(REPO)), node.name)
                assert not any("DictConfig" in ast.unparse(a.annotation) for a in args if a.annotation), (
                    str(path.relative_to(REPO)), node.name)
