"""Synthetic NameServer logs with known incidents, for tests and benchmarks.

``python -m spark.gen_logs --out DIR --servers N --brokers M --topics T --hours D --seed S
[--flaps K] [--events-target N] [--java-servers J]``

A small discrete-event simulation of N name servers and M brokers (master/slave pairs and single
masters, T topics spread over 1-3 broker names): brokers register every 30 s with every server, each
server scans every 10 s (own phase) and expires a broker silent for more than 120 s, exactly as the
NameServer does; clients send route queries every second. Injected incidents:

- ``flaps``: a broker silent for 150-400 s towards every server (expired, re-registers within 10 min);
- ``outages``: silent for 20-40 min (expired, comes back much later: an expiration, not a flap);
- ``partitions``: silent for 150-400 s towards ONE server only (a flap there, disagreement between
  servers);
- ``restarts``: a clean shutdown (UNREGISTER_BROKER) or a dropped connection, back 40-90 s later;
- ``drifts``: a broker registering every 45 s instead of 30 s for 1-2 hours;
- ``error_spikes``: for 2 minutes, one JSON server answers ``SPIKE_ERRORS_PER_S`` route queries a second
  with TOPIC_NOT_EXIST (default none: the other incidents' random draws stay as they were);
- ``failovers``, ``no_master``: the controller in the first JSON server loses a group's master and elects
  another, or cannot (``gen_controller``; default none, and drawn apart: the rest stays as it was).

Server ``i`` writes ``DIR/<host>_<port>/namesrv-events.log`` (our JSON events, request aggregates per
second as ``namesrv.observe.eventlog`` writes them) or, for the first ``--java-servers`` servers,
``DIR/<host>_<port>/namesrv.log`` in the Java 4.9 NameServer's logback layout (GMT+8, seconds).
``DIR/_truth.json`` (ignored by Spark: leading underscore) records the parameters, brokers, injected
incidents and every expiration and flap as the servers saw them.

This module does not import the server: it writes the formats, as a cluster job would read them.
"""

import argparse
import heapq
import json
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone

from spark import gen_controller

EXPIRE_MS = 120000
SCAN_MS = 10000
PERIOD_MS = 30000
SPIKE_ERRORS_PER_S = 50
SPIKE_MS = 120000
DEFAULT_START = 1709251200000  # 2024-03-01T00:00:00Z
GMT8 = timezone(timedelta(hours=8))
CODE_NAMES = {101: "GET_KV_CONFIG", 103: "REGISTER_BROKER", 104: "UNREGISTER_BROKER", 105: "GET_ROUTEINFO_BY_TOPIC",
              106: "GET_BROKER_CLUSTER_INFO"}
# latency model: log2 bucket upper bound (µs) -> weight; every request in bucket b takes 3b/4 µs
LATENCY = {101: {16: 10, 32: 60, 64: 30}, 103: {512: 10, 1024: 40, 2048: 35, 4096: 12, 16384: 3},
           104: {256: 50, 512: 50}, 105: {32: 5, 64: 30, 128: 40, 256: 15, 512: 7, 1024: 2, 4096: 1},
           106: {256: 20, 512: 50, 1024: 25, 2048: 5}}
# action priorities at the same millisecond
RECV, CTRL, SEND, SCAN, TICK = 0, 1, 2, 3, 9


class Broker:
    def __init__(self, index, cluster, name, broker_id, topics, rng):
        self.addr = "10.0.2.%d:10911" % (10 + index)
        self.ha = "10.0.2.%d:10912" % (10 + index)
        self.client = "10.0.2.%d:%d" % (10 + index, 40000 + index)
        self.cluster, self.name, self.broker_id, self.topics = cluster, name, broker_id, topics
        self.phase = rng.randrange(PERIOD_MS)
        self.windows = []   # (start, end, kind, servers or None for all, extra)
        self.dv_counter = 1
        self.dv_ts = 0

    def silent_towards(self, server, ms):
        for start, end, kind, servers, _ in self.windows:
            if start <= ms < end and kind != "drift" and (servers is None or server in servers):
                return True
        return False

    def period(self, ms):
        for start, end, kind, _, extra in self.windows:
            if kind == "drift" and start <= ms < end:
                return extra
        return PERIOD_MS


