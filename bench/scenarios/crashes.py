"""Crash figures, measured from outside over real sockets (issue 22): nothing outlives its server,
and how long until someone serves again.

    python -m bench crashes [--workers 1 2] [--readers 4] [--rounds 3]

1. kill -9 of the main process: time until every read worker is gone (no longer running: exited,
   or a zombie waiting for init) and until the pool's private directory is removed; then a new
   server started on the same port at once: time until it answers.
2. kill -9 of a read worker under ``--readers`` reading clients (half keep their connection, half
   open one per request): time until every reader has read successfully again (a read that began
   after the kill), reads failed, slowest read.
3. kill -9 during a takeover, of the new process (once the old one drains) and of the old one
   (once the new one has its tables): time until reads succeed again, reads failed, processes left.

Bounded: every phase stops after a few seconds of reading, 60 s at most.
"""

import os
import subprocess
import sys
import time

from bench.lib import options
from bench.lib.brokers import register_body, register_request
from bench.scenarios.restart import TOPIC, Reader
from bench.lib.servers import REPO, NamesrvServer, child_pids
from namesrv.client import BlockingRemotingClient, answers
from namesrv.readworkers.channel.scratch import process_start

POLL = 0.001


def running(pid):
    return process_start(pid) is not None


def until(predicate, timeout=30.0, step=POLL):
    """Seconds until ``predicate()`` holds (None if it did not within ``timeout``)."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        if predicate():
            return time.monotonic() - began
        time.sleep(step)
    return None


def server(workers, port=None):
    props = {"routeReadWorkers": str(workers)}
    if port:
        props["listenPort"] = str(port)
    s = NamesrvServer(props)
    if port:
        s.port = port
    return s


def workers_of(s, count):
    if count:
        until(lambda: len(child_pids(s.pid)) == count and s.log().count("listening on") >= count, 30, 0.02)
    return child_pids(s.pid)


def private_directory(worker):
    with open("/proc/%d/cmdline" % worker, "rb") as f:
        args = f.read().split(b"\0")
    return os.path.dirname(args[args.index(b"--upstream") + 1].decode())


def register(port):
    broker = BlockingRemotingClient("127.0.0.1", port)
    body = register_body([TOPIC, TOPIC + "2"], compressed=False)
    assert broker.call(register_request("b-crash", "127.0.0.1:10911", body, False)).code == 0
    return broker


def reading(port, readers):
    threads = [Reader(port, fresh=bool(i % 2)) for i in range(readers)]
    for thread in threads:
        thread.start()
    return threads


def stop_reading(threads, after):
    time.sleep(after)
    for thread in threads:
        thread.stop_event.set()
        thread.join(60)


def recovery(threads, at):
    """Figures of a crash at ``at`` from the readers' samples: seconds until *every* reader has had a
    read that began after the crash succeed, reads failed since, slowest read since, reads in all."""
    back, failed, slowest, reads = 0.0, 0, 0.0, 0
    for thread in threads:
        after = [s for s in thread.samples if s[0] + s[1] >= at]
        reads += len(thread.samples)
        failed += sum(1 for s in after if s[2] != "ok")
        slowest = max([slowest] + [s[1] for s in after])
        first_ok = min((s[0] + s[1] for s in after if s[2] == "ok" and s[0] >= at), default=float("nan"))
        back = max(back, first_ok - at)
    return {"reads_back_s": back, "failed": failed, "slowest_s": slowest, "reads": reads}


def kill_main(workers):
    began = time.monotonic()
    s = server(workers).start()
    again = None
    try:
        cold = until(lambda: _answers(s.port), 30, 0.005)
        cold = cold and time.monotonic() - began
        pool = workers_of(s, workers)
        directory = private_directory(pool[0]) if pool else None
        s.process.kill()
        killed = time.monotonic()
        s.process.wait()
        # a new server on the same port at once (as systemd's Restart= would)
        again = server(workers, port=s.port)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
        with open(again.log_file, "ab") as log:
            again.process = subprocess.Popen(again.command(), cwd=again.workdir, env=env, stdout=log,
                                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        checks = {"workers_gone_s": lambda: not any(running(p) for p in pool),
                  "directory_removed_s": lambda: directory is None or not os.path.exists(directory),
                  "restart_answers_s": lambda: _answers(again.port)}
        seen = {}
        while len(seen) < len(checks) and time.monotonic() - killed < 30:
            for name, check in checks.items():
                if name not in seen and check():
                    seen[name] = time.monotonic() - killed
            time.sleep(POLL)
        figures = {name: seen.get(name) for name in checks}
        figures["cold_start_answers_s"] = cold   # the same start with no crash before, for comparison
        figures["restart_exited"] = again.process.poll()
        return figures
    finally:
        s.cleanup()
        if again is not None:
            again.cleanup()


def _answers(port):
    return answers(port)


def kill_worker(workers, readers):
    s = server(workers).start()
    try:
        pool = workers_of(s, workers)
        broker = register(s.port)
        threads = reading(s.port, readers)
        time.sleep(1.0)
        at = time.monotonic()
        os.kill(pool[0], 9)
        stop_reading(threads, 3.0)
        broker.close()
        return recovery(threads, at)
    finally:
        s.cleanup()


def kill_during_takeover(workers, readers, victim):
    old = server(workers).start()
    new = None
    try:
        old_pool = workers_of(old, workers)
        broker = register(old.port)
        threads = reading(old.port, readers)
        time.sleep(1.0)
        new = server(workers)
        new.__dict__.update({k: v for k, v in old.__dict__.items() if k not in ("process", "log_file")})
        new.log_file = os.path.join(old.workdir, "namesrv-new.log")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
        with open(new.log_file, "ab") as log:
            new.process = subprocess.Popen(new.command() + ["--takeover"], cwd=old.workdir, env=env, stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if victim == "new":
            old.wait_for_log("takeover by process")
            target = new
        else:
            new.wait_for_log("tables taken over")
            target = old
        pool = child_pids(target.pid) + (old_pool if target is old else [])
        at = time.monotonic()
        target.process.kill()
        target.process.wait()
        gone = until(lambda: not any(running(p) for p in pool + child_pids(target.pid)), 10)
        stop_reading(threads, 3.0)
        broker.close()
        survivor = new if target is old else old
        return dict(recovery(threads, at), victims_workers_gone_s=gone,
                    survivor_running=survivor.process.poll() is None)
    finally:
        old.cleanup()
        if new is not None:
            new.stop()


def fmt(value):
    if isinstance(value, float):
        return "%.3f" % value
    return str(value)


OPTIONS = (options.WORKERS([1, 2]), options.READERS(4), options.ROUNDS(3, "of each crash"))


def main(argv=None):
    args = options.parse("crashes", __doc__, OPTIONS, argv)
    for workers in args.workers:
        print("routeReadWorkers=%d, %d reading clients (half on a new connection per request), %d rounds"
              % (workers, args.readers, args.rounds))
        for name, run in (("kill -9 main process", lambda: kill_main(workers)),
                          ("kill -9 read worker", lambda: kill_worker(workers, args.readers)),
                          ("kill -9 new process mid-takeover", lambda: kill_during_takeover(workers, args.readers,
                                                                                            "new")),
                          ("kill -9 old process mid-takeover", lambda: kill_during_takeover(workers, args.readers,
                                                                                            "old"))):
            for round_ in range(args.rounds):
                figures = run()
                print("  %-34s round %d: %s" % (name, round_ + 1,
                                                "  ".join("%s=%s" % (k, fmt(v)) for k, v in figures.items())))
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
