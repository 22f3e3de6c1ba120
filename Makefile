# Two commands for a fresh machine (Python 3.11 and Java 17, nothing else):
#   make run    create .venv, install, start `twistd -n namesrv` on 127.0.0.1:9876 (status page on :9877)
#   make test   create .venv, install with test extras, run the whole suite
PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
ARGS ?=
# `make run` serves the status page on http://127.0.0.1:$(STATUS_PORT)/ (twistd namesrv alone keeps it off)
STATUS_PORT ?= 9877

.PHONY: run test test-cluster bench clean spark-package

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet '.[test]'
	touch $@

run: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall .
	cd $(CURDIR) && $(BIN)/twistd -n --pidfile= namesrv --statusListenPort $(STATUS_PORT) $(ARGS)

test: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall .
	$(BIN)/python -m pytest $(ARGS)

test-cluster: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall .
	$(BIN)/python -m pytest -m cluster $(ARGS)

bench: $(BIN)/.installed
	$(BIN)/python -m bench $(ARGS)

# dist/spark.zip + dist/spark_report.py for spark-submit (see README, Event log and Spark reports)
spark-package:
	$(PYTHON) -m spark.package --dist dist

clean:
	rm -rf $(VENV) build *.egg-info twisted/plugins/dropin.cache
