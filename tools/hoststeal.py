"""The CPU time the hypervisor took from this machine's CPUs ("steal"), over a benchmark's window.

On a shared virtual machine a vCPU can be descheduled by the host for milliseconds at a time; the
guest's processes then wait whatever they run. At this workplace that is what a route read's tail
mostly is: 94 % of the prober's reads over 2 ms had steal ticks around them, against 48 % of random
instants (bench/results/bigfleet.md). A latency figure is therefore printed with the steal of its
own window, so that two runs, or two servers, are compared on equal terms. Where that steal comes from
(vCPUs halting between reads) and what removes it: ``tools.guestidle``.
"""

import os

from tools.procstat import cpu_ticks, read_cpu_ticks

_STEAL = 7                  # user nice system idle iowait irq softirq steal ...


def steal_ticks(text):
    """Steal of all CPUs together, in clock ticks, from /proc/stat's text (None if it has none)."""
    return _steal(cpu_ticks(text))


def _steal(ticks):
    return ticks[_STEAL] if ticks is not None and len(ticks) > _STEAL else None


def _read():
    return _steal(read_cpu_ticks())


class StealWindow:
    """Started and stopped around a measured window; ``share`` is steal / (window × CPUs)."""

    def __init__(self, clock, cpus=None, ticks_per_s=None, read=_read):
        self.clock, self.read = clock, read
        self.cpus = cpus or os.cpu_count() or 1
        self.ticks_per_s = ticks_per_s or os.sysconf("SC_CLK_TCK")
        self.started = self.start_ticks = self.seconds = self.steal_s = None

    def start(self):
        self.started, self.start_ticks = self.clock(), self.read()
        return self

    def stop(self):
        ended, ticks = self.clock(), self.read()
        self.seconds = ended - self.started
        if ticks is not None and self.start_ticks is not None:
            self.steal_s = (ticks - self.start_ticks) / float(self.ticks_per_s)
        return self

    @property
    def share(self):
        """Fraction of the CPUs' time stolen in the window (None where the kernel does not say)."""
        if self.steal_s is None or not self.seconds:
            return None
        return self.steal_s / (self.seconds * self.cpus)