class JsonSink:
    """Our event log: one JSON object per line (``namesrv.observe.eventlog`` format)."""

    def __init__(self, path, server_id):
        self.f = open(path, "w", encoding="utf-8", buffering=1 << 20)
        self.server = server_id
        self.lines = 0

    def emit(self, ts, event, **fields):
        record = {"ts": ts, "event": event, "server": self.server}
        record.update(fields)
        self.f.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.lines += 1

    def close(self):
        self.f.close()


class JavaSink:
    """The Java 4.9 NameServer's namesrv.log (logback ``%d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m%n``)."""

    def __init__(self, path):
        self.f = open(path, "w", encoding="utf-8", buffering=1 << 20)
        self.lines = 0
        self._sec = None
        self._stamp = None

    def log(self, ms, level, thread, message):
        sec = ms // 1000
        if sec != self._sec:
            self._sec = sec
            self._stamp = datetime.fromtimestamp(sec, GMT8).strftime("%Y-%m-%d %H:%M:%S")
        self.f.write("%s %s %s - %s\n" % (self._stamp, level, thread, message))
        self.lines += 1

    def raw(self, text):
        self.f.write(text + "\n")
        self.lines += 1

    def close(self):
        self.f.close()


def queue_data(name):
    return "QueueData [brokerName=%s, readQueueNums=8, writeQueueNums=8, perm=6, topicSysFlag=0]" % name


