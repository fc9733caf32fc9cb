#!/bin/sh
# Installs cutelua into a temporary prefix, then builds examples/embed as an
# outside project would (find_package(cutelua)) and runs it.
#   sh embed_example.sh BUILD_DIR SOURCE_DIR CMAKE
set -eu
BUILD=$1 SRC=$2 CMAKE=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$CMAKE" --install "$BUILD" --prefix "$T/prefix" >/dev/null
test -x "$T/prefix/bin/cutelua"
test -f "$T/prefix/include/cutelua.h"
"$CMAKE" -S "$SRC/examples/embed" -B "$T/build" -DCMAKE_PREFIX_PATH="$T/prefix" \
  -DCMAKE_C_FLAGS="${CUTELUA_TEST_CFLAGS:-}" -DCMAKE_EXE_LINKER_FLAGS="${CUTELUA_TEST_LDFLAGS:-}" >/dev/null
"$CMAKE" --build "$T/build" >/dev/null
# The installed cutelua runs scripts with no LUA_PATH set up.
"$T/prefix/bin/cutelua" -e 'assert(require("cute").version())'
cd "$SRC/examples/embed"
LD_LIBRARY_PATH="$T/prefix/lib" "$T/build/embed_demo" kernels.lua
