"""FileWatcher: content changes only, missing files ignored until they come back changed."""

import os

from twisted.internet import task

from namesrv.security.filewatch import FileWatcher


def test_only_content_changes_call_back(tmp_path):
    path = tmp_path / "watched"
    path.write_text("one")
    calls = []
    clock = task.Clock()
    watcher = FileWatcher([str(path)], calls.append, 0.5, clock=clock)
    watcher.startService()
    clock.advance(0.5)
    assert calls == []
    os.utime(path, ns=(1, 1))  # touched, same bytes
    clock.advance(0.5)
    assert calls == []
    path.write_text("two")
    clock.advance(0.5)
    assert calls == [[str(path)]]
    os.remove(path)
    clock.advance(0.5)
    assert len(calls) == 1  # missing: nobody is told (a half-done replace must not wipe anything)
    path.write_text("two")
    clock.advance(0.5)
    assert len(calls) == 1  # back with the same content
    path.write_text("three")
    clock.advance(0.5)
    assert calls[-1] == [str(path)] and len(calls) == 2
    watcher.stopService()
    assert not clock.getDelayedCalls()


def test_a_failing_callback_does_not_stop_the_watch(tmp_path):
    path = tmp_path / "watched"
    path.write_text("one")
    seen = []

    def explode(changed):
        seen.append(changed)
        raise RuntimeError("bad reload")

    clock = task.Clock()
    watcher = FileWatcher([str(path)], explode, 1, clock=clock)
    watcher.startService()
    path.write_text("two")
    clock.advance(1)
    path.write_text("three")
    clock.advance(1)
    assert len(seen) == 2
    watcher.stopService()
