#!/bin/sh
# install-deps.sh - install the Debian packages Tessel needs to build and test,
# but only those that are missing.  Safe to run repeatedly; a no-op when all
# are present.  Needs root (or sudo) only when something must be installed.
#
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --browser  also Chromium and Node.js for the console test
set -eu

PKGS="build-essential pkg-config perl libcmocka-dev libjansson-dev libsqlite3-dev libinih-dev
      libmicrohttpd-dev libcurl4-openssl-dev libhttp-parser-dev nettle-dev libwslay-dev jq curl sqlite3
      iproute2 procps psmisc strace lcov socat expect tmux"
# promtool (check metrics in t3120): Debian ships it in the prometheus package.
PKGS="$PKGS prometheus"
# The API description built into tesseld (xxd) and its checks (python3-jsonschema); the man
# pages (go-md2man) and the zsh completion's test (zsh).
PKGS="$PKGS xxd python3-jsonschema go-md2man zsh"
# The web console's first page bundled at build time (scripts/console-bundle.sh; a build tool
# only, nothing of it is served).
PKGS="$PKGS esbuild"
# Debian packaging and its test in a throwaway root (docs/install.md, t8000); debian/control's
# Build-Depends are the build dependencies above.
PKGS="$PKGS dpkg-dev debhelper lintian debootstrap"
# Container jobs (docs/containers.md, t7020-t7024): the OCI runtime tesseld's shim runs, and
# util-linux's unshare/mount for t7024's attempts from inside.
PKGS="$PKGS crun util-linux"
# Virtual folders (docs/folders.md, t3180-t3182): POSIX ACLs written by tesseld (libacl1-dev)
# and read back by the tests (acl: getfacl).
PKGS="$PKGS libacl1-dev acl"
# Folders on btrfs (docs/folders.md, "Quotas"; t3200): a read-only snapshot a user makes inside a
# folder is deleted with it (tesseld: the kernel's ioctls, linux-libc-dev's linux/btrfs.h); the
# test makes a btrfs image on a loop device (mkfs.btrfs, btrfs) and mounts it (mount, losetup:
# util-linux).
PKGS="$PKGS btrfs-progs"
# spank_tessel.so (libslurm-dev: <slurm/spank.h>) and its multi-node test (docs/slurm.md, t9000).
PKGS="$PKGS libslurm-dev slurmctld slurmd slurm-client munge"
# Slurm's accounting in the test cluster (QOS, fair share, sacct: tests/slurm/cluster.sh with
# TSC_DBD=1, t9012): slurmdbd and the MariaDB server it stores into.
PKGS="$PKGS slurmdbd mariadb-server"
# The job_submit plugin's unit tests (contrib/slurm/job_submit.lua, t9003): Lua 5.1, as slurmctld
# runs it, and busted.
PKGS="$PKGS lua5.1 lua-busted"
# Inference services (docs/serving.md, t7050-t7052): HAProxy, the proxy tesseld starts and
# weighs, and wrk, the closed-loop load generator of the tests.
PKGS="$PKGS haproxy wrk"
# A job's web services (docs/job-services.md, t7070-t7072): Debian's Jupyter, which
# `tessel notebook` runs in the job, and python3-websocket, the tests' WebSocket client of it.
PKGS="$PKGS jupyter-notebook python3-websocket"
# npm installs the console's one library, xterm.js (the terminal page, docs/terminal.md), which
# `make` stages into the served console (src/console/module.mk); node runs the browser tests.
# Node.js and npm may come from outside Debian (NodeSource, nvm): ask apt only when absent.
command -v node >/dev/null 2>&1 || PKGS="$PKGS nodejs"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
if [ "${1:-}" = "--browser" ]; then
    PKGS="$PKGS chromium"
fi

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
        echo "install-deps: need root to install:$missing" >&2
        exit 1
    }
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
