"""The pool's private directory: marked with its owner, removed once that owner is gone (channel/scratch.py)."""

import os
import subprocess

import pytest

from namesrv.readworkers.channel import scratch
from namesrv.readworkers.channel.scratch import OWNER_FILE, PREFIX

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="owners are told apart by /proc start times")


def owned_by(parent, name, pid, start):
    directory = parent / (PREFIX + name)
    directory.mkdir()
    (directory / OWNER_FILE).write_text("%d %s\n" % (pid, start))
    (directory / "forward.sock").write_text("")
    return directory


def test_a_new_directory_is_private_and_ours(tmp_path):
    directory = scratch.make_directory(str(tmp_path))
    assert os.path.basename(directory).startswith(PREFIX)
    assert os.stat(directory).st_mode & 0o777 == 0o700
    assert scratch.owner_of(directory) == (os.getpid(), scratch.process_start(os.getpid()))
    assert not scratch.abandoned(directory)


def test_the_next_start_removes_only_directories_whose_owner_is_gone(tmp_path):
    live = subprocess.Popen(["sleep", "60"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        alive = owned_by(tmp_path, "alive", live.pid, scratch.process_start(live.pid))
        gone = owned_by(tmp_path, "gone", dead.pid, "1")
        reused = owned_by(tmp_path, "reused", os.getpid(), "1")    # our PID, another start time
        unmarked = tmp_path / (PREFIX + "old")                     # an older version's: left alone
        unmarked.mkdir()
        other = tmp_path / "something-else"
        other.mkdir()
        (other / OWNER_FILE).write_text("%d 1\n" % dead.pid)
        new = scratch.make_directory(str(tmp_path))
        assert sorted(os.listdir(tmp_path)) == sorted([alive.name, unmarked.name, other.name, os.path.basename(new)])
        assert not gone.exists() and not reused.exists()
        live.kill()
        live.wait()
        assert scratch.sweep_abandoned(str(tmp_path)) == [str(alive)]
    finally:
        if live.poll() is None:
            live.kill()
            live.wait()


def test_a_zombie_owner_is_gone(tmp_path):
    """Killed but not reaped yet (its parent is slow): its directory may go."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        directory = owned_by(tmp_path, "zombie", child.pid, scratch.process_start(child.pid))
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)   # dead, still unreaped
        assert scratch.remove_if_abandoned(str(directory))
        assert not directory.exists()
    finally:
        child.kill()
        child.wait()
