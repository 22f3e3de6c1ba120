"""Kill -9 a process while it rewrites the KV file: the file is always a whole old or new table.

Two ways of choosing the moment of death, both without sleeping:
- at every I/O step of one write (the child kills itself at step N: mid-data, before and
  after each fsync, copy and rename), so no step is left to chance;
- at a random moment of a write loop: the parent reads a random number of "written"
  lines from the child and kills it at once, while it is inside its next write.
"""

import os
import random
import signal
import subprocess
import sys
import textwrap

from namesrv.kvconfig import KVConfigManager

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENTRIES = 20000

# The child only needs write_atomic (importing Twisted would triple its start-up time); the
# parent reads every result with KVConfigManager.load, which also clears leftover temp files.
PRELUDE = textwrap.dedent("""
    import json, os, shutil, signal, sys
    from namesrv.storage.atomicfile import write_atomic

    path = sys.argv[1]

    def encode(generation):
        table = {"meta": {"generation": str(generation)},
                 "big": {"k%%d" %% i: "v%%d-%%d" %% (i, generation) for i in range(%d)}}
        return json.dumps({"configTable": table}, separators=(",", ":")).encode("utf-8")

    try:
        with open(path, "rb") as f:
            generation = int(json.loads(f.read())["configTable"]["meta"]["generation"])
    except FileNotFoundError:
        generation = 0
""" % ENTRIES)

# Dies at I/O step argv[2] of one write (0: never; then prints how many steps there were).
STEP_KILLER = PRELUDE + textwrap.dedent("""
    steps, kill_at = [0], int(sys.argv[2])

    def step():
        steps[0] += 1
        if steps[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def hooked(function):
        def call(*args, **kwargs):
            step()
            result = function(*args, **kwargs)
            step()
            return result
        return call

    class HalfWriter:
        def __init__(self, f):
            self.f = f
        def write(self, data):
            half = len(data) // 2
            self.f.write(data[:half]); self.f.flush(); step()
            return self.f.write(data[half:])
        def __getattr__(self, name):
            return getattr(self.f, name)
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.f.__exit__(*exc)

    real_fdopen = os.fdopen
    os.fdopen = lambda *a, **k: HalfWriter(real_fdopen(*a, **k))
    os.fsync, os.replace, shutil.copyfile = hooked(os.fsync), hooked(os.replace), hooked(shutil.copyfile)
    write_atomic(path, encode(generation + 1), keep_backup=True)
    print(steps[0], flush=True)
""")

WRITE_LOOP = PRELUDE + textwrap.dedent("""
    while True:
        generation += 1
        write_atomic(path, encode(generation), keep_backup=True)
        print(generation, flush=True)
""")


def run(script, path, *args, **popen):
    env = dict(os.environ, PYTHONPATH=REPO)
    return subprocess.Popen([sys.executable, "-c", script, str(path)] + [str(a) for a in args], env=env, **popen)


def on_disk_generation(path):
    """The generation of the complete table in ``path``; fails the test if it is torn."""
    kv = KVConfigManager(str(path))
    kv.load()  # raises KVConfigError on a torn file
    generation = int(kv.get("meta", "generation"))
    big = kv.namespace("big")
    assert len(big) == ENTRIES and big["k%d" % (ENTRIES - 1)] == "v%d-%d" % (ENTRIES - 1, generation)
    return generation


def test_killed_at_every_step_of_a_write(tmp_path):
    path = tmp_path / "kvConfig.json"
    for expected in (1, 2):  # the second write, over an existing file, has the backup steps too
        whole = run(STEP_KILLER, path, 0, stdout=subprocess.PIPE)
        steps = int(whole.communicate()[0])
        assert whole.returncode == 0 and on_disk_generation(path) == expected
    assert steps >= 12
    generation = 2
    for kill_at in range(1, steps + 1):
        child = run(STEP_KILLER, path, kill_at, stdout=subprocess.PIPE)
        child.communicate()
        assert child.returncode == -signal.SIGKILL
        now = on_disk_generation(path)
        assert now in (generation, generation + 1), "step %d left generation %d" % (kill_at, now)
        if os.path.exists(str(path) + ".bak"):
            on_disk_generation(str(path) + ".bak")  # the backup is never torn either
        generation = now
    assert generation > 2  # the kills after the rename kept the new table


def test_killed_at_random_moments_of_a_write_loop(tmp_path):
    path = tmp_path / "kvConfig.json"
    rng = random.Random(20240611)
    last_seen = 0
    for attempt in range(6):
        child = run(WRITE_LOOP, path, stdout=subprocess.PIPE)
        for _ in range(rng.randint(1, 3)):
            line = child.stdout.readline()
            assert line, "the writer died on its own"
            last_seen = int(line)
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        assert on_disk_generation(path) >= last_seen
