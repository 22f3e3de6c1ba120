"""Kill -9 a process that rewrites the KV file in a loop: the file is always a whole old or new table."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

WRITER = textwrap.dedent("""
    import sys
    from namesrv.atomicfile import write_atomic
    from namesrv.kvconfig import KVConfigManager
    kv = KVConfigManager(sys.argv[1])
    kv.load()
    generation = int(kv.get("meta", "generation") or 0)
    print("ready", flush=True)
    while True:
        generation += 1
        kv.table = {"meta": {"generation": str(generation)},
                    "big": {"k%d" % i: "v%d-%d" % (i, generation) for i in range(20000)}}
        write_atomic(kv.path, kv.encode(), keep_backup=True)
""")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_file_is_never_torn_by_a_kill(tmp_path):
    path = tmp_path / "kvConfig.json"
    env = dict(os.environ, PYTHONPATH=REPO)
    generations = []
    for attempt in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=env, stdout=subprocess.PIPE)
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.037 * attempt)  # kill at a different point of the write cycle each time
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if not path.exists():
            continue
        table = json.loads(path.read_text())["configTable"]
        generation = int(table["meta"]["generation"])
        assert table["big"]["k19999"] == "v19999-%d" % generation
        generations.append(generation)
        leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
        for name in leftovers:  # a killed writer may leave its temp file; the real file is intact
            os.unlink(tmp_path / name)
    assert generations == sorted(generations) and generations[-1] > 1
