"""State files belong to one running instance (namesrv/startup/ownership.py): another process's claim,
held by a real second process, refuses a start naming the file and its owner; a dead owner's does not."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from namesrv.startup import StartupError
from namesrv.startup.ownership import StateFile, _HELD, claim_state_files, read_owner

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOLDER = textwrap.dedent("""
    import sys, time
    from namesrv.startup.ownership import StateFile, claim_state_files
    claim_state_files([StateFile(sys.argv[1], sys.argv[2], directory=sys.argv[3] == "dir")], sys.argv[4])
    print("held", flush=True)
    time.sleep(60)
""")


class FakeReactor:
    """Enough of a reactor for claims made outside a running one."""

    def __init__(self):
        self.when_running = []

    def callWhenRunning(self, f, *args, **kwargs):
        self.when_running.append((f, args, kwargs))


@pytest.fixture
def holder():
    """Start a process that claims a file and keeps it; yields a function starting one."""
    started = []

    def start(prop, path, listen="127.0.0.1:9876", directory=False):
        process = subprocess.Popen([sys.executable, "-c", HOLDER, prop, str(path), "dir" if directory else "file",
                                    listen], stdout=subprocess.PIPE, text=True,
                                   env=dict(os.environ, PYTHONPATH=REPO))
        started.append(process)
        assert process.stdout.readline().strip() == "held"
        return process
    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()


def forget(path):
    """Let this process claim ``path`` afresh (claims are per process, kept for its life)."""
    for key in [key for key in _HELD if key.startswith(str(path))]:
        os.close(_HELD.pop(key))


def test_a_file_another_running_server_holds_refuses_naming_file_and_owner(tmp_path, holder):
    kv = tmp_path / "kvConfig.json"
    owner = holder("kvConfigPath", kv, listen="127.0.0.1:9876")
    with pytest.raises(StartupError) as caught:
        claim_state_files([StateFile("kvConfigPath", str(kv))], "127.0.0.1:9886", reactor=FakeReactor())
    message = str(caught.value)
    assert message.startswith("kvConfigPath %s belongs to the running server on 127.0.0.1:9876 (pid %d, since "
                              % (kv, owner.pid))
    assert message.endswith("give this server its own kvConfigPath, or leave it unset: its default follows "
                            "listenPort")
    assert "\n" not in message and not kv.exists()   # nothing written over (or beside) the owner's file


def test_a_dead_owner_leaves_nothing_to_clean_up(tmp_path, holder):
    snapshot = tmp_path / "routeSnapshot.msgpack"
    owner = holder("routeSnapshotPath", snapshot)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    claims = claim_state_files([StateFile("routeSnapshotPath", str(snapshot))], "127.0.0.1:9886",
                               reactor=FakeReactor())
    assert [state.prop for state in claims.held] == ["routeSnapshotPath"]
    assert read_owner(str(snapshot) + ".lock")["listen"] == "127.0.0.1:9886"
    forget(tmp_path)


def test_the_controller_store_is_claimed_as_a_directory(tmp_path, holder):
    store = tmp_path / "DLedgerController"
    holder("controllerStorePath", store, directory=True)
    assert (store / "owner.lock").exists()
    with pytest.raises(StartupError, match="controllerStorePath %s belongs to the running server" % store):
        claim_state_files([StateFile("controllerStorePath", str(store), directory=True)], "127.0.0.1:9886",
                          reactor=FakeReactor())


def test_a_takeover_by_the_same_instance_waits_for_the_old_process_then_claims(tmp_path, holder):
    kv = tmp_path / "kvConfig.json"
    old = holder("kvConfigPath", kv, listen="127.0.0.1:9876")
    reactor = FakeReactor()
    with pytest.raises(StartupError):   # another instance (another address) may not take over
        claim_state_files([StateFile("kvConfigPath", str(kv))], "127.0.0.1:9886", takeover=True, reactor=reactor)
    claims = claim_state_files([StateFile("kvConfigPath", str(kv))], "127.0.0.1:9876", takeover=True,
                               reactor=reactor)
    assert claims.held == [] and [state.prop for state in claims.pending] == ["kvConfigPath"]
    claims._claim_pending()
    assert claims.pending   # the old process still runs
    old.terminate()
    old.wait()
    claims._claim_pending()
    assert claims.pending == [] and [state.prop for state in claims.held] == ["kvConfigPath"]
    assert read_owner(str(kv) + ".lock")["pid"] == os.getpid()
    forget(tmp_path)


def test_one_process_may_claim_its_own_files_again(tmp_path):
    files = [StateFile("kvConfigPath", str(tmp_path / "kv.json"))]
    first = claim_state_files(files, "127.0.0.1:9876", reactor=FakeReactor())
    again = claim_state_files(files, "127.0.0.1:9876", reactor=FakeReactor())
    assert len(first.held) == len(again.held) == 1
    forget(tmp_path)


def test_a_file_the_server_must_write_where_it_cannot_refuses_and_a_directory_is_no_file(tmp_path):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where a directory should be")
    with pytest.raises(StartupError, match="kvConfigPath %s: cannot write beside it" % (blocked / "kv.json")):
        claim_state_files([StateFile("kvConfigPath", str(blocked / "kv.json"))], "127.0.0.1:9876",
                          reactor=FakeReactor())
    with pytest.raises(StartupError, match="routeSnapshotPath %s is a directory" % tmp_path):
        claim_state_files([StateFile("routeSnapshotPath", str(tmp_path))], "127.0.0.1:9876", reactor=FakeReactor())


def test_a_log_directory_must_be_writable(tmp_path):
    from namesrv.startup.ownership import check_directory
    check_directory("logDir", str(tmp_path / "logs" / "deeper"))
    assert (tmp_path / "logs" / "deeper").is_dir()
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(StartupError, match="logDir %s cannot be created" % (blocked / "logs")):
        check_directory("logDir", str(blocked / "logs"))


def test_a_file_whose_lock_cannot_be_made_is_not_checked(tmp_path):
    if os.geteuid() == 0:
        blocked = tmp_path / "not-a-dir"
        blocked.write_text("a file where a directory should be")
        path = blocked / "kv.json"
    else:
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        path = locked / "kv.json"
    claims = claim_state_files([StateFile("configStorePath", str(path), required=False)], "127.0.0.1:9876",
                               reactor=FakeReactor())
    assert claims.held == [] and claims.pending == []   # a -c file in a read-only /etc: logged, not refused
