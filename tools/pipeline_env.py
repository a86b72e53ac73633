"""Pack the Python environment the Spark pipeline's executors run, for ``spark.archives``.

    python tools/pipeline_env.py --out cstrie-env.tar.gz

1. builds a wheel of this checkout (``pip wheel --no-deps``, from a copy of the package's
   files, so the checkout gets no ``build/`` or ``*.egg-info``): the package itself, not an
   editable install, which would put a pointer to this folder in the archive instead of the
   package's files;
2. makes a virtual environment with the interpreter running this script and installs the
   wheel and what the executors import (``cereggii`` with the package; ``pyarrow`` and
   ``numpy`` for ``--impl arrow``; ``pandas`` with ``--pandas``, for ``--impl pandas``), at
   the versions this interpreter has, so that driver and executors agree; not pyspark:
   Spark puts its own on the Python workers' path;
3. packs the environment's folder with ``tarfile`` (gzip) at the top of the archive, so that
   ``--conf spark.archives=cstrie-env.tar.gz#env`` unpacks it as ``./env`` in every
   executor's working folder and ``./env/bin/python`` is its interpreter (``route
   --executor-python ./env/bin/python``).

As with ``venv-pack``, the interpreter itself is not in the archive: ``bin/python`` is a link
to the one that made the environment (printed at the end), and every node must have that
Python (same version, same path). Python 3.11 finds the environment's packages from where
``bin/python`` stands, wherever the archive is unpacked.

Packing takes about 20 s the first time (pip's cache warm); the archive is cached
(``--cache``, else ``$CSTRIE_PIPELINE_ENV_CACHE``, else
``${XDG_CACHE_HOME:-~/.cache}/cstrie/pipeline-env``; the newest few kept) under a key made of
the wheel's contents (file names and bytes, not its time stamps), the pinned requirements and
the interpreter, so that a later run with the same sources only builds the wheel (a few
seconds) and copies the archive (about 5 s in all). pip's own cache keeps the downloads.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What the wheel is built from (pyproject.toml's packages, readme and license).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "ctrie", "baselines", "experiments")
#: Archives kept in the cache.
KEEP = 3


def _cache_dir() -> Path:
    if os.environ.get("CSTRIE_PIPELINE_ENV_CACHE"):
        return Path(os.environ["CSTRIE_PIPELINE_ENV_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cstrie" / "pipeline-env"


def _interpreter() -> str:
    """The Python a venv made by this one links to (the base of this venv, if any)."""
    return str(Path(getattr(sys, "_base_executable", sys.executable)).resolve())


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
                   check=True)


def build_wheel(work: Path) -> Path:
    """A wheel of this checkout, built from a copy of its package files in ``work``."""
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    _pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(work / "wheel"), str(src))
    (wheel,) = (work / "wheel").glob("*.whl")
    return wheel


def wheel_digest(wheel: Path) -> str:
    """sha256 of the wheel's file names and contents (not of the zip: its time stamps vary)."""
    h = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            h.update(name.encode() + b"\0" + z.read(name) + b"\0")
    return h.hexdigest()


def requirements(pandas: bool) -> list[str]:
    """The executors' imports besides the package, pinned to this interpreter's versions."""
    names = ["cereggii", "pyarrow", "numpy"] + (["pandas"] if pandas else [])
    return [f"{n}=={importlib.metadata.version(n)}" for n in names]


def pack(venv: Path, out: Path) -> None:
    """``venv``'s entries at the top of the gzip tar ``out`` (links kept as links)."""
    tmp = out.with_name(out.name + ".part")
    with tarfile.open(tmp, "w:gz", compresslevel=1) as tar:
        for entry in sorted(venv.iterdir()):
            tar.add(entry, arcname=entry.name)
    tmp.replace(out)


def make_env(out: Path, pandas: bool = False, cache: Path | None = None) -> dict:
    """Write the archive to ``out``; return what was done (key, cache hit, seconds)."""
    t0 = time.perf_counter()
    cache = cache or _cache_dir()
    with tempfile.TemporaryDirectory(prefix="cstrie-env-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(work)
        reqs = requirements(pandas)
        key = hashlib.sha256("\n".join([
            wheel_digest(wheel), *reqs, sys.version, platform.machine(),
            _interpreter()]).encode()).hexdigest()[:20]
        cached = cache / f"cstrie-env-{key}.tar.gz"
        hit = cached.is_file()
        if not hit:
            venv = work / "env"
            subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                           check=True)
            _pip("--python", str(venv / "bin" / "python"), "install", "--quiet",
                 "--no-warn-script-location", str(wheel), *reqs)
            cache.mkdir(parents=True, exist_ok=True)
            pack(venv, cached)
            for old in sorted(cache.glob("cstrie-env-*.tar.gz"),
                              key=lambda p: p.stat().st_mtime)[:-KEEP]:
                old.unlink()
        else:
            cached.touch()  # the newest stay
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, out)
    return {"out": str(out), "bytes": out.stat().st_size, "key": key, "cached": hit,
            "wheel": wheel.name, "requirements": reqs,
            "interpreter": _interpreter(),
            "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/pipeline_env.py",
        description="Pack a virtual environment with this checkout's wheel for the Spark "
                    "pipeline's executors (spark.archives).")
    parser.add_argument("--out", type=Path, required=True, metavar="FILE.tar.gz",
                        help="the archive to write")
    parser.add_argument("--pandas", action="store_true",
                        help="also install pandas (for route --impl pandas)")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help=f"where archives are kept between runs (default: {_cache_dir()})")
    args = parser.parse_args(argv)
    done = make_env(args.out, args.pandas, args.cache)
    print(f"wrote {done['out']} ({done['bytes'] / 2**20:.0f} MiB, {done['wheel']} + "
          f"{' '.join(done['requirements'])}) in {done['seconds']} s"
          f"{' from the cache' if done['cached'] else ''}; its bin/python links to "
          f"{done['interpreter']}, which every node needs at that path")
    return 0


if __name__ == "__main__":
    sys.exit(main())
