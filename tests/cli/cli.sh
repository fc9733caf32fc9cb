#!/bin/sh
# Shell tests of the cutelua command line: exit codes and messages.
#   sh tests/cli/cli.sh path/to/cutelua
set -u
B=${1:?usage: cli.sh CUTELUA}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect NAME CODE PATTERN CMD...: exit status CODE and PATTERN (grep -E) in stdout+stderr
expect() {
  name=$1 code=$2 pat=$3
  shift 3
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" != "$code" ]; then bad "$name: exit $rc, expected $code; output: $out"; return; fi
  if [ -n "$pat" ] && ! printf '%s\n' "$out" | grep -Eq -- "$pat"; then
    bad "$name: output lacks /$pat/: $out"; return
  fi
  ok
}

printf 'print(select("#", ...), table.concat({...}, "|"), arg[0], arg[1], arg[-1] ~= nil)\n' > "$T/args.lua"
printf 'x = \n' > "$T/syntax.lua"
printf 'local function f()\n  error("boom")\nend\nf()\n' > "$T/runtime.lua"
printf 'return 1\n' > "$T/mod_x.lua"

expect "version" 0 '^cutelua [0-9]+\.[0-9]+\.[0-9]+ \(LuaJIT' "$B" -v
expect "help" 0 'usage: .*cutelua' "$B" --help
expect "-e" 0 '^3$' "$B" -e 'print(1 + 2)'
expect "script args" 0 "2	a\\|b c	$T/args.lua	a	true" "$B" "$T/args.lua" a "b c"
expect "-l" 0 '^1$' env LUA_PATH="$T/?.lua;;" "$B" -l mod_x -e 'print(mod_x)'
expect "LUA_PATH defaults kept" 0 'share/lua/5\.1' env LUA_PATH="$T/?.lua;;" "$B" -e 'print(package.path)'
expect "require cute" 0 '^ok$' "$B" -e 'assert(require("cute").version()); print("ok")'
# a plain-Lua kernel in -e: the preprocessor reads the chunk's text (kept from C)
expect "-e kernel preprocessed" 0 '^true$' "$B" -e 'local cute = require "cute"
local k = cute.kernel(function(a, n) if n > 3 then a[0] = 1 end end)
print((k:compile(cute.fake_tensor(cute.f32, 4), cute.i32(2)):ir():find("icmp.sgt", 1, true)) ~= nil)'
expect "stdin script" 0 '^from stdin$' sh -c "echo 'print(\"from stdin\")' | '$B' -"
# a plain-Lua kernel in a script read from stdin: its text is kept as for -e
printf '%s\n' 'local cute = require "cute"' 'local k = cute.kernel(function(a, n) if n > 3 then a[0] = 1 end end)' \
  'print((k:compile(cute.fake_tensor(cute.f32, 4), cute.i32(2)):ir():find("icmp.sgt", 1, true)) ~= nil)' > "$T/kern.lua"
expect "stdin kernel preprocessed" 0 '^true$' sh -c "'$B' - < '$T/kern.lua'"
expect "-e then -i piped" 0 '^7$' sh -c "echo 'x + 1' | '$B' -e 'x = 6' -i"

# errors: one clear message naming the file (and the line for Lua errors)
expect "missing script" 1 "cannot open $T/nope.lua" "$B" "$T/nope.lua"
expect "syntax error" 1 "syntax.lua:2: unexpected symbol near '<eof>'" "$B" "$T/syntax.lua"
expect "runtime error" 1 "runtime.lua:2: boom" "$B" "$T/runtime.lua"
expect "runtime traceback" 1 "runtime.lua:4: in main chunk" "$B" "$T/runtime.lua"
# rendered after rustc: the line with a caret, cutelua's frames left out unless asked for
expect "error caret" 1 "^2 \|   error\(\"boom\"\)$" "$B" "$T/runtime.lua"
expect "error column" 1 "^ --> $T/runtime.lua:2:3$" "$B" "$T/runtime.lua"
printf 'local cute = require "cute"\nlocal k = cute.kernel("k", function(x)\n  x[0] = cute.thread_id().x\nend)\nk:compile(cute.fake_tensor(cute.f32, 4))\n' > "$T/misspelt.lua"
expect "misspelt cute name" 1 "= help: cute.thread_id does not exist \(did you mean 'cute.thread_idx'\?\)" "$B" "$T/misspelt.lua"
out=$("$B" "$T/misspelt.lua" 2>&1)
case "$out" in *lua/cute/*) bad "cutelua frames shown: $out" ;; *"frames of cutelua left out"*) ok ;; *) bad "no note of frames left out: $out" ;; esac
expect "CUTELUA_TRACEBACK=full" 1 "lua/cute/kernel.lua:[0-9]+: in function" env CUTELUA_TRACEBACK=full "$B" "$T/misspelt.lua"
expect "bad flag" 2 "unrecognized option '-Q'" "$B" -Q
expect "missing -e argument" 2 "option '-e' needs an argument" "$B" -e
expect "missing module" 1 "module 'no.such.mod' not found" "$B" -l no.such.mod
expect "unreadable source dir" 1 \
  "cannot set up the Lua state: .*cannot read /nonexistent-checkout/src/host/host.cdef \(CUTELUA_SOURCE_DIR\)" \
  env CUTELUA_SOURCE_DIR=/nonexistent-checkout "$B" -e 'print(1)'

# a missing CUDA library is named, with where it was looked for
out=$("$B" -e 'local l = require("cute").libraries().cuda; print(l.ok and ("found " .. l.path) or l.error)' 2>&1)
case "$out" in
  found*) ok ;;
  *libcuda.so.1*tried*) ok ;;
  *) bad "libcuda message: $out" ;;
esac

# busted inside cutelua: a failing spec exits 1 without junk from the nil error
mkdir -p "$T/spec"
printf 'describe("x", function() it("fails", function() assert.equal(1, 2) end) end)\n' > "$T/spec/fail_spec.lua"
printf 'describe("x", function() it("passes", function() assert.truthy(require("cute")) end) end)\n' > "$T/spec/pass_spec.lua"
if [ -f /usr/share/lua/5.1/busted/runner.lua ]; then
  expect "busted pass" 0 '1 success' "$B" --busted -o plainTerminal "$T/spec/pass_spec.lua"
  expect "busted fail" 1 '1 failure' "$B" --busted -o plainTerminal "$T/spec/fail_spec.lua"
  out=$("$B" --busted -o plainTerminal "$T/spec/fail_spec.lua" 2>&1)
  if printf '%s' "$out" | grep -q "error object is nil\|cutelua: nil"; then bad "busted nil error printed: $out"; else ok; fi
  if [ -x /usr/bin/busted ]; then
    expect "cutelua /usr/bin/busted" 1 '1 failure' "$B" /usr/bin/busted -o plainTerminal "$T/spec/fail_spec.lua"
  fi
else
  echo "note: busted not installed; busted checks skipped" >&2
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
