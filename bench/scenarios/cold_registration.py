"""The main process's cost of a fleet's first registration, in process: ``python -m bench cold_registration``.

``python -m bench bigfleet --scenario cold`` times the whole fleet's first REGISTER_BROKER from outside, with Java
beside it; this is its inside, without sockets or a second machine's noise. An unstarted NameServer
(a ``task.Clock`` as its reactor) gets the fleet's frames (``SpreadLayout``: B brokers, T topics, K brokers
per topic, 600 KB and 4,000 topics a broker at a million), each on its own connection, one after another,
and after each one the publication a read worker would get is encoded (what ``Publisher._publish_now``
does) and applied to a replica (what a read worker does). Prints ms per registration for each of the
three, over the whole fleet and over its last tenth (the tables nearly full). The frames are built
before each one is timed; building them is not counted.

``--event-log`` writes the structured event log (a real server's default) to a temporary file;
``--profile FILE`` writes cProfile's figures of the main process's part, ``--profile-worker FILE`` those of
the replica's.
"""

import cProfile
import gc
import os
import pstats
import tempfile
import time

from twisted.internet import task
from twisted.internet.testing import StringTransport

from bench.lib import options
from bench.lib.brokers import SpreadLayout


class _Generation:
    """The shared counter, in this process: the replica reads what the main side bumped."""

    def __init__(self):
        self.value = 0

    def read(self):
        return self.value

    def bump(self):
        self.value += 1
        return self.value


def build(workdir, event_log):
    from namesrv.config import NamesrvConfig
    from namesrv.observe.eventlog import NullEventLog
    from namesrv.service import make_service

    config = NamesrvConfig()
    config.update({"eventLogEnable": "true" if event_log else "false", "routeSnapshotEnable": "false",
                   "listenPort": "0", "kvConfigPath": os.path.join(workdir, "kv.json"), "logDir": workdir,
                   "configStorePath": os.path.join(workdir, "namesrv.properties")})
    clock = task.Clock()
    kwargs = {} if event_log else {"events": NullEventLog()}
    return make_service(config, reactor=clock, **kwargs), clock


class _Publication:
    """The read workers' side: a tracker of the tables' changes, its publications encoded and applied."""

    def __init__(self, service, clock):
        from namesrv.readworkers.main.publisher import TopicTracker, local_codes
        from namesrv.readworkers.worker.replica import Replica

        self.service, self.generation = service, _Generation()
        self.routes = service.routes
        self.codes = local_codes(service.registry)
        self.tracker = self.routes.track_topic_changes(TopicTracker())
        self.replica = Replica(self.generation, clock)
        for message in self.messages(full=True):
            self.replica.apply(_loads(message))

    def messages(self, full=False):
        from namesrv.readworkers.channel.feed import publication

        context = self.service.context
        taken_full, topics = self.tracker.take()
        moves = self.tracker.take_moves(topics)
        brokers = self.tracker.take_brokers()
        full = full or taken_full
        self.generation.bump()
        return list(publication(self.generation.value, self.routes, context.kv, context.config, context.started,
                                self.codes, None if full else topics, brokers=None if full else brokers,
                                moves=None if full else moves))


def _loads(message):
    import pickle
    return pickle.loads(message[4:])


def _frame(layout, broker):
    from namesrv.protocol.codec import encode_frame

    return encode_frame(layout.register_request(broker))


