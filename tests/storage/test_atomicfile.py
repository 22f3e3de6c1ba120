"""The one durable file replacement (storage/atomicfile.py): the order of its steps, and what a crash leaves.

(Kill -9 at every step of a write: tests/kvconfig/test_crash_safety.py.)"""

import os
import stat

import pytest

from namesrv.storage.atomicfile import remove_leftovers, write_atomic


def recorded_steps(monkeypatch):
    """Every fsync (of a file or a directory, by path) and rename that follows, in order."""
    steps = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        target = os.readlink("/proc/self/fd/%d" % fd)
        steps.append(("fsync dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "fsync", os.path.basename(target)))
        return real_fsync(fd)

    def replace(src, dst):
        steps.append(("rename", os.path.basename(src), os.path.basename(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return steps


def test_the_data_is_synced_before_the_rename_and_the_directory_after(tmp_path, monkeypatch):
    steps = recorded_steps(monkeypatch)
    path = tmp_path / "kvConfig.json"
    write_atomic(str(path), [b"{", b"}"])
    (synced, temp), (renamed, source, target), (dir_synced, directory) = steps
    assert (synced, renamed, dir_synced) == ("fsync", "rename", "fsync dir")
    assert source == temp and temp.startswith("kvConfig.json.") and temp.endswith(".tmp")
    assert (target, directory) == ("kvConfig.json", tmp_path.name)
    assert path.read_bytes() == b"{}" and os.listdir(tmp_path) == ["kvConfig.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_backup_is_itself_synced_and_renamed_before_the_file_is_replaced(tmp_path, monkeypatch):
    path = tmp_path / "kvConfig.json"
    write_atomic(str(path), b"old")
    steps = recorded_steps(monkeypatch)
    write_atomic(str(path), b"new", keep_backup=True)
    assert [s[0] for s in steps] == ["fsync", "fsync", "rename", "rename", "fsync dir"]
    assert steps[2] == ("rename", "kvConfig.json.bak.tmp", "kvConfig.json.bak")
    assert (path.read_bytes(), (tmp_path / "kvConfig.json.bak").read_bytes()) == (b"new", b"old")


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "state"
    write_atomic(str(path), b"old")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(str(path), b"new")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["state"]


def test_the_temp_files_a_crash_left_are_removed_and_named_nothing_else(tmp_path):
    keep = ("raft.snapshot", "raft.snapshot.bak", "raft.journal.x.tmp", "raft.snapshots.y.tmp", "other.tmp")
    left = ("raft.snapshot.k2j_9a.tmp", "raft.snapshot.bak.tmp", "raft.snapshot.tmp")
    for name in keep + left:
        (tmp_path / name).write_bytes(b"partial")
    removed = remove_leftovers(str(tmp_path / "raft.snapshot"))
    assert sorted(removed) == sorted(str(tmp_path / name) for name in left)
    assert sorted(os.listdir(tmp_path)) == sorted(keep)
    assert remove_leftovers(str(tmp_path / "no-such-dir" / "file")) == []
