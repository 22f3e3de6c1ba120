"""Memory: the server's RSS with B brokers × N topics registered, per (topic, broker) entry.

Every broker registers the same N topics (a topic created on every broker of a cluster),
so the tables hold N topics × B QueueData entries plus B brokers. The raw size of an
entry is the JSON of its QueueData as a route answer carries it; the ratio says how much
the server's representation costs over the data itself. RSS (VmRSS) is read from /proc
before the first and after the last registration, with every broker still connected;
VmHWM (peak) shows what decoding the bodies cost on top.

Measured twice: on the one-process server (``memory.*``, comparable with runs before read
workers were the default) and on the default configuration (``memory.default.*``), where
each read worker holds a replica of the tables: there the RSS is the whole process tree's
(the main process and its workers, read once every worker's RSS has stopped growing,
since replicas are fed in parts after the registrations are answered), next to the main
process's alone, and compared with the one-process figure.
"""

import time

from bench.lib.brokers import FakeBroker, queue_data_json_bytes, register_body, topic_names
from bench.scenarios.cores import DEFAULT, resolved, start_server
from bench.lib.servers import child_pids, read_status_kib

SECTION = "Memory (server RSS)"
#: The process tree's RSS counts as settled when it moved less than this over ``SETTLE_SECONDS``.
SETTLE_KIB = 256
SETTLE_SECONDS = 1.0
SETTLE_TIMEOUT = 60.0


def tree_rss_kib(pid):
    """``(total, main, workers)`` VmRSS in KiB of ``pid`` and its child processes."""
    main = read_status_kib(pid, "VmRSS") or 0
    workers = sum(read_status_kib(child, "VmRSS") or 0 for child in child_pids(pid))
    return main + workers, main, workers


def settled_tree_rss_kib(pid):
    """The tree's RSS once it stopped growing (replicas fed), or the last reading at the timeout;
    at once for a process with no children."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last = tree_rss_kib(pid)
    if not child_pids(pid):
        return last
    while time.monotonic() < deadline:
        time.sleep(SETTLE_SECONDS)
        reading = tree_rss_kib(pid)
        if abs(reading[0] - last[0]) < SETTLE_KIB:
            return reading
        last = reading
    return last


def register_fleet(server, brokers, topics):
    """Register the fleet (brokers stay connected); ``(before, after, peak, pauses, seconds, raw
    bytes, fleet)`` with RSS readings ``(total, main, workers)`` in KiB."""
    names = topic_names("BenchMemTopic", topics)
    fleet = []
    try:
        probe = FakeBroker(server.port, "bench-mem-probe", 2999)
        fleet.append(probe)
        probe.trivial()
        before = settled_tree_rss_kib(server.pid)
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
        after = settled_tree_rss_kib(server.pid)
        peak = server.peak_rss_kib()
        pauses = server.gc_pauses()
    except Exception:
        for broker in fleet:
            broker.close()
        raise
    return before, after, peak, pauses, seconds, raw_bytes, fleet


def measure(brokers, topics, workers, exclusive):
    server = start_server(workers, exclusive)
    try:
        *readings, fleet = register_fleet(server, brokers, topics)
        for broker in fleet:
            broker.close()
        return readings
    finally:
        server.cleanup()


def run(collector, scale, log=print):
    brokers, topics = scale.memory_brokers, scale.memory_topics
    params = {"brokers": brokers, "topics": topics}
    entries = brokers * topics
    before, after, peak, pauses, seconds, raw_bytes = measure(brokers, topics, 0, False)
    per_entry = (after[0] - before[0]) * 1024.0 / entries
    raw_per_entry = raw_bytes / entries
    collector.add(SECTION, "memory.rss_before_mib", before[0] / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.rss_after_mib", after[0] / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.rss_peak_mib", peak / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.bytes_per_entry", per_entry, "bytes", entries=entries, **params)
    collector.add(SECTION, "memory.raw_json_bytes_per_entry", raw_per_entry, "bytes", entries=entries, **params)
    collector.add(SECTION, "memory.ratio_to_raw", per_entry / raw_per_entry, "ratio", **params)
    collector.add(SECTION, "memory.register_entries_per_s", entries / seconds, "entries/s", **params)
    collector.add(SECTION, "memory.gc_longest_pause_ms", max(pauses["longest_s"]) * 1000, "ms",
                  gc_collections="/".join(str(n) for n in pauses["count"]),
                  gc_total_ms=round(sum(pauses["total_s"]) * 1000, 1), tracked_objects=pauses["tracked_objects"],
                  **params)
    log("memory, one process: RSS %.1f -> %.1f MiB (peak %.1f) for %d entries: %.0f bytes/entry vs %.0f raw JSON "
        "(%.1fx); longest GC pause while registering %.1f ms (collections %s, %d tracked objects)"
        % (before[0] / 1024.0, after[0] / 1024.0, peak / 1024.0, entries, per_entry, raw_per_entry,
           per_entry / raw_per_entry, max(pauses["longest_s"]) * 1000, pauses["count"], pauses["tracked_objects"]))
    report_default(collector, log, brokers, topics, params, after, per_entry)


def report_default(collector, log, brokers, topics, params, one_after, one_per_entry):
    """The default configuration's whole process tree next to the one-process figures."""
    entries = brokers * topics
    before, after, peak, _, _, _ = measure(brokers, topics, DEFAULT, DEFAULT)
    params = dict(params, route_read_workers=resolved(DEFAULT))
    per_entry = (after[0] - before[0]) * 1024.0 / entries
    collector.add(SECTION, "memory.default.rss_before_mib", before[0] / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.default.rss_after_mib", after[0] / 1024.0, "MiB",
                  main_mib=round(after[1] / 1024.0, 1), workers_mib=round(after[2] / 1024.0, 1), **params)
    collector.add(SECTION, "memory.default.main_peak_mib", peak / 1024.0, "MiB", **params)
    collector.add(SECTION, "memory.default.bytes_per_entry", per_entry, "bytes", entries=entries, **params)
    collector.add(SECTION, "memory.default.ratio_to_1proc", after[0] / one_after[0], "ratio", **params)
    collector.add(SECTION, "memory.default.entry_ratio_to_1proc", per_entry / one_per_entry, "ratio", **params)
    log("memory, default (%d read worker(s)), all processes: RSS %.1f -> %.1f MiB (main %.1f, workers %.1f) for %d "
        "entries: %.0f bytes/entry; %.2fx the one process's RSS (%.2fx per entry; target at most 2x)"
        % (resolved(DEFAULT), before[0] / 1024.0, after[0] / 1024.0, after[1] / 1024.0, after[2] / 1024.0, entries,
           per_entry, after[0] / one_after[0], per_entry / one_per_entry))
