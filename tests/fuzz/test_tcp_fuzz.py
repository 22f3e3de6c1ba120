"""Fuzzing a real `twistd namesrv` with a read worker over TCP (a few hundred frames; the long run is
tools/fuzz.py).

After every example: the process is alive, a fresh connection is answered, the control
broker's routes are unchanged and cluster info and routes are consistent.
"""

import random
import signal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.fuzz.strategies import drafts
from tests.integration.server import NamesrvProcess
from tools import checks, frames
from tools.fuzz import fuzz, run_plan
from tools.fuzzframes import plan_connection, vector_drafts
from tools.mutations import FuzzFrame

VECTORS = vector_drafts()
FUZZ_SETTINGS = settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow], deadline=None,
                         derandomize=True)  # a real server: the same examples on every run


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    # a read worker whatever the CPUs (auto is 0 on one): the replicas answer the routes the checks compare
    server = NamesrvProcess(tmp_path_factory.mktemp("fuzz"), {"routeReadWorkers": "1"}).start()
    control = checks.ControlBroker("127.0.0.1", server.port)
    checker = checks.TableChecker("127.0.0.1", server.port)
    checker.record_expected()
    yield server, checker
    control.close()
    # twistd re-raises the signal after a clean stop
    assert server.stop() in (0, -signal.SIGTERM), server.hang_report
    log = checks.server_log(server)
    assert "Traceback" not in log and "Unhandled" not in log


def assert_healthy(server, checker):
    assert server.process.poll() is None, "the server died:\n" + server.log()[-3000:]
    assert checker.check() == []


def send(server, checker, plan, rng):
    outcome, _ = run_plan("127.0.0.1", server.port, plan, rng,
                          expected_sentinel=checker.expected_routes[checks.CONTROL_TOPICS[0]])
    assert outcome in ("answered", "closed", "desync"), outcome


@FUZZ_SETTINGS
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=4))
def test_mutated_plans_leave_the_server_healthy(target, seeds):
    server, checker = target
    for seed in seeds:
        rng = random.Random(seed)
        send(server, checker, plan_connection(rng, vectors=VECTORS), rng)
    assert_healthy(server, checker)


@FUZZ_SETTINGS
@given(st.lists(drafts(), min_size=1, max_size=5))
def test_hypothesis_drafts_leave_the_server_healthy(target, generated):
    server, checker = target
    plan = [FuzzFrame(frames.encode_frame(d), d.header["code"], ()) for d in generated]
    send(server, checker, plan, random.Random(0))
    assert_healthy(server, checker)


def test_short_fuzz_run_reports_no_crash(target):
    """The standalone fuzzer's own loop, for 300 frames."""
    server, _ = target
    report = fuzz("127.0.0.1", server.port, frames=300, max_seconds=50, seed=3, pid=server.process.pid,
                  process=server.process, batch=25, churn=2)
    assert report.frames >= 300 or report.stopped_by == "max-seconds"
    assert report.crashes == 0 and report.inconsistencies == [] and report.plan_route_problems == []
    assert report.churn["registrations"] > 0 and report.routes_cross_checked > 0
    assert report.outcomes["stalled"] == 0 and report.outcomes["wrong"] == 0
    assert report.rss_before_kib and report.rss_after_kib
    assert report.leftover_brokers == []
