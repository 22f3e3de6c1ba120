"""The route-query path under cProfile, in the server process, while the load generator runs.

The server (started through ``bench.lib.profiled_twistd``) profiles its reactor thread between
SIGUSR1 and SIGUSR2; the stats are read back here. The top functions by own time, and
the NameServer's own functions by cumulative time, go to latest.md; the full listing to
``<out>/profile-route.txt``. cProfile makes small functions look dearer than they are;
compare shares, not absolute times.
"""

import io
import os
import pstats

from bench.lib.loadgen import run_load

SECTION = "Profile of the route path (cProfile, server reactor thread)"
OUR_CODE = ("namesrv/", "processors/")


def _label(func):
    filename, line, name = func
    if filename == "~":
        return name  # a C function: "<built-in method ...>"
    parts = filename.split(os.sep)
    for anchor in ("namesrv", "processors", "twisted", "bench"):
        if anchor in parts:
            filename = "/".join(parts[len(parts) - 1 - parts[::-1].index(anchor):])
            break
    else:
        filename = parts[-1]
    return "%s:%d(%s)" % (filename, line, name)


def top_functions(stats_file, count=15, by="own", only=None):
    """``(total_seconds, [(label, own_seconds, cumulative_seconds, calls)])``, dearest first by
    ``by`` ("own" or "cumulative"); ``only``: keep labels starting with one of these prefixes."""
    stats = pstats.Stats(stats_file, stream=io.StringIO())
    rows = [(_label(func), tt, ct, nc) for func, (cc, nc, tt, ct, callers) in stats.stats.items()]
    if only:
        rows = [row for row in rows if row[0].startswith(tuple(only))]
    rows.sort(key=lambda row: row[1] if by == "own" else row[2], reverse=True)
    return stats.total_tt, rows[:count]


def markdown_table(rows, total, answered):
    text = ["| function | own s | own share | cumulative s | calls | own us/req | cumulative us/req |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for label, own, cumulative, calls in rows:
        text.append("| `%s` | %.3f | %.1f%% | %.3f | %d | %.2f | %.2f |" % (
            label, own, 100 * own / total if total else 0, cumulative, calls, own / answered * 1e6,
            cumulative / answered * 1e6))
    return "\n".join(text)


def run(collector, server, fleet, scale, out_dir, log=print):
    spec = scale.profile_load
    server.start_profile()
    try:
        result = run_load(server.port, fleet.templates(), spec, server=server)
    finally:
        stats_file = server.stop_profile()
    answered = max(1, result.answered)  # the profile covers the warm-up too
    total, rows = top_functions(stats_file)
    _, ours = top_functions(stats_file, count=12, by="cumulative", only=OUR_CODE)
    collector.add(SECTION, "profile.route.cpu_us_per_request", total / answered * 1e6, "us",
                  profiled_rps=round(result.rps), **spec.params())
    collector.note(SECTION, "Top %d functions by own time (%.2f s profiled, %d requests answered):\n\n%s"
                   % (len(rows), total, answered, markdown_table(rows, total, answered)))
    collector.note(SECTION, "NameServer functions by cumulative time (where each request's cost goes):\n\n%s"
                   % markdown_table(ours, total, answered))
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "profile-route.txt"), "w") as f:
        stats = pstats.Stats(stats_file, stream=f)
        stats.sort_stats("tottime").print_stats(40)
        stats.sort_stats("cumulative").print_stats(60)
    log("profile: %.1f us of reactor CPU per route request under cProfile; top own time: %s"
        % (total / answered * 1e6, ", ".join(row[0] for row in rows[:5])))
    return rows
