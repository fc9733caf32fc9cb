#!/bin/sh
# The REPL with stdin not a terminal: statements read one by one, no prompts,
# expressions print their values, errors are reported and the session goes on.
set -u
B=${1:?usage: piped.sh CUTELUA}
pass=0
fail=0
check() { # check NAME EXPECTED_RC PATTERN INPUT
  out=$(printf '%s' "$4" | CUTELUA_HISTORY= "$B" 2>&1)
  rc=$?
  if [ "$rc" != "$2" ]; then fail=$((fail + 1)); echo "FAIL $1: exit $rc: $out" >&2; return; fi
  if ! printf '%s\n' "$out" | grep -Eq -- "$3"; then fail=$((fail + 1)); echo "FAIL $1: no /$3/ in: $out" >&2; return; fi
  pass=$((pass + 1))
}
nl='
'
check "expression value" 0 '^3$' "1 + 2$nl"
check "multiple values" 0 '^1	two$' "1, 'two'$nl"
check "=expr" 0 '^5$' "= 2 + 3$nl"
check "statement then value" 0 '^42$' "x = 42${nl}x$nl"
check "multi-line for" 0 '^10$' "for i = 1, 2 do${nl}print(i * 10)${nl}end$nl"
check "table pretty-print" 0 '^\{1, 2, a = \{b = 3\}\}$' "{1, 2, a = {b = 3}}$nl"
check "no prompt echo" 0 '^7$' "7$nl"
check "error then continue" 1 'after' "error('oops')${nl}print('after')$nl"
check "error names the line" 1 'stdin:1: oops' "error('oops')$nl"
check "syntax error continues" 1 'next' "x = = 1${nl}print('next')$nl"
check "cute is a global" 0 '^table$' "type(cute)$nl"
check "?x shows the doc" 0 'make_layout\(shape\[, stride\]\): stride a congruent tuple' "?cute.make_layout$nl"
check "help(x) too" 0 'composition\(A, B\): the layout R' "help(cute.composition)$nl"
check "_ is the last result" 0 '^14$' "3 + 4${nl}_ * 2$nl"
check "a module prints as a summary" 0 '^<module cute: [0-9]+ names; help\(cute\) lists them>$' "cute$nl"
check "a plain-Lua kernel" 0 '^true$' "k = cute.kernel(function(a, n) if n > 3 then a[0] = 1 end end)${nl}print(1)${nl}print((k:compile(cute.fake_tensor(cute.f32, 4), cute.i32(2)):ir():find('icmp.sgt', 1, true)) ~= nil)$nl"
check "unfinished input" 1 'unexpected end of input' "for i = 1, 2 do$nl"
out=$(printf 'print(1)\n' | CUTELUA_HISTORY= "$B" 2>&1)
if printf '%s' "$out" | grep -q '^>'; then fail=$((fail + 1)); echo "FAIL prompts printed: $out" >&2; else pass=$((pass + 1)); fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
