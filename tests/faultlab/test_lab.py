"""The fault lab in CI: real `twistd namesrv` processes with embedded controllers, fake 5.x brokers and
the agent, each in a network namespace of its own, through seeded schedules of real faults
(iptables partitions, kill -9, SIGSTOP); every checker must pass.

Skips, saying why, where namespaces cannot be made (not root, no iptables). ``python -m
tools.faultlab`` runs the same schedules longer, more often, and beside Java's controller. Another lab
may run on the machine at the same time (another test run, a lab run by hand): each test gives its lab
a prefix of its own and counts only the namespaces that carry it.
"""

import pytest

from tools.faultlab import netns

REASON = netns.available()
pytestmark = pytest.mark.skipif(REASON is not None, reason="fault lab unavailable: %s" % REASON)


@pytest.fixture
def prefix():
    """This test's namespace prefix; none of its namespaces may outlive it."""
    mine = netns.run_prefix()
    yield mine
    left = netns.namespaces(mine + "-")
    netns.sweep(mine + "-")
    assert not left, "namespaces left behind: %s" % sorted(left)


@pytest.mark.parametrize("schedule, seed", [("mixed", 11), ("master-and-controller-cut", 12)])
def test_a_short_schedule_keeps_every_promise(schedule, seed, prefix, capsys):
    from tools.faultlab.run import run
    result = run(schedule, seed, cycles=2, fault_seconds=(3.0, 5.0), heal_seconds=(3.0, 4.0), settle=12.0,
                 prefix=prefix)
    failed = {name: check["details"] for name, check in result["checks"].items() if not check["passed"]}
    assert not failed, "seed %d: %s (files kept in %s)" % (seed, failed, result["workdir"])
    assert result["checks"]["no acknowledged message lost"]["value"]["acked"] > 50


def test_a_failure_inside_the_lab_still_removes_every_namespace(prefix):
    with pytest.raises(RuntimeError):
        with netns.Lab(["x0", "x1"], prefix=prefix):
            assert sorted(netns.namespaces(prefix + "-")) == [prefix + "-sw", prefix + "-x0", prefix + "-x1"]
            raise RuntimeError("a test failing inside the lab")
    assert netns.namespaces(prefix + "-") == []


def test_a_lab_counts_and_sweeps_only_its_own_namespaces(prefix):
    """Another lab's namespaces, made while this one runs, are neither counted nor swept; a dead maker's are."""
    other = netns.run_prefix()
    dead = "%s%xx%04x" % (netns.PREFIX_ROOT, _exited_pid(), 0xbeef)
    with netns.Lab(["x0"], prefix=prefix):
        with netns.Lab(["x0"], prefix=other):
            netns._run(["ip", "netns", "add", dead + "-x0"])
            try:
                assert sorted(netns.namespaces(prefix + "-")) == [prefix + "-sw", prefix + "-x0"]
                netns.sweep()   # as `python -m tools.faultlab` does at its start
                assert sorted(netns.namespaces(other + "-")) == [other + "-sw", other + "-x0"]
                assert netns.namespaces(dead + "-") == []
            finally:
                netns.sweep(dead + "-")
    assert netns.namespaces(other + "-") == []


def _exited_pid():
    """The id of a process that has exited (and been reaped)."""
    import subprocess
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid
