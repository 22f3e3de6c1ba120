"""A try-it block that does not end names itself: what of it still runs, and the logs it wrote.

docs/controller.md:271 once ran past the sandbox's bound in a loaded run with nothing to tell a slow step from
a stuck one: its logs were in a `mktemp -d` of /tmp that nobody kept. The sandbox now gives a block a TMPDIR in
the snippet's own directory and, at the bound, reports the block's processes and the tails of its logs.
"""

import os

import pytest

from tests.docs.snippets import Snippet
from tests.docs.test_snippets import NAMESPACE, run_in_namespace

BLOCK = '''dir=$(mktemp -d)
echo "member n2 is still electing" > "$dir/ns2.log"
echo started
sleep 61
'''


@pytest.mark.skipif(NAMESPACE is None, reason="no network namespace here (unshare -rn)")
def test_a_block_past_its_bound_names_what_still_runs_and_keeps_its_logs(tmp_path):
    result = run_in_namespace(Snippet("docs/x.md", 1, "sh", BLOCK, ""), str(tmp_path), timeout=3)
    assert not result["ok"] and result["why"] == "still running after 3 s"
    output = result["output"]
    assert output.startswith("started")
    assert "--- still running" in output and "sleep 61" in output
    assert "ns2.log:\nmember n2 is still electing" in output
    (workdir,) = [path for path in tmp_path.iterdir() if path.name.startswith("snippet-")]
    kept = [os.path.relpath(os.path.join(folder, name), workdir) for folder, _, names in os.walk(workdir / "tmp")
            for name in names if name == "ns2.log"]
    assert len(kept) == 1, kept                                          # in the snippet's TMPDIR, kept
    assert result["left"] == []                                          # and not taken for the checkout's
