# The few commands everyone runs. Each creates .venv and installs what it needs:
# `make demo` only the library (a few small packages), the others the whole dev set.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
DEMO_STAMP := $(VENV)/.installed-demo
UV := UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv
INTEGRATIONS := $(wildcard integrations/*/pyproject.toml)
# Engines that cannot share the dev venv get a venv of their own, .venv-<name> (uv, from
# the core and that integration's [test] extra alone): CrewAI 1.x requires openai<3 and
# pydantic<2.13, the OpenAI Agents SDK openai>=3. Every other integration shares .venv.
OWN_VENV := $(notdir $(wildcard integrations/crewai))
SHARED := $(filter-out $(foreach n,$(OWN_VENV),integrations/$(n)/pyproject.toml),$(INTEGRATIONS))
OWN_STAMPS := $(foreach n,$(OWN_VENV),.venv-$(n)/.installed)

.PHONY: demo test lint typecheck pytest docs-code bench docs docs-check clean test-lowest test-pythons

$(PY):
	python3 -m venv $(VENV)

$(DEMO_STAMP): $(PY) pyproject.toml
	$(PY) -m pip install -q --disable-pip-version-check -e .
	touch $(DEMO_STAMP)

# The dev set is installed by uv (pip took 157 s of a fresh clone's make test), and
# byte-compiled as pip does: a test's subprocess that imports prefect then takes 1.8 s of
# CPU, not 2.8 s (this machine sets PYTHONDONTWRITEBYTECODE, so nothing compiles later).
$(STAMP): $(PY) pyproject.toml $(SHARED)
	$(PY) -m pip install -q --disable-pip-version-check 'uv>=0.5'
	$(UV) pip install -q --compile-bytecode -p $(PY) -e '.[dev]' $(foreach p,$(SHARED),-e $(dir $(p)))
	touch $(STAMP) $(DEMO_STAMP)

# .venv-<name>: the core, integrations/<name>[test], and the checkers that must import
# the engine (mypy); pytest and mypy run there (`make pytest`, `make typecheck`).
.venv-%/.installed: integrations/%/pyproject.toml pyproject.toml | $(STAMP)
	$(UV) venv -q --clear -p python3.11 .venv-$*
	$(UV) pip install -q -p .venv-$*/bin/python -e '.[test]' -e 'integrations/$*[test]' 'mypy>=2.0' types-PyYAML types-regex types-protobuf
	touch $@

demo: $(DEMO_STAMP)
	@echo "== examples/pipeline.py: TaskHooks, RetryPolicy, a skip, an all_done cleanup"
	$(PY) examples/pipeline.py
	@echo; echo "== examples/agents_research.py: subagents retried, delegated and forked"
	$(PY) examples/agents_research.py
	@echo; echo "== examples/main_demo.py: the whole product, traced, and the trace read back"
	$(PY) examples/main_demo.py

# deptry: every import of each distribution (orchestra-hooks and integrations/*) is declared
# by that distribution's own pyproject.toml.
# The size gate: no block graded D or worse by radon (through xenon), no module over 400
# lines, no function of the DAG engine over 60 lines.
GATE_PATHS := orchestra $(wildcard integrations/*/orchestra_*)

# pylint: modules of at most 400 lines, and no copies: 8 or more similar lines (code, not
# comments, docstrings, imports or signatures) in two places of the package and the
# integrations fail (a seam two bridges share belongs in orchestra.bridge).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/xenon --max-absolute C $(GATE_PATHS)
	$(VENV)/bin/pylint --disable=all --enable=too-many-lines,duplicate-code --max-module-lines=400 \
		--min-similarity-lines=8 --ignore-comments=y --ignore-docstrings=y --ignore-imports=y \
		--ignore-signatures=y --score=n $(GATE_PATHS)
	$(VENV)/bin/flake8 --isolated --select=CFQ001 --max-function-length=60 orchestra/dag
	$(VENV)/bin/lint-imports --no-cache  # orchestra.skills' layers ([tool.importlinter])
	$(VENV)/bin/deptry orchestra
	$(foreach p,$(INTEGRATIONS),cd $(dir $(p)) && $(abspath $(VENV))/bin/deptry orchestra_* && cd $(CURDIR) &&) true

# Two mypy workers (mypy >= 2.0's --num-workers): a fresh clone's check 93 -> 54 s on 2 cores.
MYPY := mypy --num-workers 2 --strict

typecheck: $(STAMP) $(OWN_STAMPS)
	$(VENV)/bin/$(MYPY) orchestra $(foreach p,$(SHARED),$(wildcard $(dir $(p))orchestra_*))
	$(foreach n,$(OWN_VENV),.venv-$(n)/bin/$(MYPY) integrations/$(n)/orchestra_$(n) &&) true

# Tests run in one pytest-xdist worker per core (at most 4): most of them wait on processes,
# servers and clocks, so two workers on two cores take about half the time of one.
XDIST := -n auto --maxprocesses=4

pytest: $(STAMP) $(OWN_STAMPS)
	$(VENV)/bin/pytest -q $(XDIST) --durations=20 -m "not docs_site" tests $(dir $(SHARED))
	$(foreach n,$(OWN_VENV),.venv-$(n)/bin/python -m pytest -q -p no:cacheprovider integrations/$(n)/tests &&) true

# Every ```python block of README.md and docs/ runs (pytest-markdown-docs): a block is a
# whole program, or is fenced ```{.python continuation} to run after the block before it.
docs-code: $(STAMP)
	$(VENV)/bin/pytest -q $(XDIST) --markdown-docs --markdown-docs-syntax=superfences -m markdown-docs -p no:cacheprovider README.md docs

test: lint typecheck pytest docs-code docs-check

# The core tests (tests/ but the browser and cross-engine ones) outside the dev set: with
# the lowest versions every requirement of orchestra-hooks[all,test] declares (uv's
# lowest-direct resolution), and on every Python the package claims (pyenv's, else the
# PATH's python3.12 and python3.13). .ci/run runs both.
# (ORCHESTRA_CORE_TESTS=1: a test module that needs the browser, which only the dev set
# brings, is skipped as a whole there; elsewhere a missing playwright fails.)
CORE_TESTS := tests $(XDIST) -m "not docs_site" -p no:cacheprovider --ignore=tests/test_docs_site.py \
	--ignore=tests/conformance --ignore=tests/test_integrations_api.py \
	--ignore=tests/test_shared_policy.py --ignore=tests/test_one_policy_page.py
PYTHONS := 3.12 3.13

test-lowest: $(STAMP)
	$(UV) venv -q --clear -p python3.11 .venv-lowest
	$(UV) pip install -q -p .venv-lowest/bin/python --resolution lowest-direct -e '.[all,test]'
	ORCHESTRA_CORE_TESTS=1 .venv-lowest/bin/python -m pytest -q $(CORE_TESTS)

PYENV_ROOT ?= $(HOME)/.pyenv

test-pythons: $(STAMP)
	set -e; for v in $(PYTHONS); do \
	  py=$$(ls $(PYENV_ROOT)/versions/$$v.*/bin/python$$v 2>/dev/null | tail -n 1); \
	  $(UV) venv -q --clear -p $${py:-python$$v} .venv-$$v; \
	  $(UV) pip install -q -p .venv-$$v/bin/python -e '.[all,test]'; \
	  ORCHESTRA_CORE_TESTS=1 .venv-$$v/bin/python -m pytest -q $(CORE_TESTS); \
	done

# The pictures and example outputs (docs/generated/, scripts/docs_assets.py), then the site.
docs: $(STAMP)
	$(PY) scripts/docs_assets.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The built site as a reader gets it: every public name in the API reference, every page
# in headless Chromium (.ci/run installs it) with no console error, diagrams drawn.
docs-check: docs
	ORCHESTRA_DOCS_SITE=site $(VENV)/bin/pytest -q -m docs_site -p no:cacheprovider tests/test_docs_site.py

# Every bench/*.py, new ones included; each prints its targets and verdicts. One that
# misses a target (prints MISSED or OVER TARGET, or exits non-zero) does not stop the
# others: the list at the end names it, and the status is 1.
# make bench BASE=<rev>: instead, the benches that print FIGURE lines (--quick), run side by
# side on orchestra at <rev> (a git worktree, on this venv) and on this checkout, in
# interleaved rounds; per figure, the median here/base ratio with its min-max
# (scripts/bench_base.py; BENCHES="bench/x.py ..." picks the benches, ROUNDS=N the rounds).
bench: $(STAMP) $(if $(BASE),,$(OWN_STAMPS))
ifdef BASE
	$(PY) scripts/bench_base.py $(BASE) --rounds $(or $(ROUNDS),3) $(BENCHES)
else
	@failed=""; log=$$(mktemp); for script in bench/*.py; do \
		echo "== $$script"; \
		{ $(PY) $$script 2>&1 || echo "$$script exited with an error"; } | tee $$log; \
		grep -Eq 'MISSED|OVER TARGET|exited with an error' $$log && failed="$$failed $$script"; \
		echo; \
	done; \
	for n in $(OWN_VENV); do \
		echo "== bench/bridges.py in .venv-$$n"; \
		{ .venv-$$n/bin/python bench/bridges.py 2>&1 || echo "bench/bridges.py exited with an error"; } | tee $$log; \
		grep -Eq 'MISSED|OVER TARGET|exited with an error' $$log && failed="$$failed bench/bridges.py(.venv-$$n)"; \
		echo; \
	done; rm -f $$log; \
	if [ -n "$$failed" ]; then echo "benches that missed a target or failed:$$failed"; exit 1; fi
endif

clean:
	rm -rf $(VENV) .venv-lowest $(foreach n,$(OWN_VENV),.venv-$(n)) $(foreach v,$(PYTHONS),.venv-$(v)) site docs/generated .mypy_cache .pytest_cache .ruff_cache
