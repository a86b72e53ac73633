# Set-up and test commands; see README.md. Everything is installed into .venv by these rules.
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
EXTRAS := test,experiments
PYTEST_ARGS ?=

.PHONY: venv test test-quick clean

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@echo "== setting up $(VENV) with $$($(PYTHON) --version) and extras [$(EXTRAS)]"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	@$(VPY) -m pip install --quiet --disable-pip-version-check -e ".[$(EXTRAS)]"
	@touch $@

# The whole suite on the GIL build; prints the figures the tests checked at the end.
test: venv
	@echo "== pytest on $$($(VPY) -c 'import sys; print(sys.version.split()[0], "GIL" if getattr(sys, "_is_gil_enabled", lambda: True)() else "free-threaded")')"
	$(VPY) -m pytest $(PYTEST_ARGS)

test-quick: test

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
