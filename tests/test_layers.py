"""Layers point one way: the library (namesrv/) never imports the plugin layer (processors/) or bench/; the
controller and the route tables know nothing of each other, nor the controller of the service; no module
takes a private name from another package."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
FORBIDDEN = ("processors", "bench", "tests", "tools")


def imported_modules(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


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
    from tests.test_answer_cache import Reactor

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
