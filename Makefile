# Two commands do everything on a fresh machine with python3 >= 3.11:
#   make demo   create .venv, install letitloop, run the headline demo (a real SIGKILL and resume)
#   make test   install what the tests need (system packages included) and run every check
#   make docs   build the documentation site into site/ (warnings, broken links included, fail)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Debian packages the test suite needs (installed with apt-get when missing).
SYSTEM_PACKAGES := chromium tmux neovim postgresql prometheus

.PHONY: demo jupyter-dev test docs install system-deps lint typecheck pytest bench bench-postgres bench-peers bench-durability clean labextension vscode adapters

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "letitloop needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $@

install: $(VENV)/.installed

demo: install jupyter-dev
	$(BIN)/lil demo

# An editable install skips pyproject's data-files: put into the venv what a wheel installs for
# Jupyter, the prebuilt lab extension (a link to the checkout's, as `jupyter labextension
# develop` makes) and the server extension's switch, so `jupyter lab` shows the letitloop sidebar.
LAB_LINK := $(VENV)/share/jupyter/labextensions/letitloop
SERVER_SWITCH := $(VENV)/etc/jupyter/jupyter_server_config.d/letitloop.json
jupyter-dev: install
	mkdir -p $(dir $(LAB_LINK)) $(dir $(SERVER_SWITCH))
	rm -rf $(LAB_LINK) && ln -s $(CURDIR)/letitloop/jupyter/labextension $(LAB_LINK)
	cp letitloop/jupyter/server-config/letitloop.json $(SERVER_SWITCH)

system-deps:
	@missing=""; for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update && apt-get install -y --no-install-recommends $$missing; fi

LINTED := $(wildcard letitloop tests benchmarks examples docs/_hooks)

lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

typecheck: install
	$(BIN)/mypy

pytest: install
	@$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi; exit $$rc

test: system-deps install vscode adapters lint typecheck docs pytest

# The site: docs/ plus what docs/_hooks generates (the API and CLI references) and examples/*/.
# Material prints a banner about its end of life (May 2027) and Zensical on every build; it is
# not a warning about this site, so it is switched off.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The lab extension is committed prebuilt (letitloop/jupyter/labextension, checked against its
# sources by tests/jupyter/test_labextension.py); rebuild it after editing packages/labextension.
# The VS Code extension's packages (its client test and .vsix packaging run under pytest).
VSCODE := editors/vscode
$(VSCODE)/node_modules/.package-lock.json: $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund --loglevel=error

vscode: $(VSCODE)/node_modules/.package-lock.json

# Each agent framework gets an environment of its own (their pins clash with each other and with
# the main environment): letitloop editable plus the versions in tests/adapters/envs/NAME.txt. The
# adapter tests run their scripts with .venvs/NAME/bin/python.
ADAPTERS := smolagents autogen crewai
.venvs/%/.installed: tests/adapters/envs/%.txt pyproject.toml | $(BIN)/python
	$(PYTHON) -m venv .venvs/$*
	.venvs/$*/bin/python -m pip install --quiet --upgrade pip
	.venvs/$*/bin/python -m pip install --quiet -e . -r tests/adapters/envs/$*.txt
	touch $@

adapters: $(ADAPTERS:%=.venvs/%/.installed)

labextension: install
	cd packages/labextension && PATH="$(CURDIR)/$(BIN):$$PATH" jlpm install && \
		PATH="$(CURDIR)/$(BIN):$$PATH" jlpm build

bench: install
	$(BIN)/python benchmarks/journal.py

# PostgreSQL journal vs DuckDB, DBOS and LangGraph's PostgresSaver on one throwaway cluster; the
# peers go into benchmarks/.venvs/pg-peers (created on first use), never into .venv
bench-postgres: system-deps install
	$(BIN)/python benchmarks/postgres.py $(BENCH_ARGS)

# letitloop against LangGraph + SqliteSaver, DBOS on SQLite and Prefect in one run on one disk; each
# peer gets an environment of its own (.venvs/peers-NAME, pinned in benchmarks/peers/NAME.txt)
PEERS := langgraph dbos prefect
.venvs/peers-%/.installed: benchmarks/peers/%.txt | $(BIN)/python
	$(PYTHON) -m venv .venvs/peers-$*
	.venvs/peers-$*/bin/python -m pip install --quiet --upgrade pip
	.venvs/peers-$*/bin/python -m pip install --quiet -r benchmarks/peers/$*.txt
	touch $@

bench-peers: install $(PEERS:%=.venvs/peers-%/.installed)
	$(BIN)/python benchmarks/peers.py $(BENCH_ARGS)

# `lil bench`: every framework killed for real, each in its own environment (the peers' above,
# the adapters' .venvs/NAME), built on first use; BENCH_ARGS=--quick for the 10-minute run
bench-durability: system-deps install adapters $(PEERS:%=.venvs/peers-%/.installed)
	$(BIN)/lil bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venvs .pytest_cache .mypy_cache .ruff_cache *.egg-info
