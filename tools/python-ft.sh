#!/usr/bin/env bash
# Find, or build once, a free-threaded CPython (>= 3.13, --disable-gil) for `make venv-ft`.
#
# Prints the interpreter's path as the only line on stdout; progress and errors go to stderr.
# Order of search:
#   1. $PYTHON_FT (must be free-threaded >= 3.13, else this fails: no silent fallback);
#   2. python3.14t, python3.13t on PATH;
#   3. a previous build in $CACHE (${XDG_CACHE_HOME:-$HOME/.cache}/cstrie/python-ft);
#   4. a build from source of the newest CPython 3.13 whose Debian source this machine can
#      fetch: every version of the source package python3.13 that Debian sid lists, newest
#      first (sid may list a version whose files are not served yet: 3.13.18 was, on
#      2026-11-23, while 3.13.15 downloaded), then trixie's (3.13.5) with a warning. The
#      source comes through apt-get with a private sources list in a temporary directory (the
#      system's apt configuration is never changed; the archive URI is read from it), then
#      ./configure --disable-gil --prefix=$CACHE && make && make install.
# Why the newest: 3.13 point releases fix free-threading bugs, and the study records the exact
# version with every result (a rerun on 3.14t or later only needs PYTHON_FT).
# Build logs stay in $CACHE/logs; the build tree is removed after a successful install;
# $CACHE/.complete names the source it was built from. `make clean` leaves $CACHE alone;
# remove it by hand to force a rebuild (for example to leave a fallback build behind).
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/cstrie/python-ft"
LOGS="$CACHE/logs"
# Suites tried in order; the first one is the wanted one, the others are fallbacks.
DEB_SUITES="${CSTRIE_FT_SUITES:-sid trixie}"
DEB_SOURCE=python3.13
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# Modules pip needs (zlib: wheels; ssl: https indexes) and the -dev packages they build from.
REQUIRED_DEV="zlib1g-dev libssl-dev"
OPTIONAL_DEV="libffi-dev libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev libncurses-dev uuid-dev libgdbm-dev libexpat1-dev tk-dev"

say() { printf '%s\n' "$*" >&2; }
hint() {
    say "   You can supply a free-threaded interpreter instead:"
    say "       PYTHON_FT=/path/to/python3.13t make venv-ft"
}
die() {
    say "!! python-ft: $*"
    hint
    exit 1
}
# die_log STEP LOGFILE MESSAGE: show the tail of a build log, then fail.
die_log() {
    say "!! python-ft: $3"
    say "   last lines of $2:"
    tail -n 25 "$2" | sed 's/^/   | /' >&2 || true
    hint
    exit 1
}

# is_ft PY: true if PY runs, is CPython >= 3.13, and was built with --disable-gil.
is_ft() {
    "$1" -c 'import sys, sysconfig
sys.exit(0 if sys.implementation.name == "cpython" and sys.version_info >= (3, 13)
         and sysconfig.get_config_var("Py_GIL_DISABLED") else 1)' >/dev/null 2>&1
}
found() {
    say "== python-ft: using $1 ($("$1" -VV 2>&1 | head -n 1)) [$2]"
    printf '%s\n' "$1"
    exit 0
}

# The interpreter `make install` put in PREFIX, if any.
installed_in() {
    local py
    for py in "$1"/bin/python3.1[3-9]t "$1"/bin/python3t; do
        [ -x "$py" ] && { printf '%s\n' "$py"; return 0; }
    done
    return 1
}

# --- 1-3: look for an interpreter --------------------------------------------------------
if [ -n "${PYTHON_FT:-}" ]; then
    py=$(command -v -- "$PYTHON_FT" || true)
    [ -n "$py" ] || { say "!! python-ft: PYTHON_FT=$PYTHON_FT: not found or not executable"; exit 1; }
    is_ft "$py" || { say "!! python-ft: PYTHON_FT=$PYTHON_FT is not a free-threaded CPython >= 3.13" \
                          "(need sysconfig.get_config_var('Py_GIL_DISABLED') == 1)"; exit 1; }
    found "$py" "from \$PYTHON_FT"
