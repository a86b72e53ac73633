# Set-up and test commands; see README.md. Everything is installed by these rules: the GIL
# build into .venv, a free-threaded CPython (>= 3.13, --disable-gil) into .venv-ft.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
EXTRAS := test,experiments,pipeline,typecheck
PYTEST_ARGS ?=
# Where experiment records (and the test suite's figures, for the paper) go.
RESULTS ?= results

# Free-threaded side: tools/python-ft.sh finds the interpreter ($PYTHON_FT, python3.14t or
# python3.13t on PATH, a cached build) or builds one into ${XDG_CACHE_HOME:-~/.cache}/cstrie/python-ft.
VENV_FT   := .venv-ft
VPY_FT    := $(VENV_FT)/bin/python
EXTRAS_FT := test,bench
# The layers that run real threads; the linearizability run uses more threads here.
TESTS_FT  := tests/test_linearizability.py tests/test_faults.py tests/test_stress.py \
             tests/test_threaded_smoke.py tests/test_free_threaded.py tests/test_hot_paths.py \
             tests/test_lookup_validation.py tests/test_rdcss.py tests/test_tombs.py tests/test_size.py \
             tests/test_deep.py tests/test_layout.py tests/test_subsets.py \
             tests/test_replicated.py tests/test_counters.py tests/test_cache.py tests/test_compare.py \
             tests/test_unrecorded_walk.py tests/test_atomic_read.py
ENV_FT    := CSTRIE_LIN_HISTORIES=300 CSTRIE_LIN_THREADS=8

# Prints "<path>: <version> GIL|free-threaded" for the interpreter it runs in.
WHICH_PY := import sys; print(sys.executable + ":", sys.version.split()[0], "GIL" if getattr(sys, "_is_gil_enabled", lambda: True)() else "free-threaded")

.PHONY: venv venv-ft test test-quick test-ft typecheck reproduce reproduce-full publish pipeline-bench paper clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@echo "== setting up $(VENV) with $$($(PYTHON) --version) and extras [$(EXTRAS)]"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@$(VPY) -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	@touch $@

venv-ft: $(VENV_FT)/.installed

# pip runs with .venv-ft/bin first on PATH, as if the venv were activated: cereggii's sdist
# build asks a bare `python` for the include directory, and another python would give it the
# wrong headers. tools/constraints-ft.txt keeps out releases that do not build on 3.13t.
$(VENV_FT)/.installed: pyproject.toml tools/constraints-ft.txt
	@py=$$(tools/python-ft.sh) && \
	echo "== setting up $(VENV_FT) with $$py ($$($$py --version)) and extras [$(EXTRAS_FT)]" && \
	if test -x $(VPY_FT) && ! $(VPY_FT) -c 'import sys, sysconfig; sys.exit(not sysconfig.get_config_var("Py_GIL_DISABLED"))' 2>/dev/null; then \
		echo "== $(VPY_FT) is not free-threaded: recreating $(VENV_FT)"; rm -rf $(VENV_FT); fi && \
	if test -x $(VPY_FT) && test "$$($(VPY_FT) -VV 2>&1)" != "$$($$py -VV 2>&1)"; then \
		echo "== $(VPY_FT) is $$($(VPY_FT) -V 2>&1), not $$($$py -V 2>&1): recreating $(VENV_FT)"; rm -rf $(VENV_FT); fi && \
	{ test -x $(VPY_FT) || $$py -m venv $(VENV_FT); }
	@PATH="$(CURDIR)/$(VENV_FT)/bin:$$PATH" $(VPY_FT) -m pip install --quiet --disable-pip-version-check \
		-c tools/constraints-ft.txt -e ".[$(EXTRAS_FT)]"
	@$(VPY_FT) -c 'import sys, ctrie, baselines, experiments; assert not sys._is_gil_enabled(), "importing the package re-enabled the GIL"'
	@touch $@

# The type check, the whole suite on the GIL build (.venv), then the concurrency layers on the
# free-threaded build (.venv-ft, built on first use). Each part prints the figures it checked
# at its end.
test:
	@$(MAKE) --no-print-directory typecheck
	@$(MAKE) --no-print-directory test-quick
	@$(MAKE) --no-print-directory test-ft

# mypy --strict on the library (ctrie, baselines), and mypy with its default checks on the
# harness (experiments: measuring, reporting, the Spark pipeline, whose third-party libraries
# ship no types); settings and the cereggii stubs: [tool.mypy] in pyproject.toml. Each ends
# with its summary line ("Success: ...").
typecheck: venv
	@echo "== mypy --strict -p ctrie -p baselines, on $$($(VPY) -c '$(WHICH_PY)')"
	$(VPY) -m mypy --strict -p ctrie -p baselines
	@echo "== mypy -p experiments"
	$(VPY) -m mypy -p experiments

# The whole suite on the GIL build alone.
test-quick: venv
	@echo "== pytest, whole suite, on $$($(VPY) -c '$(WHICH_PY)')"
	CSTRIE_FIGURES_OUT=$(RESULTS)/test-figures/gil.json $(VPY) -m pytest $(PYTEST_ARGS)

# The concurrency layers on the free-threaded build.
test-ft: venv-ft
	@echo "== pytest, concurrency layers, on $$($(VPY_FT) -c '$(WHICH_PY)') with $(ENV_FT)"
	$(ENV_FT) CSTRIE_FIGURES_OUT=$(RESULTS)/test-figures/ft.json $(VPY_FT) -m pytest \
		$(PYTEST_ARGS) $(TESTS_FT)

