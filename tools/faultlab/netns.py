"""Hosts for the fault lab: network namespaces on one bridge, partitions cut with iptables.

Every host is a namespace ``<prefix>-<name>`` with one veth into a bridge that lives in a switch
namespace ``<prefix>-sw``; the addresses (``10.<net>.0.<n>/24``) exist only inside these
namespaces, never on the machine's own network. A partition is iptables DROP rules in the hosts'
own namespaces (both directions, so no RST tells anyone); ``heal`` flushes them. Everything the lab
creates carries the lab's unique prefix and is removed by ``close()`` (also when a test fails:
``Lab`` is a context manager).

Several labs may run on one machine at once (two test runs, a test run beside ``python -m
tools.faultlab``): a prefix (``run_prefix()``: ``fl<pid in hex>x<random>``) names the process that made
it, so a run counts only its own namespaces (``namespaces(prefix)``) and ``sweep()`` removes only
those whose maker has exited (a run killed before its cleanup), never a live lab's.

Processes run in a host with ``ip netns exec``; their pids are the machine's (namespaces isolate
the network, not the process table), so the lab can kill -9 and SIGSTOP them directly.
"""

import os
import random
import shutil
import signal
import subprocess
import time

PREFIX_ROOT = "fl"


class LabUnavailable(Exception):
    """Network namespaces or iptables cannot be used here (not root, no iproute2 or iptables)."""


def _run(argv, check=True):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), (result.stderr or result.stdout).strip()))
    return result


def run_prefix():
    """A prefix no other lab has: this process's id (``sweep`` reads it back) and a random part."""
    return "%s%xx%04x" % (PREFIX_ROOT, os.getpid(), random.randrange(1 << 16))


def _maker(name):
    """The process id a namespace's prefix names (``run_prefix``), or None for another naming."""
    head = name[len(PREFIX_ROOT):].partition("x")[0]
    try:
        return int(head, 16) if name.startswith(PREFIX_ROOT) and "x" in name else None
    except ValueError:
        return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def namespaces(prefix):
    """The network namespaces whose name starts with ``prefix`` (a run's own)."""
    listed = _run(["ip", "netns", "list"], check=False).stdout.splitlines()
    return [line.split(" ")[0] for line in listed if line.startswith(prefix)]


def available():
    """None when the lab can run here, else the reason it cannot."""
    if os.geteuid() != 0:
        return "the fault lab needs root (network namespaces and iptables)"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return "%s is not installed (Debian: iproute2, iptables)" % tool
    name = "%s-probe" % run_prefix()
    try:
        _run(["ip", "netns", "add", name])
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return "network namespaces cannot be made here: %s" % e
    try:
        _run(["ip", "netns", "exec", name, "iptables", "-A", "INPUT", "-s", "10.254.0.1", "-j", "DROP"])
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return "iptables does not work inside a network namespace here: %s" % e
    finally:
        _run(["ip", "netns", "del", name], check=False)
    return None


def sweep(prefix=None):
    """Remove what labs killed before their cleanup left: the namespaces of ``prefix``, or (by default)
    those whose maker (``run_prefix``) has exited. A live lab's, and names of another form, stay."""
    for name in namespaces(prefix or PREFIX_ROOT):
        maker = _maker(name)
        if prefix is not None or (maker is not None and maker != os.getpid() and not _alive(maker)):
            _kill_namespace_processes(name)
            _run(["ip", "netns", "del", name], check=False)


def _kill_namespace_processes(name):
    pids = _run(["ip", "netns", "pids", name], check=False).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


class Host:
    def __init__(self, lab, name, index):
        self.lab = lab
        self.name = name
        self.netns = "%s-%s" % (lab.prefix, name)
        self.index = index
        self.address = "10.%d.0.%d" % (lab.net, index)

    def __repr__(self):
        return "Host(%s %s)" % (self.name, self.address)