fi
for name in python3.14t python3.13t; do
    if py=$(command -v "$name" 2>/dev/null); then
        if is_ft "$py"; then found "$py" "on PATH"; fi
        say "== python-ft: ignoring $py (not a working free-threaded CPython >= 3.13)"
    fi
done
if [ -f "$CACHE/.complete" ] && py=$(installed_in "$CACHE") && is_ft "$py"; then
    from=$(head -n 1 "$CACHE/.complete" 2>/dev/null || true)
    found "$py" "cached build in $CACHE${from:+, from $from}"
fi

# --- 4: build one -------------------------------------------------------------------------
say "== python-ft: no free-threaded CPython found (\$PYTHON_FT, python3.14t/python3.13t on PATH, $CACHE);"
say "   building the newest $DEB_SOURCE that Debian ($DEB_SUITES) serves into $CACHE (several minutes)."
mkdir -p "$CACHE" "$LOGS"
# One build at a time: a second `make venv-ft` waits for the first, then uses its result.
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
    say "== python-ft: another build holds $CACHE/.lock; waiting for it"
    flock 9
    if [ -f "$CACHE/.complete" ] && py=$(installed_in "$CACHE") && is_ft "$py"; then
        found "$py" "built by a concurrent run in $CACHE"
    fi
fi
rm -f "$CACHE/.complete"

say "== step 1/6: checking build prerequisites"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: the source is fetched from the Debian archive with apt-get (Debian/Ubuntu only)."
command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: cannot check which -dev packages are installed."
CC_BIN="${CC:-cc}"
command -v "$CC_BIN" >/dev/null 2>&1 || die "C compiler '$CC_BIN' not found. Install one with: apt-get install build-essential"
command -v make >/dev/null 2>&1 || die "make not found. Install it with: apt-get install build-essential"
for tool in tar xz; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found (needed to unpack the .orig.tar.xz)."
done
probe=$(mktemp -d)
printf 'int main(void) { return 0; }\n' >"$probe/t.c"
if ! "$CC_BIN" "$probe/t.c" -o "$probe/t" >"$LOGS/cc-probe.log" 2>&1; then
    rm -rf "$probe"
    die_log 1 "$LOGS/cc-probe.log" "the C compiler '$CC_BIN' cannot build a trivial program (compiler missing or broken)."
fi
rm -rf "$probe"
have_pkg() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null | grep -qx installed; }
missing_required=""
missing_optional=""
for p in $REQUIRED_DEV; do have_pkg "$p" || missing_required="$missing_required $p"; done
for p in $OPTIONAL_DEV; do have_pkg "$p" || missing_optional="$missing_optional $p"; done
if [ -n "$missing_optional" ]; then
    say "   note: missing optional -dev packages (the matching stdlib modules will be skipped):$missing_optional"
fi
if [ -n "$missing_required" ]; then
    die "missing -dev packages that pip needs (zlib, ssl):$missing_required
   Install them (as root), then re-run:
       apt-get install$missing_required"
fi
say "   compiler: $("$CC_BIN" --version | head -n 1); -dev packages for zlib and ssl present"

# Private apt configuration: nothing under /etc/apt or /var/lib/apt is read for lists or written.
APT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cstrie-apt.XXXXXX")
BUILD="$CACHE/build"
cleanup() { rm -rf "$APT_TMP"; }
trap cleanup EXIT
mkdir -p "$APT_TMP/lists/partial" "$APT_TMP/cache/archives/partial" "$APT_TMP/parts"

