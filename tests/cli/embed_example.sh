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

# pkg-config: a C program built with `pkg-config --cflags --libs cutelua`,
# checking the version header against the library it runs with
cat > "$T/pc.c" <<'EOC'
#include <cutelua.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  cutelua *cl = cutelua_open();
  int ok = cl && strcmp(cutelua_version(), CUTELUA_VERSION_STRING) == 0 && CUTELUA_VERSION_NUMBER > 0;
  printf("%s %d\n", CUTELUA_VERSION_STRING, CUTELUA_VERSION_NUMBER);
  cutelua_close(cl);
  return ok ? 0 : 1;
}
EOC
PC="env PKG_CONFIG_PATH=$T/prefix/lib/pkgconfig pkg-config"
# shellcheck disable=SC2046
cc ${CUTELUA_TEST_CFLAGS:-} "$T/pc.c" $($PC --cflags --libs cutelua) ${CUTELUA_TEST_LDFLAGS:-} -o "$T/pc"
LD_LIBRARY_PATH="$T/prefix/lib" "$T/pc"

# A stock luajit: require "cute" finds the installed Lua modules (share/lua/5.1)
# and libcutelua as the C module cute.capi; or libcutelua alone as cute.so.
# (Not under the sanitizers: an instrumented libcutelua cannot load into an
# uninstrumented luajit.)
case "${CUTELUA_TEST_CFLAGS:-}" in
  *sanitize*) echo "stock luajit: skipped under the sanitizers" ;;
  *)
    if command -v luajit >/dev/null 2>&1; then
      out=$(LUA_PATH="$T/prefix/share/lua/5.1/?.lua;$T/prefix/share/lua/5.1/?/init.lua;;" \
        LUA_CPATH="$T/prefix/lib/lua/5.1/?.so;;" luajit -e \
        'local cute = require "cute"; print(cute.composition(cute.make_layout({4, 8}), cute.make_layout(4, 2)))')
      test "$out" = "4:2" || { echo "stock luajit with the installed modules printed: $out" >&2; exit 1; }
      out=$(LUA_PATH=";;" LUA_CPATH="$T/prefix/lib/lua/5.1/?.so;;" luajit -e \
        'local cute = require "cute"; print(cute.version(), cute.make_layout({4, 8}))')
      test "$out" = "$("$T/prefix/bin/cutelua" -e 'io.write(require("cute").version())')	(4,8):(1,4)" ||
        { echo "stock luajit with cute.so printed: $out" >&2; exit 1; }
    else
      echo "stock luajit: not installed, skipped"
    fi
    ;;
esac
