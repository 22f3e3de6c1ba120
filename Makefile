# Two commands for a fresh machine (Python 3.11 and Java 17, nothing else):
#   make run    create .venv, install the server (what running needs, nothing more), start
#               `twistd -n namesrv` on 127.0.0.1:9876 with the status page on :9877; Ctrl-C stops it
#   make test   create .venv, install with the test extras (pytest, hypothesis, pyspark...), run the whole suite
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
ARGS ?=
# `make run` serves the status page on http://127.0.0.1:$(STATUS_PORT)/ (twistd namesrv alone keeps it off)
STATUS_PORT ?= 9877
# The package is installed, not linked (what users install is what runs): a change to any of these
# (the docs too: they are installed with it) installs it again at the next `make run` or `make test`.
SOURCES := setup.cfg pyproject.toml README.md $(wildcard docs/*.md docs/*.png) \
	$(shell find namesrv processors spark twisted -type f -name '*.py' -not -path '*/__pycache__/*' 2>/dev/null)

.PHONY: run test test-cluster test-starved stress-test bench clean spark-package

# Running: the package and its install_requires only (`pip install .`: about 100 MB, no pyspark).
$(VENV)/.run-installed: $(SOURCES)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet .
	@touch $@

# Testing: the same plus the test extras.
$(VENV)/.test-installed: $(SOURCES)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet '.[test]'
	@touch $@ $(VENV)/.run-installed

# Ctrl-C (SIGINT) or SIGTERM stop the server cleanly; the recipe's shell waits for it and ends the
# recipe without an error, so make reports none.
run: $(VENV)/.run-installed
	@trap 'true' INT TERM; cd $(CURDIR) && $(BIN)/twistd -n --pidfile= namesrv --statusListenPort $(STATUS_PORT) \
		$(ARGS); status=$$?; case $$status in 0|130|143) ;; *) exit $$status;; esac

# The suite on one worker more than the CPUs this may use (pytest-xdist): much of a test's time is a server
# starting or an answer awaited. On 2 CPUs, in one fresh clone within the hour: three workers 410 s with the CPUs
# 87 % busy, two 510 s at 80 %. Each takes a whole file at a time, tests/spark as one unit (tests/parallel.py).
# At most eight: more has not been tried. `make test PARALLEL=` runs it in one process, `make test WORKERS=2`
# on two workers.
WORKERS ?= $(shell n=$$(nproc); echo $$(( n < 7 ? n + 1 : 8 )))
PARALLEL ?= -n $(WORKERS) --dist loadfile
test: $(VENV)/.test-installed
	$(BIN)/python -m pytest $(PARALLEL) $(ARGS)

# The suite RUNS times in a row with LOAD beside it (tools/stress: busy CPUs, a disk writing and syncing),
# stopped with the load on Ctrl-C; every test that failed at least once, with each run's log, under
# build/stress/<time>/ (report.txt). `make stress-test RUNS=3 ARGS="tests/packaging -q"`: part of it.
RUNS ?= 5
LOAD ?= --cpu 1 --disk
stress-test: $(VENV)/.test-installed
	$(BIN)/python -m tools.stress --runs $(RUNS) $(LOAD) $(STRESS) -- $(PARALLEL) $(ARGS)

test-cluster: $(VENV)/.test-installed
	$(BIN)/python -m pytest -m cluster $(ARGS)

# The in-process unit tests again with every scheduler one step a turn, as on a loaded machine (tests/starved.py):
# a test that holds only where a turn runs several steps fails here at once.
STARVED ?= tests/readworkers tests/dispatch tests/timing tests/routes tests/processors tests/server tests/handover \
	tests/kvconfig tests/status tests/admin tests/storage tests/protocol tests/eventlog tests/test_service.py \
	tests/test_registry.py tests/test_answer_cache.py tests/test_refusals.py
test-starved: $(VENV)/.test-installed
	$(BIN)/python -m pytest -q --one-step-a-turn $(STARVED) $(ARGS)

bench: $(VENV)/.test-installed
	$(BIN)/python -m bench $(ARGS)

# dist/spark.zip + dist/spark_report.py for spark-submit (see docs/spark.md)
spark-package:
	$(PYTHON) -m spark.package --dist dist

clean:
	rm -rf $(VENV) build *.egg-info twisted/plugins/dropin.cache
