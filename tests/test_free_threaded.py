"""On a free-threaded build, importing the packages must leave the GIL disabled.

CPython re-enables the GIL at run time when it imports an extension module that does not
declare free-threading support (``Py_mod_gil``), with a RuntimeWarning naming the module; the
concurrency tests would then pass on a free-threaded interpreter while running with the GIL.
Each package is also imported in a fresh interpreter, so that what pytest or earlier tests
imported can neither hide nor cause a re-enabled GIL.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import sysconfig

import pytest

pytestmark = [
    pytest.mark.concurrency,
    pytest.mark.skipif(
        not sysconfig.get_config_var("Py_GIL_DISABLED"),
        reason="needs a free-threaded CPython (built with --disable-gil); this one has the GIL",
    ),
]

PACKAGES = ("ctrie", "baselines", "experiments")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_imports_leave_the_gil_disabled() -> None:
    import baselines  # noqa: F401
    import ctrie  # noqa: F401
    import experiments  # noqa: F401

    assert not sys._is_gil_enabled(), (
        "the GIL is enabled in this run: an imported extension module re-enabled it, or PYTHON_GIL=1"
    )


@pytest.mark.parametrize("package", PACKAGES)
def test_import_in_a_fresh_interpreter_leaves_the_gil_disabled(package: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}  # PYTHON_GIL=0 would mask it
    code = f"import sys, {package}; sys.exit(1 if sys._is_gil_enabled() else 0)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"import {package} re-enabled the GIL:\n{proc.stderr}"
