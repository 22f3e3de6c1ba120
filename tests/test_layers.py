"""Layers point one way: the library (namesrv/) never imports the plugin layer (processors/) or bench/; the
controller and the route tables know nothing of each other, nor the controller of the service; no module
takes a private name from another package."""

import ast
import pathlib


ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = ("processors", "bench", "tests", "tools")


def imported_modules(path, with_names=False):
    """Every module an import names; ``with_names``: for ``from a import b`` also ``a.b`` (b may be a module)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            if with_names:
                yield from ("%s.%s" % (node.module, alias.name) for alias in node.names)


def test_namesrv_imports_nothing_above_it():
    offenders = {}
    for path in sorted((ROOT / "namesrv").rglob("*.py")):
        bad = [name for name in imported_modules(path) if name.split(".")[0] in FORBIDDEN]
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_read_workers_build_the_replicable_processors_named_by_the_main_process(tmp_path):
    from twisted.internet import task
    from namesrv.interfaces import IReplicableProcessor
    from namesrv.readworkers.channel.generation import SharedGeneration
    from namesrv.readworkers.worker.replica import Replica
    from namesrv.service import make_service
    from tests.config_for import service_config
    from tests.readworkers.pools import pool_for
    from tests.fakes import Reactor

    service = make_service(service_config(tmp_path), clock=task.Clock(), reactor=Reactor())
    pool = pool_for(service)
    assert [p.name for p in pool.replicable_processors()] == ["route"]
    assert sorted(pool.publisher.local_codes()) == sorted(service.registry.processor_for(105).replicable_codes)
    SharedGeneration(str(tmp_path / "g"), writable=True)
    replica = Replica(SharedGeneration(str(tmp_path / "g")), task.Clock(), processor_names=["route"])
    (built,) = replica.registry.processors
    assert IReplicableProcessor.providedBy(built) and built.context is replica.context


def test_route_tables_know_no_protocol():
    """The tables and their bodies use the JSON codec from namesrv.codec, never the wire layer."""
    offenders = {}
    for path in sorted((ROOT / "namesrv" / "routes").rglob("*.py")):
        bad = [name for name in imported_modules(path) if name.startswith("namesrv.protocol")]
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_the_controller_and_the_route_tables_know_nothing_of_each_other():
    """As Java's controller module and the name server's route code: a master re-registering as
    brokerId 0 is the broker's business, over the wire, never a call between the two."""
    offenders = {}
    for package, other in (("controller", "namesrv.routes"), ("routes", "namesrv.controller")):
        for path in sorted((ROOT / "namesrv" / package).rglob("*.py")):
            bad = [name for name in imported_modules(path) if name.startswith(other)]
            if bad:
                offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_the_controller_never_imports_the_service_that_builds_it():
    """The controller is built by namesrv/service.py (embedded) or controller/tap.py (alone): what both
    need lives one layer down (the event log's factory in namesrv/observe), never in the service."""
    offenders = {}
    for path in sorted((ROOT / "namesrv" / "controller").rglob("*.py")):
        bad = [name for name in imported_modules(path) if name in ("namesrv.service", "namesrv.tap")]
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def private_imports(path):
    """(module, name) of every ``from namesrv... import _name`` in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("namesrv"):
            for alias in node.names:
                if alias.name.startswith("_"):
                    yield node.module, alias.name


def test_no_module_takes_a_private_name_from_another_package():
    offenders = {}
    for root in ("namesrv", "processors"):
        for path in sorted((ROOT / root).rglob("*.py")):
            package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
            bad = ["%s.%s" % found for found in private_imports(path) if found[0].rpartition(".")[0] != package]
            if bad:
                offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_the_controller_state_and_decisions_touch_no_socket_and_no_clock():
    pure = ("state.py", "decisions.py", "election.py", "bodies.py")
    offenders = {}
    for name in pure:
        path = ROOT / "namesrv" / "controller" / name
        bad = [m for m in imported_modules(path) if m.split(".")[0] in ("twisted", "socket", "time")]
        if bad:
            offenders[name] = bad
    assert offenders == {}


def test_no_connection_class_overrides_a_private_method_of_the_protocol():
    """Subclasses use RemotingProtocol's public framing calls (handle_frames, frames_waiting,
    handle_buffered); its private methods stay its own."""
    from namesrv.protocol.remoting import RemotingProtocol
    from namesrv.readworkers.main.forwarded import ForwardedConnection
    from namesrv.readworkers.worker.connections import WorkerConnection
    private = {name for name in vars(RemotingProtocol) if name.startswith("_") and not name.endswith("__")}
    assert {cls.__name__: sorted(private & set(vars(cls))) for cls in (WorkerConnection, ForwardedConnection)} == \
        {"WorkerConnection": [], "ForwardedConnection": []}


def _test_files():
    return sorted(path for path in (ROOT / "tests").rglob("*.py") if "__pycache__" not in path.parts)


def test_no_test_module_imports_another_test_module():
    """Fixtures and helpers that tests share live in conftest.py files or helper modules of tests/
    (fakes.py, config_for.py...), never in a test_*.py that another test module reaches into."""
    offenders = {}
    for path in _test_files():
        bad = [name for name in imported_modules(path, with_names=True)
               if name.startswith("tests.") and any(part.startswith("test_") for part in name.split("."))]
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def test_nothing_under_tests_imports_the_benchmarks():
    """Benchmarks use the tests' helpers at most, never the other way round: what both need lives in
    namesrv/client.py or tools/ (bench/tests/ holds the benchmarks' own tests)."""
    offenders = {}
    for path in _test_files():
        bad = [name for name in imported_modules(path) if name.split(".")[0] == "bench"]
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
    assert offenders == {}


def assignments_after_construction(path):
    """``(line, target)`` of every attribute assignment in ``path`` that is not ``self.x = ...`` in an
    ``__init__``: wiring code builds each part whole and hands it to a constructor, never patches it."""
    tree = ast.parse(path.read_text(), str(path))
    constructors = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            constructors.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if not isinstance(part, ast.Attribute):
                        continue
                    own = isinstance(part.value, ast.Name) and part.value.id == "self"
                    if not (own and id(node) in constructors):
                        yield node.lineno, ast.unparse(part)


def test_wiring_code_assigns_no_attribute_after_construction():
    offenders = {}
    for name in ("namesrv/tap.py", "namesrv/service.py", "namesrv/controller/tap.py"):
        found = list(assignments_after_construction(ROOT / name))
        if found:
            offenders[name] = found
    assert offenders == {}


def test_the_wiring_is_small():
    """``make_service`` composes built parts (at most 40 lines); ``NamesrvService.__init__`` only adds them."""
    tree = ast.parse((ROOT / "namesrv" / "service.py").read_text())
    sizes = {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
             if isinstance(node, ast.FunctionDef) and node.name in ("make_service", "__init__")}
    service_init = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == "NamesrvService"]
    init = [n for n in service_init[0].body if isinstance(n, ast.FunctionDef) and n.name == "__init__"][0]
    assert sizes["make_service"] <= 40 and init.end_lineno - init.lineno + 1 <= 20, sizes
