"""Crashes leave no process behind and someone serves, over real sockets: kill -9 of the main
process (its workers exit and remove the pool's directory; a new server starts on the port at
once), and kill -9 of either process during a takeover (the survivor serves)."""

import os
import signal
import time

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.readworkers.channel.scratch import process_start
from tests.brokers import register_request, route_request
from tests.integration.server import NamesrvProcess, wait_for
from tests.integration.takeover import start_takeover


WORKERS = {"routeReadWorkers": "2"}


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def workers_of(server, count):
    wait_for(lambda: server.log().count("listening on") >= count and len(children(server.process.pid)) == count,
             30, "%d workers" % count)
    return children(server.process.pid)


def private_directory(worker):
    with open("/proc/%d/cmdline" % worker, "rb") as f:
        args = f.read().split(b"\0")
    return os.path.dirname(args[args.index(b"--upstream") + 1].decode())


def gone(pids):
    return all(process_start(pid) is None for pid in pids)


def serves(port):
    try:
        with BlockingRemotingClient("127.0.0.1", port, timeout=5.0) as client:
            return client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS
    except OSError:
        return False


def test_kill_9_of_the_main_process_leaves_no_worker_and_a_new_server_starts_at_once(make_namesrv, tmp_path):
    server = make_namesrv(WORKERS).start()
    workers = workers_of(server, 2)
    directory = private_directory(workers[0])
    assert os.path.isdir(directory)
    server.process.kill()
    server.process.wait()
    wait_for(lambda: gone(workers), 10, "the workers to exit")
    (tmp_path / "again").mkdir()
    again = make_namesrv(WORKERS, workdir=tmp_path / "again", port=server.port).start()
    assert serves(again.port)
    # A worker removes the pool's directory when it finds its main process gone. The kernel closes the
    # dead process's pipes before it re-parents the workers, so a worker can take the end of its stdin
    # for an ordinary stop and leave the directory. Then the next pool's start removes it
    # (scratch.sweep_abandoned): it never outlives that.
    assert not os.path.exists(directory)


def test_kill_9_of_the_new_process_mid_takeover_leaves_the_old_one_serving(tmp_path):
    old = NamesrvProcess(tmp_path, WORKERS).start()
    new = None
    try:
        old_workers = workers_of(old, 2)
        broker = BlockingRemotingClient("127.0.0.1", old.port)   # kept open: closing it unregisters
        assert broker.call(register_request("C", "b-crash", "127.0.0.1:10911", topics=["Kept", "Other"])).code == 0
        new = start_takeover(old)
        # mid takeover: draining, past the first copy (a kill during the first copy is only "abandoned")
        wait_for(lambda: "): draining" in old.log(), 30, "the takeover to drain")
        new_workers = children(new.process.pid)
        new.process.kill()
        new.process.wait()
        wait_for(lambda: "serving again" in old.log(), 30, "the old process to serve again")
        wait_for(lambda: gone(new_workers + children(new.process.pid)), 10, "the new process's workers to exit")
        assert old.process.poll() is None
        wait_for(lambda: gone(old_workers) and len(children(old.process.pid)) == 2, 30, "the old one's new workers")
        with BlockingRemotingClient("127.0.0.1", old.port) as client:
            assert client.call(route_request("Kept")).code == ResponseCode.SUCCESS
        broker.close()
    finally:
        if new is not None:
            new.stop()
        old.stop()


def test_kill_9_of_the_old_process_before_it_hands_over_leaves_the_new_one_serving(tmp_path):
    """The old process is stopped (SIGSTOP) so that the new one's hello waits, then killed: the new
    process starts on its own once the port is free, and the old one's workers are gone."""
    old = NamesrvProcess(tmp_path, WORKERS).start()
    new = None
    try:
        old_workers = workers_of(old, 2)
        os.kill(old.process.pid, signal.SIGSTOP)
        new = start_takeover(old)
        wait_for(lambda: os.path.exists(new.log_file), 30, "the new process to start")
        time.sleep(1.0)   # its hello is written and waits (no wall-clock assertion: any order works)
        old.process.kill()
        old.process.wait()
        wait_for(lambda: serves(new.port), 60, "the new process to serve")
        assert "died before handing over; starting normally" in new.log()
        wait_for(lambda: gone(old_workers), 10, "the old process's workers to exit")
        assert new.process.poll() is None
    finally:
        if new is not None:
            new.stop()
        old.stop()


def test_kill_9_of_the_old_process_after_it_sent_the_state_leaves_the_new_one_serving(tmp_path):
    old = NamesrvProcess(tmp_path, WORKERS).start()
    new = None
    try:
        old_workers = workers_of(old, 2)
        broker = BlockingRemotingClient("127.0.0.1", old.port)
        assert broker.call(register_request("C", "b-crash", "127.0.0.1:10911", topics=["Taken", "Other"])).code == 0
        new = start_takeover(old)
        wait_for(lambda: "tables taken over" in new.log(), 30, "the new process to have the tables")
        old.process.kill()
        old.process.wait()
        wait_for(lambda: gone(old_workers), 10, "the old process's workers to exit")
        wait_for(lambda: serves(new.port), 30, "the new process to serve")
        with BlockingRemotingClient("127.0.0.1", new.port) as client:
            assert client.call(route_request("Taken")).code == ResponseCode.SUCCESS
        assert new.process.poll() is None
        broker.close()
    finally:
        if new is not None:
            new.stop()
        old.stop()
