# The few commands everyone runs. Each creates .venv and installs what it needs.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
INTEGRATIONS := $(wildcard integrations/*/pyproject.toml)

.PHONY: demo test lint typecheck pytest bench docs clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): $(PY) pyproject.toml $(INTEGRATIONS)
	$(PY) -m pip install -q -e '.[dev]' $(foreach p,$(INTEGRATIONS),-e $(dir $(p)))
	touch $(STAMP)

demo: $(STAMP)
	@echo "== examples/pipeline.py: TaskHooks, RetryPolicy, a skip, an all_done cleanup"
	$(PY) examples/pipeline.py
	@echo; echo "== examples/agents_research.py: subagents retried, delegated and forked"
	$(PY) examples/agents_research.py
	@echo; echo "== examples/main_demo.py: the whole product, traced, and the trace read back"
	$(PY) examples/main_demo.py

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy --strict orchestra $(foreach p,$(INTEGRATIONS),$(wildcard $(dir $(p))orchestra_*))

pytest: $(STAMP)
	$(VENV)/bin/pytest -q $(if $(INTEGRATIONS),tests $(dir $(INTEGRATIONS)),tests)

test: lint typecheck pytest docs

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

bench: $(STAMP)
	$(PY) bench/scheduler.py
	$(PY) bench/dispatch.py
	$(PY) bench/hooks.py
	$(PY) bench/dask_cluster.py
	$(PY) bench/tracing.py

clean:
	rm -rf $(VENV) site .mypy_cache .pytest_cache .ruff_cache
