#!/bin/sh
# Ahead-of-time export, end to end (tests/aot/):
#   sh tests/aot/aot_test.sh CUTELUA LIBCUTELUA.a OUTDIR
# Exports the test kernels under two prefixes (ma_, mb_) for sm_80 and sm_90a;
# compiles a C99 (pedantic) program against both headers and objects (no
# duplicate symbols) and the headers as C++; builds a loader on libcutelua's
# cutelua_aot API; checks both modules' embedded checksums, and that an
# altered metadata byte is rejected. With a GPU: runs the exported kernels
# from C (static objects and the dynamic library) against CPU references.
set -eu
B=$1
LIB=$2
OUT=$3
CUDA=${CUDA_HOME:-/usr/local/cuda}
CC=${CC:-cc}
CXX=${CXX:-c++}
rm -rf "$OUT"
mkdir -p "$OUT"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B" tests/aot/export.lua "$OUT" > "$OUT/export.log" 2>&1 || { cat "$OUT/export.log"; fail "export"; }
for f in mod_a.h mod_a.o mod_a.so mod_b.h mod_b.o mod_b.so; do [ -f "$OUT/$f" ] || fail "missing $f"; done

# both modules in one C99 program, and the headers in C++
"$CC" -std=c99 -Wall -Wextra -pedantic -Werror ${CUTELUA_TEST_CFLAGS:-} -I"$OUT" -isystem "$CUDA/include" tests/aot/both.c "$OUT/mod_a.o" \
  "$OUT/mod_b.o" -L"$CUDA/lib64/stubs" -lcuda ${CUTELUA_TEST_LDFLAGS:-} -o "$OUT/both" || fail "linking two modules"
printf '#include "mod_a.h"\n#include "mod_b.h"\n#include "cutelua_aot.h"\nint main() { return ma_describe() == 0; }\n' \
  > "$OUT/headers.cc"
"$CXX" -std=c++11 -Wall -Wextra -pedantic -Werror ${CUTELUA_TEST_CFLAGS:-} -I"$OUT" -Iinclude -c "$OUT/headers.cc" -o "$OUT/headers.o" \
  || fail "the headers as C++"
"$CC" -std=c99 -Wall -Wextra -pedantic -Werror ${CUTELUA_TEST_CFLAGS:-} -Iinclude -isystem "$CUDA/include" tests/aot/dyn.c "$LIB" -ldl \
  -L"$CUDA/lib64/stubs" -lcuda ${CUTELUA_TEST_LDFLAGS:-} -o "$OUT/dyn" || fail "building the dynamic loader"
# nothing but libcuda and libc (the library's own NEEDED entries)
for f in mod_a.so; do
  needed=$(readelf -d "$OUT/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' | tr '\n' ' ')
  for lib in $needed; do
    case $lib in libcuda.so*|libc.so*) ;; *) fail "$f depends on $lib (needs: $needed)" ;; esac
  done
done

# the driver if this machine has one, else the toolkit's stub (its calls fail, after the checks)
DRV=$("$B" -e 'local l = require("cute").libraries().cuda; io.write(l.ok and l.path or "")')
if [ -n "$DRV" ]; then
  GPU=$("$B" -e 'io.write(require("cute").gpu_available() and "1" or "")')
  LIBDIR=$(dirname "$DRV")
else
  GPU=""
  LIBDIR="$OUT/stub"
  mkdir -p "$LIBDIR"
  ln -sf "$CUDA/lib64/stubs/libcuda.so" "$LIBDIR/libcuda.so.1"
fi
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

"$OUT/both" > "$OUT/both.log" 2>&1 || { cat "$OUT/both.log"; fail "checksums"; }
grep -q "checks ok" "$OUT/both.log" || fail "checksums"
grep -q "prefix ma" "$OUT/both.log" || fail "metadata"
grep -q "archs sm_80 sm_90a" "$OUT/both.log" || fail "metadata archs"

# an altered byte of metadata is rejected (by the file's seal, before dlopen)
sed 's/prefix ma/prefix mz/' "$OUT/mod_a.so" > "$OUT/altered.so"
cmp -s "$OUT/mod_a.so" "$OUT/altered.so" && fail "could not alter the copy"
"$OUT/dyn" "$OUT/altered.so" > "$OUT/altered.log" 2>&1 && fail "an altered module was accepted"
grep -q "altered.so was altered after export" "$OUT/altered.log" || { cat "$OUT/altered.log"; fail "message"; }
# the original passes the check (then loads with a GPU, or fails at the stub driver)
"$OUT/dyn" "$OUT/mod_a.so" > "$OUT/dyn.log" 2>&1 || true
grep -q "altered" "$OUT/dyn.log" && fail "the original module failed its check"

if [ -n "$GPU" ]; then
  "$OUT/both" run > "$OUT/both_run.log" 2>&1 || { cat "$OUT/both_run.log"; fail "running the static modules"; }
  grep -q "run: 0 wrong" "$OUT/both_run.log" || fail "static results"
  "$OUT/dyn" "$OUT/mod_a.so" run > "$OUT/dyn_run.log" 2>&1 || { cat "$OUT/dyn_run.log"; fail "running the dynamic module"; }
  grep -q "run: 0 wrong" "$OUT/dyn_run.log" || fail "dynamic results"
  echo "aot: exported kernels ran from C (static and dynamic) and gave the CPU's results"
else
  echo "aot: exported, linked, checked (no GPU: nothing run)"
fi