class Server:
    """One name server's route tables and what it writes about them."""

    def __init__(self, index, java, out_dir, rng, truth, flap_ms):
        self.host, self.port = "10.0.1.%d" % (10 + index), 9876
        self.id = "%s:%d" % (self.host, self.port)
        directory = os.path.join(out_dir, "%s_%d" % (self.host, self.port))
        os.makedirs(directory, exist_ok=True)
        self.java = java
        self.sink = (JavaSink(os.path.join(directory, "namesrv.log")) if java
                     else JsonSink(os.path.join(directory, "namesrv-events.log"), self.id))
        self.rng, self.truth, self.flap_ms = rng, truth, flap_ms
        self.scan_phase = rng.randrange(SCAN_MS)
        self.live = {}        # addr -> last registration ms
        self.brokers = {}     # addr -> Broker
        self.names = {}       # brokerName -> set(addr)
        self.topics = {}      # topic -> set(brokerName)
        self.expired = {}     # addr -> ms of its last expiration
        self.pending = {}     # (code, resp) -> [count, usSum, usMax, hist, peers]
        self.scans = 0
        self.spikes = []      # (start, end) ms of injected error spikes

    # -- requests ------------------------------------------------------------------
    def request(self, code, resp, count, peers):
        weights = LATENCY[code]
        buckets = self.rng.choices(list(weights), list(weights.values()), k=count)
        agg = self.pending.setdefault((code, resp), [0, 0, 0, {}, set()])
        agg[0] += count
        for b in buckets:
            us = b * 3 // 4
            agg[1] += us
            agg[2] = max(agg[2], us)
            agg[3][b] = agg[3].get(b, 0) + 1
        agg[4].update(peers)

    def tick(self, second, qps):
        """End of ``second``: client queries, then this second's request aggregates (JSON servers)."""
        if self.java:
            self.pending.clear()
            return
        rng = self.rng
        clients = ["10.0.3.%d:%d" % (i % 250, 50000 + i) for i in range(60)]
        n = max(1, int(rng.gauss(qps, qps ** 0.5)))
        self.request(105, 0, n, rng.sample(clients, min(n, 20)))
        if rng.random() < 0.3:
            self.request(105, 17, rng.randint(1, 3), rng.sample(clients, 1))
        if rng.random() < 0.1:
            self.request(106, 0, 1, rng.sample(clients, 1))
        if rng.random() < 0.02:
            self.request(101, 22, 1, rng.sample(clients, 1))
        if any(t0 <= second * 1000 < t1 for t0, t1 in self.spikes):
            self.request(105, 17, SPIKE_ERRORS_PER_S, clients[:1])
        for (code, resp), (count, us_sum, us_max, hist, peers) in sorted(self.pending.items()):
            self.sink.emit(second * 1000, "request", code=code, name=CODE_NAMES[code], resp=resp, count=count,
                           us=us_sum // count, usSum=us_sum, usMax=us_max,
                           hist={str(k): v for k, v in sorted(hist.items())}, peers=len(peers))
        self.pending.clear()

    # -- route tables ---------------------------------------------------------------
    def _add_name(self, b, ms):
        """Master registration: its topics gain its brokerName. Returns [(topic, before, after)]."""
        changes = []
        if b.broker_id != 0:
            return changes
        for topic in b.topics:
            current = self.topics.setdefault(topic, set())
            if b.name not in current:
                before = sorted(current)
                current.add(b.name)
                changes.append((topic, before, sorted(current)))
        return changes

    def _remove_addr(self, b):
        """Drop ``b``; if its brokerName has no address left, drop that name from every topic."""
        self.live.pop(b.addr, None)
        addrs = self.names.get(b.name, set())
        addrs.discard(b.addr)
        changes = []
        name_removed = not addrs
        snapshot = sorted(self.topics)
        if name_removed:
            self.names.pop(b.name, None)
            for topic in snapshot:
                current = self.topics[topic]
                if b.name in current:
                    before = sorted(current)
                    current.discard(b.name)
                    changes.append((topic, before, sorted(current)))
                    if not current:
                        del self.topics[topic]
        return changes, name_removed, snapshot

    def _topic_events(self, ms, changes):
        for topic, before, after in changes:
            self.sink.emit(ms, "topic_route_changed", topic=topic, before=before, after=after)

    def receive(self, b, ms):
        first = b.addr not in self.live
        self.live[b.addr] = ms
        self.brokers[b.addr] = b
        self.names.setdefault(b.name, set()).add(b.addr)
        changes = self._add_name(b, ms)
        us = self.rng.choice([600, 900, 1500, 2500])
        self.request(103, 0, 1, [b.client])
        if first and b.addr in self.expired:
            expired_at = self.expired.pop(b.addr)
            if ms - expired_at <= self.flap_ms:
                self.truth["flaps"].append({"server": self.id, "brokerAddr": b.addr, "expiredAt": expired_at,
                                            "reRegisteredAt": ms})
        if self.java:
            return self._java_receive(b, ms, first, changes)
        self._topic_events(ms, changes)
        self.sink.emit(ms, "broker_registered" if first else "broker_heartbeat", cluster=b.cluster,
                       brokerName=b.name, brokerId=b.broker_id, brokerAddr=b.addr, topics=len(b.topics),
                       dataVersion={"timestamp": b.dv_ts, "counter": b.dv_counter}, changed=first,
                       bodyBytes=120 + 180 * len(b.topics), compressed=False, us=us)
        if first and b.broker_id == 0:   # the routes name this master again
            self.sink.emit(ms, "route_master_changed", cluster=b.cluster, brokerName=b.name, masterBrokerId=0,
                           masterAddress=b.addr, masterEpoch=0, trigger="registration")

    def scan(self, ms):
        self.scans += 1
        for addr, last in sorted(self.live.items()):
            if ms - last > EXPIRE_MS:
                b = self.brokers[addr]
                changes, name_removed, snapshot = self._remove_addr(b)
                self.expired[addr] = ms
                self.truth["expirations"].append({"server": self.id, "brokerAddr": addr, "expiredAt": ms,
                                                  "ageMs": ms - last})
                if self.java:
                    self._java_expired(b, ms, changes, name_removed, snapshot)
                    continue
                self._topic_events(ms, changes)
                ident = dict(cluster=b.cluster, brokerName=b.name, brokerId=b.broker_id, brokerAddr=addr)
                self.sink.emit(ms, "broker_expired", ageMs=ms - last, **ident)
                self.sink.emit(ms, "broker_unregistered", reason="expired", **ident)
                self.sink.emit(ms + 1, "channel_closed", peer=b.client, brokerAddr=None)
        if self.java and self.scans % 60 == 0:
            self._java_print_all(ms)

    def unregister(self, b, ms):
        self.request(104, 0, 1, [b.client])
        if b.addr not in self.live:
            return
        changes, name_removed, _ = self._remove_addr(b)
        if self.java:
            return self._java_unregister(b, ms, changes, name_removed)
        self._topic_events(ms, changes)
        self.sink.emit(ms, "broker_unregistered", cluster=b.cluster, brokerName=b.name, brokerId=b.broker_id,
                       brokerAddr=b.addr, reason="request")

    def channel_closed(self, b, ms):
        bound = b.addr in self.live
        changes, name_removed, snapshot = self._remove_addr(b) if bound else ([], False, [])
        if self.java:
            return self._java_closed(b, ms, bound, changes, name_removed, snapshot)
        self._topic_events(ms, changes)
        self.sink.emit(ms, "channel_closed", peer=b.client, brokerAddr=b.addr if bound else None)
        if bound:
            self.sink.emit(ms, "broker_unregistered", cluster=b.cluster, brokerName=b.name, brokerId=b.broker_id,
                           brokerAddr=b.addr, reason="channel_closed")

    # -- the Java 4.9 wording ----------------------------------------------------------
    def _java_receive(self, b, ms, first, changes):
        log, thread = self.sink.log, "RemotingExecutorThread_%d" % self.rng.randint(1, 8)
        if b.broker_id == 0:
            log(ms, "INFO", thread, "cluster [%s] brokerName [%s] master address change from %s to %s"
                % (b.cluster, b.name, "null" if first else b.addr, b.addr))
        for topic, before, _ in changes:
            if not before:
                log(ms, "INFO", thread, "new topic registered, %s %s" % (topic, queue_data(b.name)))
        if first:
            log(ms, "INFO", thread, "new broker registered, %s HAServer: %s" % (b.addr, b.ha))

    def _java_removed(self, b, ms, changes, name_removed, snapshot, thread):
        log = self.sink.log
        log(ms, "INFO", thread, "remove brokerAddr[%d, %s] from brokerAddrTable, because channel destroyed"
            % (b.broker_id, b.addr))
        if not name_removed:
            return
        log(ms, "INFO", thread, "remove brokerName[%s] from brokerAddrTable, because channel destroyed" % b.name)
        log(ms, "INFO", thread, "remove brokerName[%s], clusterName[%s] from clusterAddrTable, because channel "
            "destroyed" % (b.name, b.cluster))
        changed = {topic: after for topic, _, after in changes}
        for topic in snapshot:
            qd = queue_data(b.name) if topic in changed else "null"
            log(ms, "INFO", thread, "remove topic[%s %s], from topicQueueTable, because channel destroyed"
                % (topic, qd))
            if topic in changed and not changed[topic]:
                log(ms, "INFO", thread, "remove topic[%s] all queue, from topicQueueTable, because channel destroyed"
                    % topic)

    def _java_expired(self, b, ms, changes, name_removed, snapshot):
        self.sink.log(ms, "WARN", "NSScheduledThread1", "The broker channel expired, %s %dms" % (b.addr, EXPIRE_MS))
        self._java_removed(b, ms, changes, name_removed, snapshot, "NSScheduledThread1")
        self.sink.log(ms, "INFO", "NSScheduledThread1",
                      "closeChannel: close the connection to remote address[%s] result: true" % b.client)
        self.sink.log(ms + 1, "INFO", "NettyServerCodecThread_1",
                      "NETTY SERVER PIPELINE: channelInactive, the channel[%s]" % b.client)

    def _java_unregister(self, b, ms, changes, name_removed):
        log, thread = self.sink.log, "RemotingExecutorThread_%d" % self.rng.randint(1, 8)
        log(ms, "INFO", thread, "unregisterBroker, remove from brokerLiveTable OK, %s" % b.addr)
        log(ms, "INFO", thread, "unregisterBroker, remove addr from brokerAddrTable OK, %s" % b.addr)
        if name_removed:
            log(ms, "INFO", thread, "unregisterBroker, remove name from brokerAddrTable OK, %s" % b.name)
            log(ms, "INFO", thread, "unregisterBroker, remove name from clusterAddrTable OK, %s" % b.name)
        for topic, _, after in changes:
            log(ms, "INFO", thread, "removeTopicByBrokerName, remove one broker's topic %s %s"
                % (topic, queue_data(b.name)))
            if not after:
                log(ms, "INFO", thread, "removeTopicByBrokerName, remove the topic all queue %s" % topic)

    def _java_closed(self, b, ms, bound, changes, name_removed, snapshot):
        self.sink.log(ms, "INFO", "NettyServerCodecThread_2", "NETTY SERVER PIPELINE: channelInactive, the channel[%s]"
                      % b.client)
        if bound:
            self.sink.log(ms, "INFO", "NettyEventExecutor", "the broker's channel destroyed, %s, clean it's data "
                          "structure at once" % b.addr)
            self._java_removed(b, ms, changes, name_removed, snapshot, "NettyEventExecutor")

    def _java_print_all(self, ms):
        log, t = self.sink.log, "NSScheduledThread1"
        log(ms, "INFO", t, "--------------------------------------------------------")
        log(ms, "INFO", t, "topicQueueTable SIZE: %d" % len(self.topics))
        for topic in sorted(self.topics)[:3]:
            log(ms, "INFO", t, "topicQueueTable Topic: %s {%s}" % (
                topic, ", ".join("%s=%s" % (n, queue_data(n)) for n in sorted(self.topics[topic]))))
        log(ms, "INFO", t, "brokerAddrTable SIZE: %d" % len(self.names))
        log(ms, "INFO", t, "brokerLiveTable SIZE: %d" % len(self.live))
        log(ms, "INFO", t, "clusterAddrTable SIZE: %d" % len({b.cluster for b in self.brokers.values()}))

    def start(self, ms):
        if self.java:
            self.sink.log(ms, "INFO", "main", "Server is running in TLS disabled mode")
            self.sink.log(ms, "INFO", "main", "The Name Server boot success. serializeType=JSON")
        else:
            self.sink.emit(ms, "server_started", listen=self.id)

    def stop(self, ms):
        if not self.java:
            self.sink.emit(ms, "server_stopped", listen=self.id)
        self.sink.close()