# The archive URI, from the system's own Debian sources (deb822 .sources or classic .list).
# Security and updates archives are skipped: trixie's main suite lives in the main archive.
debian_uri() {
    local f
    if [ -n "${CSTRIE_DEBIAN_URI:-}" ]; then printf '%s\n' "$CSTRIE_DEBIAN_URI"; return; fi
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        # One stanza per blank-line-separated paragraph; print the URIs of 'deb' stanzas.
        awk 'function flush() { if (types ~ /(^| )deb( |$)/ && !off) print uris; types = ""; uris = ""; off = 0 }
             /^[[:space:]]*#/ { next }
             /^[[:space:]]*$/ { flush(); next }
             tolower($1) == "types:"   { $1 = ""; types = $0 " " }
             tolower($1) == "uris:"    { $1 = ""; uris = $0 }
             tolower($1) == "enabled:" { off = (tolower($2) == "no") }
             END { flush() }' "$f" | tr ' ' '\n'
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        # deb [options] URI suite components...
        sed -n -E 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]].*/\2/p' "$f"
    done
}
URI=$(debian_uri | grep -E '^(https?|ftp)://' | grep -v -E 'security|debian-ports|-updates' | head -n 1 || true)
[ -n "$URI" ] || die "no Debian archive URI found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list
   (looked for a 'deb' entry such as 'URIs: http://deb.debian.org/debian'; set CSTRIE_DEBIAN_URI to override)."
if [ -r "$KEYRING" ]; then
    SRC_OPTS="[signed-by=$KEYRING]"
else
    die "keyring $KEYRING not found: cannot verify the Debian archive. Install it with: apt-get install debian-archive-keyring"
fi
# One suite at a time: a private sources list, its index, and its versions of the source
# package, newest first; the first whose files download wins.
APT_OPTS=(
    -o "Dir::Etc::sourcelist=$APT_TMP/sources.list"
    -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$APT_TMP/lists"
    -o "Dir::Cache=$APT_TMP/cache"
    -o "Dir::Cache::pkgcache=$APT_TMP/cache/pkgcache.bin"
    -o "Dir::Cache::srcpkgcache=$APT_TMP/cache/srcpkgcache.bin"
    -o "APT::Get::List-Cleanup=false"
    -o "Acquire::Languages=none"
)
# As root, apt drops to user _apt for downloads, which cannot write into a private 0700 dir.
[ "$(id -u)" = 0 ] && APT_OPTS+=(-o "APT::Sandbox::User=root")

