"""Memory: the server's RSS with B brokers × N topics registered, per (topic, broker) entry.

Every broker registers the same N topics (a topic created on every broker of a cluster),
so the tables hold N topics × B QueueData entries plus B brokers. The raw size of an
entry is the JSON of its QueueData as a route answer carries it; the ratio says how much
the server's representation costs over the data itself. RSS (VmRSS) is read from /proc
before the first and after the last registration, with every broker still connected;
VmHWM (peak) shows what decoding the bodies cost on top.
"""

import time

from bench.brokers import FakeBroker, queue_data_json_bytes, register_body, topic_names
from bench.servers import NamesrvServer

SECTION = "Memory (server RSS)"


def run(collector, scale, log=print):
    brokers, topics = scale.memory_brokers, scale.memory_topics
    names = topic_names("BenchMemTopic", topics)
    params = {"brokers": brokers, "topics": topics}
    fleet = []
    with NamesrvServer() as server:
        try:
            probe = FakeBroker(server.port, "bench-mem-probe", 2999)
            fleet.append(probe)
            probe.trivial()
            time.sleep(0.2)
            before = server.rss_kib()
            server.gc_pauses()
            started = time.perf_counter()
            raw_bytes = 0
            for i in range(brokers):
                broker = FakeBroker(server.port, "bench-mem-broker-%03d" % i, 3000 + i)
                fleet.append(broker)
                answer, _ = broker.register(register_body(names, False), False)
                if answer.code != 0:
                    raise RuntimeError("registration refused: %s %s" % (answer.code, answer.remark))
                raw_bytes += topics * queue_data_json_bytes(broker.name)
            seconds = time.perf_counter() - started
            probe.trivial()
            after = server.rss_kib()
            peak = server.peak_rss_kib()
            pauses = server.gc_pauses()
        finally:
            for broker in fleet:
                broker.close()
    entries = brokers * topics
    per_entry = (after - before) * 1024.0 / entries
    raw_per_entry = raw_bytes / entries
    collector.add(SECTION, "memory.rss_before_mib", before / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.rss_after_mib", after / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.rss_peak_mib", peak / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.bytes_per_entry", per_entry, "bytes", entries=entries, **params)
    collector.add(SECTION, "memory.raw_json_bytes_per_entry", raw_per_entry, "bytes", entries=entries, **params)
    collector.add(SECTION, "memory.ratio_to_raw", per_entry / raw_per_entry, "ratio", **params)
    collector.add(SECTION, "memory.register_entries_per_s", entries / seconds, "entries/s", **params)
    collector.add(SECTION, "memory.gc_longest_pause_ms", max(pauses["longest_s"]) * 1000, "ms",
                  gc_collections="/".join(str(n) for n in pauses["count"]),
                  gc_total_ms=round(sum(pauses["total_s"]) * 1000, 1), tracked_objects=pauses["tracked_objects"],
                  **params)
    log("memory: RSS %.1f -> %.1f MiB (peak %.1f) for %d entries: %.0f bytes/entry vs %.0f raw JSON (%.1fx); "
        "longest GC pause while registering %.1f ms (collections %s, %d tracked objects)"
        % (before / 1024.0, after / 1024.0, peak / 1024.0, entries, per_entry, raw_per_entry,
           per_entry / raw_per_entry, max(pauses["longest_s"]) * 1000, pauses["count"], pauses["tracked_objects"]))
