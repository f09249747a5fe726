"""House rules: no import circles among raysim's modules (module-level and function-level imports;
imports under `if TYPE_CHECKING:` are annotations only and do not count), every import goes down
the layers docs/design.md lists (annotations count there), and a run imports what its runtime and
policy use, not every policy's solvers or Ray."""

import ast
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def import_graph(annotations: bool = False) -> dict[str, set[str]]:
    """Module -> the raysim modules it imports (a `from package import submodule` names the submodule);
    imports under `if TYPE_CHECKING:` count only with `annotations`."""
    mods = {}
    for p in list(REPO.glob("raysim/**/*.py")) + list(REPO.glob("hydra_plugins/**/*.py")):
        name = ".".join(p.relative_to(REPO).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    graph = collections.defaultdict(set)
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        annotations_only = set()
        for node in ast.walk(tree):
            if not annotations and isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
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


def layers() -> list[tuple[str, ...]]:
    """raysim's layers, lowest first, as docs/design.md lists them (its numbered list after "The
    packages are layered"): `x/` and `x.py` are raysim.x, `__init__.py` the package itself,
    `hydra_plugins/` the launchers."""
    text = (REPO / "docs" / "design.md").read_text().split("The packages are layered", 1)[1]
    items = re.split(r"\n(?=\d+\. )", text.split("\n\n", 2)[1])
    def module(name):
        stem = name.removesuffix("/").removesuffix(".py")
        return "raysim" if stem == "__init__" else stem if stem == "hydra_plugins" else f"raysim.{stem}"
    return [tuple(module(n) for n in re.findall(r"`([^`]+)`", item)) for item in items]


LAYERS = layers()

#: Imports from a lower layer to a higher one (or across one layer) that are allowed, as (importer,
#: imported), each with a comment saying why; at most two. None: what two layers share lives in the
#: lower one (issue 49 counted five such imports; each moved down, see docs/design.md).
UPWARD_ALLOWED: frozenset[tuple[str, str]] = frozenset()


def layer_of(module: str) -> tuple[int, str]:
    """(index in LAYERS, entry) of a module: the longest entry that is the module or a package of it
    (the entry "raysim" is the package's own __init__ only)."""
    found = [(len(entry), i, entry) for i, layer in enumerate(LAYERS) for entry in layer
             if module == entry or entry != "raysim" and module.startswith(entry + ".")]
    assert found, f"{module} is in no layer of docs/design.md's list"
    _, i, entry = max(found)
    return i, entry


def layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs that go up a layer or across packages of one layer."""
    out = []
    for module, targets in graph.items():
        rank, entry = layer_of(module)
        for target in targets:
            target_rank, target_entry = layer_of(target)
            if target_rank > rank or (target_rank == rank and target_entry != entry):
                out.append((module, target))
    return sorted(out)


def test_every_module_has_a_layer():
    assert len(LAYERS) > 10 and all(LAYERS)
    for module in import_graph(annotations=True):
        layer_of(module)


def test_imports_go_down_the_layers():
    """No import from a lower layer to a higher one, nor between the packages of one layer, beyond
    the commented allow-list."""
    assert set(layer_violations(import_graph(annotations=True))) - UPWARD_ALLOWED == set()
    assert len(UPWARD_ALLOWED) <= 2


def test_the_layer_check_finds_an_upward_import():
    graph = {"raysim.trace.x": {"raysim.sim.y", "raysim.errors"}, "raysim.placement.a": {"raysim.report.b"},
             "raysim.run.c": {"raysim.policy.d", "raysim.run.e"}}
    assert layer_violations(graph) == [("raysim.placement.a", "raysim.report.b"), ("raysim.trace.x", "raysim.sim.y")]


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
