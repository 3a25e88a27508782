# Everything a user or CI needs, from a fresh clone with only Python and make.
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null)
ifeq ($(UV),)
UV := .tools/bin/uv
endif
# bytecode compiled at install: Hermes imports ~800 modules in every worker
export UV_COMPILE_BYTECODE := 1
RUN := $(UV) run --frozen --no-sync

.PHONY: env browser test test-unit test-hard lint demo shell docs bench eval clean install-check

.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet uv

.venv/.synced: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --python $(PYTHON) --all-extras --all-groups
	touch $@

env: .venv/.synced

# the console's browser tests (tests/test_web.py) drive Debian's chromium through Playwright
# (Playwright's own browser download is not used); installed here when missing and root (CI)
browser:
	@test -x /usr/bin/chromium || { test "$$(id -u)" = 0 && apt-get update -qq && apt-get install -y -qq chromium; } \
		|| echo "chromium is missing: apt-get install chromium (tests/test_web.py skips without it)"

# three test processes on two cores: NorFab labs mostly wait on I/O (a whole run used 150% CPU);
# a module stays on one process, so its lab starts once; only test_lab uses the shipped lab's
# fixed ports
test: env browser
	$(RUN) pytest -q -n 3 --dist loadfile

# the pure logic alone, with fakes: no NorFab, no Hermes, seconds (they also run in make test)
test-unit: env
	$(RUN) pytest -q tests/unit

# the adversarial cases alone (they also run in make test)
test-hard: env
	$(RUN) pytest -q -m hardening

lint: env
	$(RUN) ruff check .
	$(RUN) ruff format --check .
	$(RUN) mypy

# build the wheel, install each host role into fresh environments as the docs say, run them
install-check: | $(UV)
	$(PYTHON) .ci/install_check.py --uv $(UV) --python $(PYTHON)

clean:
	rm -rf .venv .tools site benchmarks/results eval/results

bench: env
	$(RUN) python benchmarks/run.py

docs: env
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs build --strict

# the operator jobs on the lab, scored (docs/evaluation.md); EVAL_ARGS="--repeats 3 ..."
# the fault benchmark instead (docs/benchmark.md): BENCH="--size medium --scenarios 40 --seed 7"
eval: env
ifdef BENCH
	$(RUN) python -m norfab_hermes.eval.bench $(BENCH)
else
	$(RUN) python -m norfab_hermes.eval $(EVAL_ARGS)
endif

demo: env
	$(RUN) python examples/lab/demo.py

shell: env
	$(RUN) python examples/lab/shell.py
