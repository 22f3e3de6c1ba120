"""How this machine's idle vCPUs wait for work: the guest kernel's cpuidle driver and its halt polling.

On a KVM guest with the ``haltpoll`` cpuidle driver, an idle vCPU polls for up to
``guest_halt_poll_ns`` before it halts (and, with ``guest_halt_poll_allow_shrink``, shortens that
window whenever the wake-up came later). A halted vCPU that a packet wakes waits for the host to run
its thread again, and the guest counts that wait as steal (``bench.hoststeal``). This workplace's VM
boots with ``haltpoll.guest_halt_poll_ns=0``: at 12,000 route reads/s its vCPUs halt between reads,
and that wait was most of the prober's tail (bench/results/bigfleet.md). So a latency figure is
printed with the idle setting it was taken under, as it is with the steal.
"""

import os

#: where the kernel shows them, below the filesystem root
DRIVER = "sys/devices/system/cpu/cpuidle/current_driver"
PARAMETERS = "sys/module/haltpoll/parameters"


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def read(root="/"):
    """{"driver": the cpuidle driver or None, "halt_poll_ns": the polling window or None,
    "shrink": whether the window shrinks, or None}: None where the kernel does not say."""
    poll = _read(os.path.join(root, PARAMETERS, "guest_halt_poll_ns"))
    shrink = _read(os.path.join(root, PARAMETERS, "guest_halt_poll_allow_shrink"))
    return {
        "driver": _read(os.path.join(root, DRIVER)),
        "halt_poll_ns": int(poll) if poll is not None and poll.isdigit() else None,
        "shrink": None if shrink not in ("Y", "N") else shrink == "Y",
    }


def describe(idle):
    """One line for a benchmark's report."""
    driver = idle.get("driver") or "unknown"
    if idle.get("halt_poll_ns") is None:
        return "guest idle: cpuidle driver %s, no guest halt polling to tell" % driver
    if idle["halt_poll_ns"] == 0:
        return "guest idle: cpuidle driver %s, halt polling off (guest_halt_poll_ns=0)" % driver
    return "guest idle: cpuidle driver %s, halt polling up to %d µs%s" % (
        driver, idle["halt_poll_ns"] // 1000,
        "" if idle.get("shrink") is None else (", shrinking" if idle["shrink"] else ", not shrinking"))
