"""tools.guestidle: the guest kernel's cpuidle driver and halt polling, read from a filesystem root."""

import os

from tools import guestidle


def _kernel(root, driver=None, poll=None, shrink=None):
    for relative, value in ((guestidle.DRIVER, driver),
                            (os.path.join(guestidle.PARAMETERS, "guest_halt_poll_ns"), poll),
                            (os.path.join(guestidle.PARAMETERS, "guest_halt_poll_allow_shrink"), shrink)):
        if value is not None:
            path = os.path.join(str(root), relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(value + "\n")
    return str(root)


def test_polling_switched_off_at_boot_is_said_so(tmp_path):
    idle = guestidle.read(_kernel(tmp_path, "haltpoll", "0", "Y"))
    assert idle == {"driver": "haltpoll", "halt_poll_ns": 0, "shrink": True}
    assert guestidle.describe(idle) == "guest idle: cpuidle driver haltpoll, halt polling off (guest_halt_poll_ns=0)"


def test_a_polling_window_is_given_in_microseconds_with_its_shrinking(tmp_path):
    idle = guestidle.read(_kernel(tmp_path, "haltpoll", "5000000", "N"))
    assert idle == {"driver": "haltpoll", "halt_poll_ns": 5000000, "shrink": False}
    assert guestidle.describe(idle) == "guest idle: cpuidle driver haltpoll, halt polling up to 5000 µs, not shrinking"


def test_a_machine_without_halt_polling_says_nothing_of_it(tmp_path):
    idle = guestidle.read(_kernel(tmp_path, "intel_idle"))
    assert idle == {"driver": "intel_idle", "halt_poll_ns": None, "shrink": None}
    assert guestidle.describe(idle) == "guest idle: cpuidle driver intel_idle, no guest halt polling to tell"
    assert guestidle.describe(guestidle.read(str(tmp_path / "nothing"))).startswith("guest idle: cpuidle driver unknown")


def test_a_value_it_cannot_read_is_none(tmp_path):
    idle = guestidle.read(_kernel(tmp_path, "haltpoll", "lots", "maybe"))
    assert idle["halt_poll_ns"] is None and idle["shrink"] is None
