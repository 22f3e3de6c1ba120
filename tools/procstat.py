"""The whole machine's CPU counters: the all-CPUs line of /proc/stat, in clock ticks.

One reader for the benchmarks that need them (bench.scenarios.fleet's busy time, tools.hoststeal's steal).
"""

_STAT = "/proc/stat"


def cpu_ticks(text):
    """The numbers of the ``cpu`` line of /proc/stat's text (user, nice, system, idle, iowait, irq,
    softirq, steal, ...), or None where it has no such line."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            return [int(v) for v in fields[1:]]
    return None


def read_cpu_ticks():
    """``cpu_ticks`` of this machine now (None where /proc/stat cannot be read)."""
    try:
        with open(_STAT) as f:
            return cpu_ticks(f.read())
    except OSError:
        return None
