#!/bin/sh
# Installs the Debian packages clarity builds and tests with, when missing.
set -e
PKGS="build-essential pkg-config libsqlite3-dev libpcre2-dev libjansson-dev uthash-dev libcriterion-dev sqlite3 libtree-sitter-dev git libhiredis-dev redis-server valgrind"
# The -dev packages of SQLite, PCRE2, tree-sitter and hiredis ship the
# archives the .so links in (the Makefile's STATIC_DEPS).
# npm fetches the tree-sitter grammars (scripts/grammars.sh); any npm will do
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