class Lab:
    """A switch and hosts; ``cut``/``heal`` partitions; ``spawn`` runs a process in a host."""

    def __init__(self, names, net=None, prefix=None):
        reason = available()
        if reason is not None:
            raise LabUnavailable(reason)
        self.prefix = prefix or run_prefix()
        self.net = net if net is not None else random.randrange(100, 250)
        self.switch = "%s-sw" % self.prefix
        self.hosts = {}
        self.processes = []
        self.cuts = set()
        try:
            _run(["ip", "netns", "add", self.switch])
            self._in(self.switch, "ip", "link", "add", "br0", "type", "bridge")
            self._in(self.switch, "ip", "link", "set", "br0", "up")
            self._in(self.switch, "ip", "link", "set", "lo", "up")
            for index, name in enumerate(names, start=1):
                self._add_host(name, index)
        except Exception:
            self.close()
            raise

    def _in(self, netns, *argv):
        return _run(["ip", "netns", "exec", netns] + list(argv))

    def _add_host(self, name, index):
        host = Host(self, name, index)
        _run(["ip", "netns", "add", host.netns])
        inside, outside = "veth%d" % index, "%s%d" % (self.prefix[-4:], index)
        _run(["ip", "link", "add", inside, "netns", host.netns, "type", "veth", "peer", "name", outside,
              "netns", self.switch])
        self._in(self.switch, "ip", "link", "set", outside, "master", "br0")
        self._in(self.switch, "ip", "link", "set", outside, "up")
        self._in(host.netns, "ip", "link", "set", "lo", "up")
        self._in(host.netns, "ip", "addr", "add", "%s/24" % host.address, "dev", inside)
        self._in(host.netns, "ip", "link", "set", inside, "up")
        self.hosts[name] = host
        return host

    def __getitem__(self, name):
        return self.hosts[name]

    # -- processes ---------------------------------------------------------------------------------------
    def spawn(self, host, argv, **popen):
        """Start ``argv`` inside ``host``; the lab kills it at close if it is still running."""
        popen.setdefault("stdin", subprocess.DEVNULL)
        process = subprocess.Popen(["ip", "netns", "exec", self.hosts[host].netns] + list(argv), **popen)
        self.processes.append(process)
        return process

    # -- partitions ----------------------------------------------------------------------------------------
    def cut(self, side_a, side_b):
        """No packet between any host of ``side_a`` and any of ``side_b`` (both directions, silently)."""
        for a in side_a:
            for b in side_b:
                if a == b or frozenset((a, b)) in self.cuts:
                    continue
                self.cuts.add(frozenset((a, b)))
                for me, other in ((a, b), (b, a)):
                    peer = self.hosts[other].address
                    self._in(self.hosts[me].netns, "iptables", "-A", "INPUT", "-s", peer, "-j", "DROP")
                    self._in(self.hosts[me].netns, "iptables", "-A", "OUTPUT", "-d", peer, "-j", "DROP")

    def partition(self, *sides):
        for i, side in enumerate(sides):
            for other in sides[i + 1:]:
                self.cut(side, other)

    def isolate(self, name, among=None):
        self.cut([name], [h for h in (among or self.hosts) if h != name])

    def through_proxy(self, host, destinations, port, proxy_port, mark=0x2A):
        """``host``'s new connections to ``destinations`` (addresses) on ``port`` go to its local proxy
        (tools/faultlab/proxy.py on ``proxy_port``); the proxy's own, marked ``mark``, do not.
        ``heal`` leaves these rules: a healed link is a clean proxy, not a different path."""
        for destination in destinations:
            self._in(self.hosts[host].netns, "iptables", "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d",
                     destination, "--dport", str(port), "-m", "mark", "!", "--mark", str(mark), "-j", "REDIRECT",
                     "--to-ports", str(proxy_port))

    def heal(self):
        for host in self.hosts.values():
            self._in(host.netns, "iptables", "-F")
        self.cuts.clear()

    # -- the end -------------------------------------------------------------------------------------------
    def close(self):
        for process in self.processes:
            if process.poll() is None:
                try:
                    process.send_signal(signal.SIGCONT)
                    process.kill()
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for host in list(self.hosts.values()):
            _kill_namespace_processes(host.netns)
            _run(["ip", "netns", "del", host.netns], check=False)
        _run(["ip", "netns", "del", self.switch], check=False)
        self.hosts.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