def run_fleet(layout, workdir, event_log=False, profile=None, check=False, log=print, profile_worker=None):
    """{"handle": [s per registration], "publish": [...], "apply": [...]}."""
    from namesrv.timing.scheduler import NEXT_TURN

    service, clock = build(workdir, event_log)
    publication = _Publication(service, clock)
    scheduler = service.context.scheduler
    times = {"handle": [], "publish": [], "apply": []}
    profiler = cProfile.Profile() if profile else None
    worker_profiler = cProfile.Profile() if profile_worker else None
    for broker in range(layout.brokers):
        frame = _frame(layout, broker)
        protocol = service.factory.buildProtocol(None)
        transport = StringTransport()
        protocol.makeConnection(transport)
        # no idle timeout: task.Clock sorts every pending call at each reset (a reactor's heap does not),
        # which with a thousand connections would be the figure
        protocol.setTimeout(None)
        gc.collect()
        if profiler:
            profiler.enable()
        started = time.perf_counter()
        protocol.dataReceived(frame)
        while scheduler.busy():
            clock.advance(NEXT_TURN)
        handled = time.perf_counter()
        messages = publication.messages()
        published = time.perf_counter()
        if profiler:
            profiler.disable()
        if worker_profiler:
            worker_profiler.enable()
        for message in messages:
            publication.replica.apply(_loads(message))
        if worker_profiler:
            worker_profiler.disable()
        applied = time.perf_counter()
        if not transport.value():
            raise RuntimeError("broker %d got no answer" % broker)
        times["handle"].append(handled - started)
        times["publish"].append(published - handled)
        times["apply"].append(applied - published)
        del frame, messages
        if broker and broker % 100 == 0:
            log("  %d brokers registered, last 100: handle %.2f ms, publish %.2f ms, apply %.2f ms"
                % (broker, *(sum(times[k][-100:]) * 10 for k in ("handle", "publish", "apply"))))
    for done, path in ((profiler, profile), (worker_profiler, profile_worker)):
        if done:
            done.dump_stats(path)
            pstats.Stats(path).sort_stats("cumulative").print_stats(40)
    if check:
        _check(service.routes, publication.replica.context.routes, layout)
    return times


def _check(routes, replica, layout):
    """The tables hold the layout, and the replica the same routes."""
    from namesrv.routes import rows

    if len(routes.topic_queue_table) != layout.topics:
        raise AssertionError("%d topics, not %d" % (len(routes.topic_queue_table), layout.topics))
    if rows.topic_rows(routes) != rows.topic_rows(replica):
        raise AssertionError("the replica's topics differ from the main process's")
    if rows.broker_rows(routes) != rows.broker_rows(replica):
        raise AssertionError("the replica's brokers differ from the main process's")


OPTIONS = (
    options.BROKERS(1000),
    options.TOPICS(1000000, "in all"),
    options.BROKERS_PER_TOPIC(4),
    options.Option("--event-log", "write the event log (the server's default)", action="store_true"),
    options.Option("--profile", "cProfile the main process's part into FILE", metavar="FILE"),
    options.Option("--profile-worker", "cProfile the replica's part into FILE", metavar="FILE"),
    options.Option("--check", "compare the replica with the tables at the end", action="store_true"),
)


def main(argv=None):
    args = options.parse("cold_registration", __doc__, OPTIONS, argv)
    layout = SpreadLayout(args.brokers, args.topics, args.brokers_per_topic)
    with tempfile.TemporaryDirectory(prefix="bench-coldreg-") as workdir:
        times = run_fleet(layout, workdir, args.event_log, args.profile, args.check,
                          profile_worker=args.profile_worker)
    tenth = max(1, args.brokers // 10)
    for name, what in (("handle", "main process: frame in, registered, answered"),
                       ("publish", "main process: the publication encoded"),
                       ("apply", "read worker: the publication applied")):
        values = times[name]
        print("%-8s %7.3f ms per registration (last tenth %7.3f ms; total %6.2f s)  %s"
              % (name, sum(values) / len(values) * 1e3, sum(values[-tenth:]) / tenth * 1e3, sum(values), what))
    main_total = [h + p for h, p in zip(times["handle"], times["publish"])]
    print("main     %7.3f ms per registration (last tenth %7.3f ms)  handle + publish"
          % (sum(main_total) / len(main_total) * 1e3, sum(main_total[-tenth:]) / tenth * 1e3))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
