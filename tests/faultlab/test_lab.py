"""The fault lab in CI: real `twistd namesrv` processes with embedded controllers, fake 5.x brokers and
the agent, each in a network namespace of its own, through seeded schedules of real faults
(iptables partitions, kill -9, SIGSTOP); every checker must pass.

Skips, saying why, where namespaces cannot be made (not root, no iptables). ``python -m
tools.faultlab`` runs the same schedules longer, more often, and beside Java's controller.
"""

import os

import pytest

from tools.faultlab import netns

REASON = netns.available()
pytestmark = pytest.mark.skipif(REASON is not None, reason="fault lab unavailable: %s" % REASON)


@pytest.fixture(autouse=True)
def no_namespace_left_behind():
    before = set(_namespaces())
    yield
    left = set(_namespaces()) - before
    assert not left, "namespaces left behind: %s" % sorted(left)


def _namespaces():
    import subprocess
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    mine = "%s%dx" % (netns.PREFIX_ROOT, os.getpid())      # other runs' labs may come and go meanwhile
    return [line.split(" ")[0] for line in out.splitlines() if line.startswith(mine)]


@pytest.mark.parametrize("schedule, seed", [("mixed", 11), ("master-and-controller-cut", 12)])
def test_a_short_schedule_keeps_every_promise(schedule, seed, capsys):
    from tools.faultlab.run import run
    result = run(schedule, seed, cycles=2, fault_seconds=(3.0, 5.0), heal_seconds=(3.0, 4.0), settle=12.0)
    failed = {name: check["details"] for name, check in result["checks"].items() if not check["passed"]}
    assert not failed, "seed %d: %s (files kept in %s)" % (seed, failed, result["workdir"])
    assert result["checks"]["no acknowledged message lost"]["value"]["acked"] > 50


def test_a_failure_inside_the_lab_still_removes_every_namespace():
    with pytest.raises(RuntimeError):
        with netns.Lab(["x0", "x1"]) as lab:
            assert len(_namespaces()) >= 3
            raise RuntimeError("a test failing inside the lab")
    assert not [n for n in _namespaces() if n.startswith(lab.prefix)]
