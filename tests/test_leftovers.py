"""The leftover check itself (tests/leftovers.py), with real processes left running on purpose:
it must name them, also once re-parented to init, and must not count anyone else's."""

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from tests import leftovers

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="the check reads /proc (Linux)")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def marked_env(value):
    env = dict(os.environ)
    env[leftovers.MARKER] = value
    return env


def reap(pid):
    leftovers.end([pid])
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def test_a_marked_child_is_found_by_name_then_not_once_ended():
    value = uuid.uuid4().hex
    child = subprocess.Popen(["sleep", "60"], env=marked_env(value))
    try:
        found = leftovers.session_processes(value, root=-1)   # by its marker alone
        assert found == {child.pid: "sleep 60"}
    finally:
        child.kill()
        child.wait()
    assert leftovers.session_processes(value, root=-1) == {}


def test_a_child_without_the_marker_is_found_as_a_descendant():
    child = subprocess.Popen(["sleep", "60"], env={"PATH": os.environ.get("PATH", "/bin")})
    try:
        assert leftovers.session_processes(uuid.uuid4().hex)[child.pid] == "sleep 60"
    finally:
        child.kill()
        child.wait()


def test_an_orphan_reparented_to_init_is_found_by_its_marker():
    value = uuid.uuid4().hex
    out = subprocess.run(["sh", "-c", "sleep 61 >/dev/null 2>&1 & echo $!"], env=marked_env(value),
                         capture_output=True, text=True, timeout=30)
    orphan = int(out.stdout.strip())
    try:
        assert os.getpid() not in leftovers.ancestors(orphan)   # not our descendant any more
        assert leftovers.session_processes(value, root=-1) == {orphan: "sleep 61"}
        assert leftovers.session_processes(value)[orphan] == "sleep 61"
    finally:
        reap(orphan)
    assert leftovers.session_processes(value, root=-1) == {}


def test_another_sessions_process_is_not_counted():
    child = subprocess.Popen(["sleep", "60"], env=marked_env("someone-else"))
    try:
        assert leftovers.session_processes(uuid.uuid4().hex, root=-1) == {}
    finally:
        child.kill()
        child.wait()


def test_a_process_working_in_a_checkout_is_found(tmp_path):
    child = subprocess.Popen(["sleep", "60"], cwd=str(tmp_path))
    try:
        assert leftovers.checkout_processes(str(tmp_path)) == {child.pid: "sleep 60"}
        assert leftovers.checkout_processes(str(tmp_path / "elsewhere")) == {}
    finally:
        child.kill()
        child.wait()


def test_a_run_that_leaves_processes_fails_and_names_them(tmp_path):
    """A whole pytest run whose test leaves a child and an orphan running: it fails although its
    test passed, names both, and ends them."""
    pids = tmp_path / "pids"
    (tmp_path / "test_leaves.py").write_text(textwrap.dedent("""
        import subprocess
        def test_leaves_two():
            child = subprocess.Popen(["sleep", "62"])
            out = subprocess.run(["sh", "-c", "sleep 63 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
            open(%r, "w").write("%%d %%s" %% (child.pid, out.stdout.strip()))
    """ % str(pids)))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, PYTHONPATH=REPO, NAMESRV_LEFTOVERS_GRACE="0.5")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.leftovers", "-p", "no:cacheprovider", "-q",
                          "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path)],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    child, orphan = (int(p) for p in pids.read_text().split())
    try:
        assert "1 passed" in run.stdout
        assert run.returncode == 1, run.stdout
        assert "processes left running by the tests" in run.stdout
        assert "pid %d: sleep 62" % child in run.stdout
        assert "pid %d: sleep 63" % orphan in run.stdout
        assert leftovers.wait_gone(lambda: [p for p in (child, orphan) if leftovers._stat(p)
                                            and leftovers._stat(p)[0] not in "ZX"], 10) == []
    finally:
        for pid in (child, orphan):
            reap(pid)


def test_a_clean_run_passes(tmp_path):
    (tmp_path / "test_clean.py").write_text("def test_nothing():\n    assert True\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = dict(os.environ, PYTHONPATH=REPO, NAMESRV_LEFTOVERS_GRACE="0.5")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.leftovers", "-p", "no:cacheprovider", "-q",
                          "-c", str(tmp_path / "pytest.ini"), "--rootdir", str(tmp_path), str(tmp_path)],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout
    assert "processes left running" not in run.stdout
