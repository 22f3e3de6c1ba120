"""Every snippet of the README and the guide pastes (issue 39: inline ``# comments`` made two of them fail).

Each ``properties`` block is loaded by the real config loader (no unknown key, no bad value) and, with
its placeholders filled in (absolute paths moved under a scratch directory), started as ``twistd namesrv
-c`` unless marked ``not started``. Each shell block runs, as written, in a scratch copy of the
checkout's layout with this venv as ``.venv`` and on PATH, unless marked ``not run`` with its reason.
Both run in a network namespace of their own (tests/docs/sandbox.py), so the documented ports and
addresses are used as they are. The marks are described in tests/docs/snippets.py.
"""

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from namesrv.config import NamesrvConfig
from tests.docs.snippets import REPO, Snippet, every_snippet, pages

SNIPPETS = every_snippet()
RUNNABLE = ("run", "start", "with a server", "serves")
#: addresses the documentation uses as examples, put on the namespace's loopback
_ADDRESS = re.compile(r"\b(?:10|192\.168|172\.(?:1[6-9]|2\d|3[01]))(?:\.\d{1,3}){2,3}\b")
_ABSOLUTE_VALUE = re.compile(r"^(\s*[\w.]+\s*[=:]\s*)(/[^\s;]*)", re.M)


def _namespace_command():
    for command in (["unshare", "-rn"], ["unshare", "-n"]):
        try:
            if subprocess.run(command + ["true"], capture_output=True, timeout=10).returncode == 0:
                return command
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None


NAMESPACE = _namespace_command()


def test_the_pages_have_snippets_and_every_mark_is_understood():
    assert len(SNIPPETS) >= 20
    for snippet in SNIPPETS:
        if snippet.mark:
            assert snippet.mode in RUNNABLE + ("not run", "not started"), snippet
        if snippet.mode in ("not run", "not started"):
            assert snippet.reason, "%s: say why it is not run here" % snippet.ident
        assert not (snippet.kind == "properties" and snippet.mode in ("not run", "with a server", "serves")), snippet


def test_no_page_points_outside_the_repository_and_every_link_resolves():
    """A user has the repository only: no ``../shared``, no machine's paths, no link to a missing file."""
    for page in pages() + ["bench/results/README.md"]:
        with open(os.path.join(REPO, page), encoding="utf-8") as f:
            text = f.read()
        for outside in ("../shared", "/work/", "/tmp/peers"):
            assert outside not in text, (page, outside)
        for target, anchor in re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", text):
            if not re.match(r"[a-z]+:", target):
                path = os.path.normpath(os.path.join(REPO, os.path.dirname(page), target))
                assert path.startswith(REPO) and os.path.exists(path), (page, target)
                if anchor:
                    with open(path, encoding="utf-8") as f:
                        assert anchor in headings(f.read()), (page, target, anchor)


def headings(markdown):
    """The anchors a renderer gives the page's headings (GitHub's: lower case, punctuation dropped)."""
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
            for title in re.findall(r"^#+ (.*)$", markdown, re.M)}


def filled_properties(snippet, workdir):
    """The block as it is started here: absolute paths under ``workdir``, one process (no read worker) unless
    it says otherwise."""
    text = _ABSOLUTE_VALUE.sub(lambda m: m.group(1) + os.path.join(workdir, m.group(2).lstrip("/")), snippet.text)
    if not re.search(r"^\s*routeReadWorkers\s*=", text, re.M):
        text += "\nrouteReadWorkers=0\n"
    return text


def checkout_view(workdir):
    """The checkout's layout in ``workdir``: its folders linked (conf copied: a block may write there), this
    venv as ``.venv``."""
    for name in os.listdir(REPO):
        if name in (".git", ".venv", "conf") or name.startswith("."):
            continue
        os.symlink(os.path.join(REPO, name), os.path.join(workdir, name))
    shutil.copytree(os.path.join(REPO, "conf"), os.path.join(workdir, "conf"))
    os.symlink(sys.prefix, os.path.join(workdir, ".venv"))


#: what the sandbox itself puts in a snippet's directory (tests/docs/sandbox.py), apart from the checkout's view
SANDBOX_FILES = re.compile(r"(spec\.json|snippet\.properties|server\.log|\.output-\d+|\.restart-(request|done))$")