# -- the fleet and its incidents ------------------------------------------------------------------

def make_brokers(count, topics, rng):
    """Broker names with a master and (every other name) a slave; topics on 1-3 names' masters."""
    brokers, name_index = [], 0
    clusters = max(1, count // 8)
    while len(brokers) < count:
        name = "broker-%c%d" % (chr(ord("a") + name_index % 26), name_index // 26)
        cluster = "cluster-%d" % (name_index % clusters) if clusters > 1 else "DefaultCluster"
        brokers.append(Broker(len(brokers), cluster, name, 0, [], rng))
        if name_index % 2 == 0 and len(brokers) < count:
            brokers.append(Broker(len(brokers), cluster, name, 1, [], rng))
        name_index += 1
    masters = [b for b in brokers if b.broker_id == 0]
    for t in range(topics):
        topic = "Topic%04d" % t
        for master in rng.sample(masters, min(len(masters), rng.choice([1, 1, 2, 3]))):
            master.topics.append(topic)
    return brokers


def _place(kind, brokers, rng, start, end, duration, servers, extra=None, pad=15 * 60000):
    """Pick a broker and a start for an incident that overlaps none of that broker's others."""
    for _ in range(200):
        b = rng.choice(brokers)
        latest = end - duration - pad
        earliest = start + 5 * 60000
        if latest <= earliest:
            return None
        t0 = rng.randrange(earliest, latest)
        t1 = t0 + duration
        if all(t1 + pad <= s or t0 >= e + pad for s, e, *_ in b.windows):
            b.windows.append((t0, t1, kind, servers, extra))
            return {"kind": kind, "brokerAddr": b.addr, "start": t0, "end": t1,
                    "servers": sorted(servers) if servers else None, **({"periodMs": extra} if kind == "drift" else {})}
    return None


def inject(brokers, server_ids, rng, start, end, flaps, outages, partitions, restarts, drifts):
    injected = []

    def add(item):
        if item is not None:
            injected.append(item)

    for _ in range(flaps):
        add(_place("flap", brokers, rng, start, end, rng.randint(150, 400) * 1000, None))
    for _ in range(outages):
        add(_place("outage", brokers, rng, start, end, rng.randint(20, 40) * 60000, None))
    for _ in range(partitions):
        add(_place("partition", brokers, rng, start, end, rng.randint(150, 400) * 1000, {rng.choice(server_ids)}))
    for i in range(restarts):
        add(_place("unregister" if i % 2 == 0 else "close", brokers, rng, start, end,
                   rng.randint(40, 90) * 1000, None))
    for _ in range(drifts):
        add(_place("drift", brokers, rng, start, end, rng.randint(60, 120) * 60000, None, extra=45000))
    return injected


def inject_error_spikes(sims, rng, start, end, count):
    """``count`` error spikes on JSON servers (no random draw at all when ``count`` is 0)."""
    injected = []
    json_servers = [s for s in sims if not s.java]
    for _ in range(count if json_servers and end - start > 20 * 60000 else 0):
        server = rng.choice(json_servers)
        t0 = (start + rng.randrange(5 * 60000, end - start - 10 * 60000)) // 60000 * 60000
        server.spikes.append((t0, t0 + SPIKE_MS))
        injected.append({"kind": "errors", "brokerAddr": None, "start": t0, "end": t0 + SPIKE_MS,
                         "servers": [server.id], "code": 105, "resp": 17, "perSecond": SPIKE_ERRORS_PER_S})
    return injected


def estimate_events_per_hour(servers, brokers, java_servers=0, qps=20):
    json_servers = servers - java_servers
    per_second = 1 + 0.3 + 0.1 + 0.02 + 1.0 * min(1.0, brokers / 30.0)
    return servers * brokers * 120 + json_servers * 3600 * per_second


def generate(out, servers=3, brokers=6, topics=20, hours=2.0, seed=1, flaps=3, outages=1, partitions=1,
             restarts=2, drifts=1, java_servers=0, start_ms=DEFAULT_START, route_qps=20, flap_minutes=10,
             events_target=None, error_spikes=0, failovers=0, no_master=0):
    """Write the logs and ``_truth.json`` into ``out``; returns the truth dict."""
    if events_target:
        hours = max(0.25, events_target / estimate_events_per_hour(servers, brokers, java_servers, route_qps))
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    end_ms = start_ms + int(hours * 3600000)
    truth = {"params": dict(servers=servers, brokers=brokers, topics=topics, hours=hours, seed=seed, flaps=flaps,
                            outages=outages, partitions=partitions, restarts=restarts, drifts=drifts,
                            java_servers=java_servers, route_qps=route_qps, flap_minutes=flap_minutes,
                            error_spikes=error_spikes, failovers=failovers, no_master=no_master),
             "start": start_ms, "end": end_ms, "flaps": [], "expirations": []}
    fleet = make_brokers(brokers, topics, rng)
    sims = [Server(i, i < java_servers, out, rng, truth, flap_minutes * 60000) for i in range(servers)]
    truth["servers"] = [{"id": s.id, "format": "java" if s.java else "json"} for s in sims]
    truth["brokers"] = [{"brokerAddr": b.addr, "cluster": b.cluster, "brokerName": b.name, "brokerId": b.broker_id,
                         "topics": b.topics} for b in fleet]
    truth["injected"] = inject(fleet, [s.id for s in sims], rng, start_ms, end_ms, flaps, outages, partitions,
                               restarts, drifts)
    truth["injected"] += inject_error_spikes(sims, rng, start_ms, end_ms, error_spikes)
    json_sims = [s for s in sims if not s.java]   # the first leads the controllers
    planned, truth["controller"] = gen_controller.plan(fleet, seed, start_ms, end_ms, failovers, no_master,
                                                       len(json_sims)) if json_sims else ([], [])
    run(sims, fleet, rng, start_ms, end_ms, route_qps,
        [(ms, json_sims[k], event, fields) for ms, k, event, fields in planned])
    truth["lines"] = {s.id: s.sink.lines for s in sims}
    truth["events"] = sum(truth["lines"].values())
    with open(os.path.join(out, "_truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
    return truth


def run(sims, fleet, rng, start_ms, end_ms, qps, scheduled=()):
    """Simulate until ``end_ms``; ``scheduled``: (ms, server, event, fields) written as they come."""
    heap, seq = [], [0]

    def push(ms, prio, action, *args):
        seq[0] += 1
        heapq.heappush(heap, (ms, prio, seq[0], action, args))

    for s in sims:
        s.start(start_ms + rng.randrange(200))
        push(start_ms + s.scan_phase, SCAN, "scan", s)
        push(start_ms + 1000, TICK, "tick", s)
    for ms, server, event, fields in scheduled:
        push(ms, CTRL, "emit", server, event, fields)
    for b in fleet:
        b.dv_ts = start_ms - 3600000
        push(start_ms + 500 + b.phase, SEND, "send", b)
        for t0, t1, kind, _, _ in b.windows:
            if kind in ("unregister", "close"):
                push(t0, CTRL, kind, b)
    while heap:
        ms, _, _, action, args = heapq.heappop(heap)
        if ms >= end_ms:
            break
        if action == "send":
            b = args[0]
            for s in sims:
                if not b.silent_towards(s.id, ms):
                    push(ms + rng.randint(1, 25), RECV, "recv", s, b)
            push(ms + b.period(ms) + rng.randint(-20, 20), SEND, "send", b)
        elif action == "recv":
            args[0].receive(args[1], ms)
        elif action == "scan":
            args[0].scan(ms)
            push(ms + SCAN_MS, SCAN, "scan", args[0])
        elif action == "emit":
            server, event, fields = args
            server.sink.emit(ms, event, **fields)
        elif action == "tick":
            args[0].tick(ms // 1000 - 1, qps)
            push(ms + 1000, TICK, "tick", args[0])
        elif action in ("unregister", "close"):
            b = args[0]
            b.dv_counter += 1
            b.dv_ts = ms
            for s in sims:
                when = ms + rng.randint(1, 25)
                (s.unregister if action == "unregister" else s.channel_closed)(b, when)
    for s in sims:
        s.stop(end_ms)


def build_parser():
    p = argparse.ArgumentParser(prog="python -m spark.gen_logs", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--servers", type=int, default=3)
    p.add_argument("--brokers", type=int, default=6)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--hours", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--flaps", type=int, default=3)
    p.add_argument("--outages", type=int, default=1)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--restarts", type=int, default=2)
    p.add_argument("--drifts", type=int, default=1)
    p.add_argument("--java-servers", type=int, default=0, help="the first J servers write Java 4.9 namesrv.log")
    p.add_argument("--route-qps", type=int, default=20, help="route queries per second per server")
    p.add_argument("--events-target", type=int, default=None, help="choose --hours to write about this many lines")
    p.add_argument("--error-spikes", type=int, default=0, help="2-minute bursts of TOPIC_NOT_EXIST answers")
    p.add_argument("--failovers", type=int, default=0, help="masters the controller replaces")
    p.add_argument("--no-master", type=int, default=0, help="groups the controller can give no master")
    p.add_argument("--start", type=int, default=DEFAULT_START, help="start time, epoch ms")
    return p


def main(argv=None):
    a = build_parser().parse_args(argv)
    started = time.time()
    truth = generate(a.out, a.servers, a.brokers, a.topics, a.hours, a.seed, a.flaps, a.outages, a.partitions,
                     a.restarts, a.drifts, a.java_servers, a.start, a.route_qps, events_target=a.events_target,
                     error_spikes=a.error_spikes, failovers=a.failovers, no_master=a.no_master)
    print(json.dumps({"out": a.out, "lines": truth["events"], "hours": round(truth["params"]["hours"], 3),
                      "flaps": len(truth["flaps"]), "expirations": len(truth["expirations"]),
                      "injected": len(truth["injected"]), "seconds": round(time.time() - started, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
