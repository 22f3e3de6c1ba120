"""A second twistd taking over a running one's port (--takeover), for the handover and crash tests."""

import os
import subprocess

from tests.integration.server import NamesrvProcess


def start_takeover(old):
    """A second twistd with the same -c file and --takeover."""
    new = NamesrvProcess.__new__(NamesrvProcess)
    new.__dict__.update(old.__dict__)
    new.log_file = os.path.join(old.workdir, "twistd-new.log")
    new.process = subprocess.Popen(new.command("--takeover"), cwd=new.workdir, env=new.env(),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return new