# The main job: every experiment on both builds, every chart, the summary and the paper, all
# below $(RESULTS) (git-ignored): the checkout stays clean. SIZE=full for the publication-size
# run (make reproduce-full); `make publish` then updates the committed README table,
# paper/figures and paper/paper.md from it.
SIZE ?= quick
reproduce: venv
	@$(MAKE) --no-print-directory venv-ft || echo "== no free-threaded build (see above): measuring the GIL build only"
	$(VPY) -m experiments all --size $(SIZE) --out $(RESULTS)
	@if test -x $(VPY_FT); then \
		echo "== the same on the free-threaded build ($(VPY_FT))"; \
		$(VPY) -m experiments all --size $(SIZE) --out $(RESULTS) --python $(VPY_FT); \
	fi
	@if command -v java >/dev/null 2>&1 || test -n "$$JAVA_HOME"; then \
		$(MAKE) --no-print-directory pipeline-bench SIZE=$(SIZE) RESULTS=$(RESULTS); \
	else echo "== no Java: skipping the Spark routing benchmark (needs a JDK/JRE 17)"; fi
	$(VPY) -m experiments summary --from $(RESULTS)
	@$(MAKE) --no-print-directory paper RESULTS=$(RESULTS)
	@echo "== results in $(RESULTS)/, the summary in $(RESULTS)/summary-latest.md, figures in $(RESULTS)/paper/figures/, the paper in $(RESULTS)/paper/paper.md"
	@echo "== tracked files are unchanged; after a publication-size run (make reproduce-full), make publish updates them"

# The paper's tables and figures from the latest results, into $(RESULTS)/paper/ (make
# reproduce ends with it).
paper: venv
	$(VPY) -m experiments charts --from $(RESULTS)
	$(VPY) -m experiments paper --from $(RESULTS)

reproduce-full:
	@$(MAKE) --no-print-directory reproduce SIZE=full

# The one step that changes tracked files: README.md's results table, paper/figures/*.png and
# paper/paper.md, from the publication-size runs under $(RESULTS) (it refuses smaller ones).
publish: venv
	$(VPY) -m experiments publish --from $(RESULTS)

# The Spark routing benchmark (the paper's Spark table): a seeded workload of 10,000
# subscriptions, routed by the CS-trie on local[*] with the single-thread in-process rate
# beside it, and the regex baseline (cross join + RLIKE) on the first messages; then the
# same routing through mapInPandas and RDD mapPartitions, the alternatives mapInArrow beat.
# SIZE=full adds the scale run: 1,000,000 subscriptions and 1,000,000 messages in 8
# partitions (each Python worker builds the matcher once; summary.json's matcher_builds has
# the build's seconds and memory). At this size the default workload's mean fanout is 721,
# so the run writes 721 million deliveries (2.6 GB); it took 4.1-4.5 minutes here at load
# 2.2-2.7 (11 at load 6.3; route --deliveries ids, which this target does not run: 2.2-2.3
# minutes): see experiments/pipeline/README.md ("Memory, and a run at 1,000,000 subscriptions").
PIPELINE_MESSAGES_quick := 100000
PIPELINE_MESSAGES_full  := 1000000
PIPELINE_BASELINE_quick := 5000
PIPELINE_BASELINE_full  := 20000
PIPELINE_DIR = $(RESULTS)/pipeline/$(SIZE)
# Extra --conf settings of the scale run; empty: Spark's defaults, as in the run the README
# reports (its memory section says what each part took and what to set on a cluster).
PIPELINE_SCALE_CONF ?=
pipeline-bench: venv
	$(VPY) -m experiments pipeline generate --out $(PIPELINE_DIR)/workload --overwrite \
		--subscriptions 10000 --messages $(PIPELINE_MESSAGES_$(SIZE))
	$(VPY) -m experiments pipeline route --out $(PIPELINE_DIR)/routed --overwrite \
		--subscriptions $(PIPELINE_DIR)/workload/subscriptions \
		--messages $(PIPELINE_DIR)/workload/messages \
		--inprocess $(PIPELINE_MESSAGES_$(SIZE)) \
		--baseline regex --baseline-limit $(PIPELINE_BASELINE_$(SIZE))
	for impl in pandas rdd; do \
		$(VPY) -m experiments pipeline route --out $(PIPELINE_DIR)/routed-$$impl --overwrite \
			--subscriptions $(PIPELINE_DIR)/workload/subscriptions \
			--messages $(PIPELINE_DIR)/workload/messages --impl $$impl || exit 1; \
	done
	@if test "$(SIZE)" = full; then \
		echo "== the scale run: 1,000,000 subscriptions, 1,000,000 messages, 8 partitions"; \
		$(VPY) -m experiments pipeline generate --out $(PIPELINE_DIR)/workload-1m --overwrite \
			--subscriptions 1000000 --messages 1000000 && \
		$(VPY) -m experiments pipeline route --out $(PIPELINE_DIR)/routed-1m --overwrite \
			--subscriptions $(PIPELINE_DIR)/workload-1m/subscriptions \
			--messages $(PIPELINE_DIR)/workload-1m/messages --partitions 8 \
			$(PIPELINE_SCALE_CONF) || exit 1; \
	fi

# Keeps the free-threaded interpreter cached outside the repo (see tools/python-ft.sh).
clean:
	rm -rf $(VENV) $(VENV_FT) .pytest_cache .hypothesis .mypy_cache build *.egg-info