def files_of(workdir):
    """The files and folders (``name/``) under ``workdir``, relative; the checkout's linked folders, HOME and
    TMPDIR not entered."""
    found = set()
    for folder, dirs, files in os.walk(workdir):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))
                   and os.path.join(folder, d) not in (os.path.join(workdir, "home"), os.path.join(workdir, "tmp"))]
        found.update(os.path.relpath(os.path.join(folder, name), workdir) for name in files
                     if not os.path.islink(os.path.join(folder, name)) or folder != workdir)
        found.update(os.path.relpath(os.path.join(folder, name), workdir) + "/" for name in dirs)
    return found


def run_in_namespace(snippet, base, **limits):
    workdir = tempfile.mkdtemp(prefix="snippet-", dir=base)
    home = os.path.join(workdir, "home")
    os.makedirs(home)
    tmp = os.path.join(workdir, "tmp")
    os.makedirs(tmp)
    checkout_view(workdir)
    before = files_of(workdir)
    spec = {"kind": snippet.kind, "mode": snippet.mode, "text": snippet.text, "workdir": workdir, "home": home,
            "tmp": tmp,
            "server_options": snippet.server_options, "venv_bin": os.path.dirname(sys.executable),
            "addresses": sorted(set(_ADDRESS.findall(snippet.text))), **limits}
    if snippet.kind == "properties":
        spec["properties_file"] = os.path.join(workdir, "snippet.properties")
        with open(spec["properties_file"], "w") as f:
            f.write(filled_properties(snippet, workdir))
    spec_path = os.path.join(workdir, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    env = dict(os.environ, PYTHONPATH=REPO)
    done = subprocess.run(NAMESPACE + [sys.executable, "-m", "tests.docs.sandbox", spec_path], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=400)
    lines = done.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"ok": False, "why": "the sandbox failed (exit %s)" % done.returncode, "output": done.stderr[-4000:]}
    result["left"] = sorted(path for path in files_of(workdir) - before
                            if path not in ("home/", "tmp/") and not SANDBOX_FILES.match(path))
    return result


#: snippets run at once: one a CPU, not four. docs/controller.md:271 boots eight Python processes (four servers,
#: a read worker each) and runs fifteen namesrv-admin; beside three other blocks, the other test workers and
#: `make stress-test`'s load (a loaded run at c7474ac) each admin run took 2-4 s to start and each server 26-30 s
#: to boot, so the block passed the sandbox's 120 s four steps before its end. Its logs show every step going on:
#: slow, not stuck (four copies of it at once beside 3-7 busy CPU processes and the disk writer took 27-34 s).
AT_ONCE = max(1, os.cpu_count() or 1)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every runnable snippet's result, ``AT_ONCE`` at a time (each in its own namespace: no port is shared)."""
    if NAMESPACE is None:
        pytest.skip("no network namespace here (unshare -rn): the snippets' ports could clash with the host's")
    base = str(tmp_path_factory.mktemp("snippets"))
    runnable = [snippet for snippet in SNIPPETS if snippet.mode in RUNNABLE and not missing(snippet)]
    with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
        return dict(zip([s.ident for s in runnable], pool.map(lambda s: run_in_namespace(s, base), runnable)))


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "properties"], ids=lambda s: s.ident)
def test_a_properties_snippet_loads_with_no_unknown_key(snippet, tmp_path):
    path = tmp_path / "snippet.properties"
    path.write_text(snippet.text)
    config = NamesrvConfig()
    unknown = config.load_file(str(path))
    assert config.unknown_keys(unknown, snippet.ident) == ([], [])


def missing(snippet):
    """The programs a snippet needs that this machine lacks."""
    return [program for program in snippet.needs if shutil.which(program) is None]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.ident)
def test_a_snippet_runs_as_written(snippet, results):
    if snippet.mode not in RUNNABLE:
        assert snippet.reason   # not runnable here, and says why
        return
    if missing(snippet):
        pytest.skip("%s needs %s (.ci/run installs it)" % (snippet.ident, ", ".join(missing(snippet))))
    result = results[snippet.ident]
    assert result["ok"], "%s (%s): %s\n%s" % (snippet.ident, snippet.mode, result["why"], result["output"])