SRC="$CACHE/src"
mkdir -p "$SRC"
ORIG=""
FROM=""
first_suite=${DEB_SUITES%% *}
for suite in $DEB_SUITES; do
    rm -rf "$APT_TMP/lists" "$APT_TMP/cache"
    mkdir -p "$APT_TMP/lists/partial" "$APT_TMP/cache/archives/partial"
    printf 'deb-src %s %s %s main\n' "$SRC_OPTS" "$URI" "$suite" >"$APT_TMP/sources.list"
    say "== step 2/6: apt-get update with a private sources list ($(cat "$APT_TMP/sources.list"))"
    if ! apt-get "${APT_OPTS[@]}" update >"$LOGS/apt-update-$suite.log" 2>&1 \
       || grep -q -E '^(E:|W: Failed to fetch|Err:)' "$LOGS/apt-update-$suite.log"; then
        say "   apt-get update of $URI $suite failed (log: $LOGS/apt-update-$suite.log)"
        continue
    fi
    versions=$(apt-cache "${APT_OPTS[@]}" showsrc "$DEB_SOURCE" 2>/dev/null \
               | sed -n 's/^Version: //p' | sort -u -r -V)
    [ -n "$versions" ] || { say "   $suite lists no $DEB_SOURCE"; continue; }
    say "   $suite lists $DEB_SOURCE $(echo $versions | sed 's/ /, /g')"
    for v in $versions; do
        say "== step 3/6: apt-get source --download-only $DEB_SOURCE=$v from $suite (into $SRC)"
        rm -f "$SRC"/*
        if (cd "$SRC" && apt-get "${APT_OPTS[@]}" source --download-only "$DEB_SOURCE=$v") \
                >"$LOGS/apt-source.log" 2>&1; then
            ORIG=$(ls -t "$SRC"/"${DEB_SOURCE}"_*.orig.tar.xz 2>/dev/null | head -n 1 || true)
            [ -n "$ORIG" ] && { FROM="Debian $suite $DEB_SOURCE $v"; break 2; }
        fi
        say "   $DEB_SOURCE $v is listed but its files did not download ($(grep -m1 -o -E '[0-9]{3} +[A-Za-z ]+' "$LOGS/apt-source.log" || echo 'see the log'))"
    done
done
[ -n "$ORIG" ] || die_log 3 "$LOGS/apt-source.log" "no version of $DEB_SOURCE could be fetched from Debian ($DEB_SUITES): no network to the archive, or a proxy/mirror problem."
if [ "${suite}" != "$first_suite" ]; then
    say "!! python-ft: WARNING: nothing newer could be fetched from $first_suite; falling back to $FROM."
    say "   Free-threading fixes of later 3.13 releases are missing from it; results record the exact version."
fi
say "   got $(basename "$ORIG") ($FROM)"

say "== step 4/6: unpacking and ./configure --disable-gil --prefix=$CACHE"
rm -rf "$BUILD"
mkdir -p "$BUILD"
tar -xJf "$ORIG" -C "$BUILD" || die "could not unpack $ORIG."
TOP=$(find "$BUILD" -mindepth 2 -maxdepth 2 -name configure -printf '%h\n' | head -n 1)
[ -n "$TOP" ] || die "no configure script in $ORIG."
if ! (cd "$TOP" && ./configure --disable-gil --prefix="$CACHE" --with-ensurepip=install) >"$LOGS/configure.log" 2>&1; then
    die_log 4 "$LOGS/configure.log" "./configure failed."
fi

say "== step 5/6: make -j$(nproc) (log: $LOGS/make.log)"
if ! make -C "$TOP" -j"$(nproc)" >"$LOGS/make.log" 2>&1; then
    die_log 5 "$LOGS/make.log" "the build failed (make)."
fi
# setup.py-less 3.13 lists stdlib extension modules it could not build at the end of the log.
skipped=$(grep -A3 -E 'The necessary bits to build these optional modules were not found|Failed to build these modules|Following modules built successfully but were removed' "$LOGS/make.log" || true)
[ -z "$skipped" ] || { say "   note: modules not built:"; printf '%s\n' "$skipped" | sed 's/^/   | /' >&2; }

say "== step 6/6: make install (into $CACHE) and checking the result"
if ! make -C "$TOP" install >"$LOGS/install.log" 2>&1; then
    die_log 6 "$LOGS/install.log" "make install failed."
fi
py=$(installed_in "$CACHE") || die_log 6 "$LOGS/install.log" "make install finished but no python3.1xt is in $CACHE/bin."
is_ft "$py" || die "$py is not free-threaded (Py_GIL_DISABLED unset): configure did not take --disable-gil."
if ! "$py" -c 'import ssl, zlib, ensurepip' >"$LOGS/check.log" 2>&1; then
    die_log 6 "$LOGS/check.log" "$py lacks ssl or zlib, which pip needs."
fi
missing_mods=$("$py" - 2>/dev/null <<'EOF' || true
import importlib
gone = []
for m in ("ctypes", "bz2", "lzma", "sqlite3", "readline", "curses", "uuid", "dbm.gnu", "pyexpat", "tkinter"):
    try:
        importlib.import_module(m)
    except Exception:
        gone.append(m)
print(" ".join(gone))
EOF
)
[ -z "$missing_mods" ] || say "   note: stdlib modules unavailable in this build (their -dev packages were missing): $missing_mods"
rm -rf "$BUILD"
printf '%s\n' "$FROM" >"$CACHE/.complete"
found "$py" "built from $FROM"
