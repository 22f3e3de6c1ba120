"""Exclusive workers: while none of them accepts (the only one died), the main process accepts."""

from twisted.internet import task
from twisted.python.failure import Failure

from namesrv.readworkers.main import processes
from namesrv.readworkers.main.processes import WorkerProcess
from namesrv.service import make_service
from tests.config_for import service_config as make_config
from tests.readworkers.pools import pool_for


def pool_with(tmp_path, listening):
    clock = task.Clock()
    service = make_service(make_config(tmp_path), clock=clock, reactor=clock)
    pool = pool_for(service, count=len(listening))
    pool.reactor = clock
    pool.running = True
    uncovered = []
    pool.on_uncovered = lambda: uncovered.append(clock.seconds())
    pool._spawn = lambda index: None   # no process
    for index, accepting in enumerate(listening):
        worker = WorkerProcess(pool, index)
        worker.listening = accepting
        pool.workers[index] = worker
    return pool, uncovered, clock


def end(pool, index):
    worker = pool.workers[index]
    worker.ended = True
    pool.worker_ended(worker, Failure(Exception("killed")))


def test_the_only_worker_dying_lets_the_main_process_accept_at_once(tmp_path):
    pool, uncovered, clock = pool_with(tmp_path, [True])
    end(pool, 0)
    assert uncovered == [0]   # not after the respawn delay
    clock.advance(processes.RESPAWN_DELAY)


def test_another_worker_still_accepting_covers(tmp_path):
    pool, uncovered, _ = pool_with(tmp_path, [True, True])
    end(pool, 0)
    assert uncovered == []
    end(pool, 1)
    assert uncovered == [0]


def test_a_worker_not_yet_listening_does_not_cover(tmp_path):
    pool, uncovered, _ = pool_with(tmp_path, [True, False])
    end(pool, 0)
    assert uncovered == [0]


def test_no_cover_while_stopping_or_draining(tmp_path):
    pool, uncovered, _ = pool_with(tmp_path, [True, True])
    pool.running = False
    end(pool, 0)
    pool.running, pool.draining = True, True
    end(pool, 1)
    assert uncovered == []