GIT = shutil.which("git")


@pytest.fixture(scope="module")
def not_ignored(tmp_path_factory):
    """``paths`` (relative to the checkout) -> those the checkout's .gitignore does not cover: they would show as
    untracked. Git is asked in a repository of its own holding that .gitignore (the checkout may be a copy with
    no .git: CI's, a stress run's)."""
    if GIT is None:
        pytest.skip("git is not installed: .gitignore cannot be asked")
    repo = tmp_path_factory.mktemp("gitignore")
    subprocess.run([GIT, "init", "-q", str(repo)], check=True, timeout=60)
    shutil.copy(os.path.join(REPO, ".gitignore"), str(repo / ".gitignore"))

    def check(paths):
        if not paths:
            return []
        done = subprocess.run([GIT, "-C", str(repo), "check-ignore", "--no-index", "--stdin"],
                              input="\n".join(paths), capture_output=True, text=True, timeout=60)
        assert done.returncode in (0, 1), done.stderr   # 1: none of them is ignored
        ignored = set(done.stdout.split("\n"))
        return [path for path in paths if path not in ignored]
    return check


def test_the_ignore_check_can_say_no(not_ignored):
    assert not_ignored(["controller.secret", "conf/namesrv.properties.lock", "gen/", "gen/x.log"]) == [
        "controller.secret"]


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "shell" and s.mode in RUNNABLE],
                         ids=lambda s: s.ident)
def test_a_snippet_leaves_nothing_in_the_checkout_that_git_would_show(snippet, results, not_ignored):
    """A block pasted in a checkout's root (a controller.secret, properties and logs) leaves there only what
    .gitignore covers: what a try-it block writes goes to a temporary directory of its own."""
    result = results[snippet.ident]
    assert not_ignored(result["left"]) == [], "%s leaves in the checkout: %s" % (snippet.ident, result["left"])


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "shell" and s.mode in RUNNABLE
                                     and re.search(r"^\s*until ", s.text, re.M)], ids=lambda s: s.ident)
def test_a_wait_for_a_starting_server_prints_nothing_while_it_waits(snippet, results):
    """An ``until`` loop asks a server that is still starting: its refusals (namesrv-admin's "cannot reach ...:
    Connection refused") are no news to the reader."""
    output = results[snippet.ident]["output"]
    assert not re.search(r"^namesrv-admin: .*cannot reach", output, re.M), output


def test_ci_runs_the_readmes_test_command_as_written():
    (two_commands,) = [s for s in SNIPPETS if s.page == "README.md" and "make run" in s.text and "make test" in s.text]
    command = [line.split("#")[0].strip() for line in two_commands.text.splitlines() if line.startswith("make test")]
    with open(os.path.join(REPO, ".ci", "run")) as f:
        ci_lines = [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]
    assert command == ["make test"] and "make test" in ci_lines


STUCK_BLOCK = '''dir=$(mktemp -d)
echo "member n2 is still electing" > "$dir/ns2.log"
echo started
sleep 61
'''


@pytest.mark.skipif(NAMESPACE is None, reason="no network namespace here (unshare -rn)")
def test_a_block_past_its_bound_names_what_still_runs_and_keeps_its_logs(tmp_path):
    """docs/controller.md:271 once ran past the sandbox's bound in a loaded run with nothing to tell a slow step
    from a stuck one: its logs were in a `mktemp -d` of /tmp that nobody kept. A block gets a TMPDIR in the
    snippet's own directory and, at the bound, the report names its processes and the tails of its logs."""
    result = run_in_namespace(Snippet("docs/x.md", 1, "sh", STUCK_BLOCK, ""), str(tmp_path), timeout=3)
    assert not result["ok"] and result["why"] == "still running after 3 s"
    output = result["output"]
    assert output.startswith("started")
    assert "--- still running" in output and "sleep 61" in output
    assert "ns2.log:\nmember n2 is still electing" in output
    (workdir,) = [path for path in tmp_path.iterdir() if path.name.startswith("snippet-")]
    kept = [name for _, _, names in os.walk(workdir / "tmp") for name in names if name == "ns2.log"]
    assert kept == ["ns2.log"]          # in the snippet's TMPDIR, kept
    assert result["left"] == []         # and not taken for something left in the checkout
