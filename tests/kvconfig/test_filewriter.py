"""SerialFileWriter driven by a hand-cranked thread pool: every interleaving is chosen by the test."""

import pytest

from namesrv.kvconfig.filewriter import SerialFileWriter
from tests.fakes import HeldPoolReactor


@pytest.fixture
def setup(tmp_path):
    state = {"value": b"v0"}
    reactor = HeldPoolReactor()
    writer = SerialFileWriter(str(tmp_path / "f"), lambda: state["value"], reactor=reactor)
    return writer, state, reactor.pool, tmp_path / "f"


def fired(d):
    results = []
    d.addBoth(results.append)
    return results


def test_changes_during_a_write_share_the_next_one(setup):
    writer, state, pool, path = setup
    state["value"] = b"v1"
    first = fired(writer.changed())
    state["value"] = b"v2"
    second = fired(writer.changed())
    state["value"] = b"v3"
    third = fired(writer.changed())
    assert len(pool.jobs) == 1 and writer.pending
    pool.run_next()
    assert path.read_bytes() == b"v1" and first == [None] and second == third == []
    assert len(pool.jobs) == 1  # one write for both later changes, with the latest value
    pool.run_next()
    assert path.read_bytes() == b"v3" and second == third == [None] and not writer.pending
    assert pool.jobs == []


def test_shutdown_write_is_never_overtaken_by_an_older_thread_write(setup):
    writer, state, pool, path = setup
    state["value"] = b"old"
    d = fired(writer.changed())          # the thread write of "old" is queued, not yet run
    state["value"] = b"new"
    writer.changed()
    assert writer.flush_sync() is True   # stopService: "new" is written at once
    assert path.read_bytes() == b"new"
    pool.run_next()                      # the late thread write of "old" must not land
    assert path.read_bytes() == b"new" and d == [None]
    while pool.jobs:
        pool.run_next()
    assert path.read_bytes() == b"new" and not writer.pending


def test_a_failed_write_fails_its_waiters_and_flush_retries(setup, tmp_path):
    writer, state, pool, path = setup
    path.mkdir()  # a directory where the file should be: os.replace fails
    d = fired(writer.changed())
    pool.run_next()
    assert isinstance(d[0].value, OSError) and writer.pending
    path.rmdir()
    again = fired(writer.flush())
    pool.run_next()
    assert again == [None] and path.read_bytes() == b"v0" and not writer.pending
    assert fired(writer.flush()) == [None] and pool.jobs == []


def test_encode_error_fails_the_change(setup):
    writer, state, pool, path = setup
    writer.encode = lambda: 1 / 0
    d = fired(writer.changed())
    assert isinstance(d[0].value, ZeroDivisionError) and pool.jobs == [] and not path.exists()
