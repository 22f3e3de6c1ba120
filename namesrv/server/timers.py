"""The name server's timers, as one child service: Java's NamesrvController schedules the same first two.

- the liveness scan (``scanNotActiveBrokerInterval``, first after 5 s);
- the KV print (``kvConfigPrintInterval``, first after 1 min);
- route snapshots (``routeSnapshotInterval``), only while the port serves: during a takeover the tables
  are not ours yet, and an empty copy must never replace the last good snapshot;
  (the three restart when their property changes: UPDATE_NAMESRV_CONFIG may change them)
- the event log's per-second request aggregates.
"""

import gc

from twisted.application import service

from namesrv.timing.periodic import PeriodicCall


class ServerTimers(service.MultiService):
    name = "timers"

    def __init__(self, config, reactor, housekeeping, kv, events, snapshots=None, readiness=None):
        service.MultiService.__init__(self)
        self.housekeeping = housekeeping
        self.snapshots = snapshots
        self.readiness = readiness
        self.scan = self._every("liveness scan", self.scan_not_active_brokers,
                                lambda: config.scanNotActiveBrokerInterval / 1000.0, 5, reactor)
        #: property -> the timer that restarts when it changes
        self.periods = {"scanNotActiveBrokerInterval": self.scan,
                        "kvConfigPrintInterval": self._every("KV print", kv.print_all,
                                                             lambda: config.kvConfigPrintInterval, 60, reactor)}
        if snapshots is not None:
            self.periods["routeSnapshotInterval"] = self._every(
                "route snapshot", self.save_snapshot, lambda: config.routeSnapshotInterval,
                config.routeSnapshotInterval, reactor)
        self._every("event log aggregates", events.flush_aggregates, lambda: 1.0, 1.0, reactor)
        config.add_listener(self._config_changed)

    def _every(self, name, function, interval, first_delay, reactor):
        timer = PeriodicCall(name, function, interval, first_delay, reactor)
        timer.setServiceParent(self)
        return timer

    def scan_not_active_brokers(self):
        self.housekeeping.scan_not_active_brokers()
        # Route tables are long-lived: moving them out of the collector's reach keeps full
        # collections (bench/results/design-figures.md#frozen-tables) off the reactor thread.
        gc.freeze()

    def save_snapshot(self):
        if self.readiness is None or self.readiness.serving_address is not None:
            return self.snapshots.save_in_background()

    def _config_changed(self, name, old, new):
        if name in self.periods:
            self.periods[name].restart()
