-- Random small kernels through the whole compile path: Lua source made from
-- a seed (element dtypes, arithmetic, math, comparisons and cute.where,
-- cute.if_ with else, cute.range loops with unroll options, break_ and
-- continue_, cute.while_, cute.var,
-- register fragments, static shared memory and barriers, tiles loaded and
-- stored as fragments, shuffles, atomics), traced, verified, emitted as NVVM
-- IR and compiled by libnvvm and nvJitLink to a cubin (the cache off) for
-- sm_80, sm_89 or sm_90a. Every kernel must compile or fail with an error at
-- a line of its source, never an internal error or a crash. One program in
-- six has a user error put in (a number its type cannot hold, a static index
-- out of bounds, an unknown name or option, a bad unroll, a Lua comparison
-- of a value, math on integers): it must fail at that very line. A failure
-- prints the seed and the source; CUTELUA_FUZZ_SEED=n runs program n alone,
-- CUTELUA_FUZZ_LONG=1 runs 25 times as many programs.
local cute = require "cute"

local LONG = os.getenv("CUTELUA_FUZZ_LONG") == "1"
local PROGRAMS = LONG and 1500 or 60

local function rng(seed)
  local s = seed % 2147483647
  if s <= 0 then s = s + 2147483646 end
  return function(lo, hi)
    s = (s * 48271) % 2147483647
    return lo + s % (hi - lo + 1)
  end
end

local ARCHS = { "sm_80", "sm_89", "sm_90a" }
local DTYPES = { "f32", "f32", "f16", "bf16", "f64", "i32", "i32", "u32", "i64", "u64", "i16", "u16", "i8", "u8",
  "e4m3" }
local INFO = {
  f32 = { kind = "float", bits = 32 }, f16 = { kind = "float", bits = 16 }, f64 = { kind = "float", bits = 64 },
  bf16 = { kind = "float", bits = 16, storage = true }, e4m3 = { kind = "float", bits = 8, storage = true },
  i32 = { kind = "int", bits = 32 }, u32 = { kind = "uint", bits = 32 }, i64 = { kind = "int", bits = 64 },
  u64 = { kind = "uint", bits = 64 }, i16 = { kind = "int", bits = 16 }, u16 = { kind = "uint", bits = 16 },
  i8 = { kind = "int", bits = 8 }, u8 = { kind = "uint", bits = 8 },
}
-- numbers that are out of range for each dtype (injected errors)
local BAD_NUMBER = { f32 = "1e39", f16 = "1e6", bf16 = "-1e39", f64 = "true", e4m3 = "1000", i32 = "2^40",
  u32 = "-1", i64 = "2^63", u64 = "-1", i16 = "40000", u16 = "65536", i8 = "300", u8 = "1.5" }

-- One program: its source, the line of the injected error (nil: none), and what it is.
local function program(seed)
  local r = rng(seed)
  local arch = ARCHS[r(1, #ARCHS)]
  local D
  repeat D = DTYPES[r(1, #DTYPES)] until D ~= "e4m3" or arch ~= "sm_80"
  local di = INFO[D]
  local C = di.storage and "f32" or D -- the type computed in
  local ci = INFO[C]
  local N = r(1, 2) == 1 and 64 or 128
  local static = r(1, 2) == 1
  local lines = {}
  local function line(indent, text) lines[#lines + 1] = string.rep("  ", indent) .. text end
  local vars, frags, smems, tiles = {}, {}, {}, {}
  local ivs = {} -- loop variables in scope
  local inject = r(1, 6) == 1 and r(1, 10) or nil
  local injected_line

  local function lit()
    if ci.kind == "float" then return ({ "1.5", "0.25", "-3", "2", "0.5", "7" })[r(1, 6)] end
    if ci.kind == "uint" then return tostring(r(0, 100)) end
    return tostring(r(-100, 100))
  end
  local function index()
    local c = r(1, 4)
    if c == 1 then return tostring(r(0, N - 1)) end
    if c == 2 and #ivs > 0 then return string.format("(%s %% %d)", ivs[r(1, #ivs)], N) end
    return string.format("((tid + %d) %% %d)", r(0, 50), N)
  end
  local function to_c(e, from) return from == C and e or string.format("%s:to(cute.%s)", e, C) end
  local function to_d(e)
    if C == D then return e end
    if not e:find("[%a%[]") then return string.format("cute.to(%s, cute.%s)", e, D) end -- a Lua number
    return string.format("(%s):to(cute.%s)", e, D)
  end
  -- expr(depth, value) gives the text of an expression of type C; value:
  -- it must be a traced value (a method's receiver), not a Lua number.
  -- Operators get at least one value, so nothing is computed in Lua.
  local expr
  local function cond(depth)
    local c = r(1, 4)
    if c == 1 or depth <= 0 then return string.format("tid:lt(%d)", r(1, 64)) end
    if c == 2 then return string.format("cute.and_(%s, %s)", cond(depth - 1), cond(depth - 1)) end
    if c == 3 then return string.format("cute.not_(%s)", cond(depth - 1)) end
    return string.format("%s:%s(%s)", expr(depth - 1, true), ({ "lt", "le", "gt", "ge", "eq", "ne" })[r(1, 6)],
      expr(depth - 1))
  end
  local function leaf(value)
    local c = r(1, 7)
    if c == 1 and not value then return lit() end
    if c == 2 then return C == "i32" and "n" or string.format("n:to(cute.%s)", C) end
    if c == 3 and #vars > 0 then return vars[r(1, #vars)] .. ".value" end
    if c == 4 and #frags > 0 then return string.format("%s[%d]", frags[r(1, #frags)], r(0, 3)) end
    if c == 5 and #smems > 0 then return to_c(string.format("%s[%s]", smems[r(1, #smems)], index()), D) end
    if c == 6 and #tiles > 0 then return to_c(string.format("%s[%d]", tiles[r(1, #tiles)], r(0, 3)), D) end
    return to_c(string.format("x[%s]", index()), D)
  end
  expr = function(depth, value)
    if depth <= 0 or r(1, 3) == 1 then return leaf(value) end
    local c = r(1, 10)
    local a = expr(depth - 1, c > 5 or r(1, 2) == 1)
    local b = expr(depth - 1, not a:find("[%a%[]") and true or nil) -- a literal a: b a value
    if c <= 3 then return string.format("(%s %s %s)", a, ({ "+", "-", "*" })[c], b) end
    if c == 4 then return string.format("cute.where(%s, %s, %s)", cond(depth - 1), a, b) end
    if c == 5 then return string.format("cute.%s(%s, %s)", r(1, 2) == 1 and "min" or "max", a, b) end
    if ci.kind == "float" then
      if C ~= "f16" and c == 6 then return string.format("cute.sqrt(cute.abs(%s))", a) end
      if C ~= "f16" and c == 7 then return string.format("cute.exp(%s * 0.125)", a) end
      if C ~= "f16" and c == 8 then return string.format("cute.fma(%s, %s, %s)", a, b, lit()) end
      if c == 9 and C == "f32" then return string.format("cute.shuffle_xor(%s, %d)", a, 2 ^ r(0, 4)) end
      return string.format("(%s / %s)", a, r(1, 2) == 1 and "0.25" or "2")
    end
    if c == 6 then return string.format("(%s / %d)", a, r(1, 9)) end
    if c == 7 then return string.format("(%s %% %d)", a, r(1, 9)) end
    if c == 8 then return string.format("%s:%s(%s)", a, ({ "band", "bor", "bxor" })[r(1, 3)], b) end
    if c == 9 then return string.format("%s:%s(%d)", a, r(1, 2) == 1 and "shl" or "shr", r(0, ci.bits - 1)) end
    if ci.kind == "int" then return string.format("(-%s)", a) end
    return string.format("%s:bnot()", a)
  end

  local stmts
  local function stmt(indent, depth)
    local c = r(1, 13)
    if c <= 3 or depth <= 0 then
      line(indent, string.format("y[%s] = %s", index(), to_d(expr(2))))
    elseif c == 4 then
      line(indent, string.format("cute.if_(%s, function()", cond(1)))
      stmts(indent + 1, depth - 1, r(1, 3))
      if r(1, 2) == 1 then
        line(indent, "end, function()")
        stmts(indent + 1, depth - 1, r(1, 2))
      end
      line(indent, "end)")
    elseif c == 5 then
      local iv = "i" .. (#lines + 1)
      local lo, hi = r(0, 4), r(1, 2) == 1 and "n" or tostring(r(1, 12))
      local opts = ({ "", ", { unroll = 2 }", ", { unroll = true }", ", { unroll = false }", "" })[r(1, 5)]
      if opts == ", { unroll = true }" and hi == "n" then opts = "" end
      line(indent, string.format("for %s in cute.range(%d, %s%s) do", iv, lo, hi, opts))
      ivs[#ivs + 1] = iv
      stmts(indent + 1, depth - 1, r(1, 3))
      ivs[#ivs] = nil
      line(indent, "end")
    elseif c == 6 and #vars > 0 then
      local v = vars[r(1, #vars)]
      line(indent, string.format("%s.value = %s", v, expr(2)))
    elseif c == 7 and #frags > 0 then
      line(indent, string.format("%s[%d] = %s", frags[r(1, #frags)], r(0, 3), expr(2)))
    elseif c == 8 and #smems > 0 then
      local s = smems[r(1, #smems)]
      line(indent, string.format("%s[tid %% %d] = %s", s, N, to_d(expr(1))))
      line(indent, "cute.sync_threads()")
    elseif c == 9 and (D == "i32" or D == "u32" or D == "f32" or D == "f64" or D == "u64") then
      line(indent, string.format("cute.atomic_add(y:ptr_at(%s), %s)", index(), to_d(expr(1))))
    elseif c == 10 and static and #tiles > 0 then
      line(indent, string.format("cute.local_tile(y, { 4 }, { %d }):store(%s)", r(0, N / 4 - 1), tiles[r(1, #tiles)]))
    elseif c == 11 then
      line(indent, ({ "cute.sync_threads()", "cute.fence(\"cta\")", "cute.sync_warp()" })[r(1, 3)])
    elseif c == 12 and #ivs > 0 and r(1, 2) == 1 then
      line(indent, string.format("cute.if_(%s, function() cute.%s() end)", cond(1),
        r(1, 2) == 1 and "break_" or "continue_"))
    elseif c == 12 then
      local w = "w" .. (#lines + 1)
      line(indent, string.format("local %s = cute.var(cute.i32, 0)", w))
      line(indent, string.format("cute.while_(function() return %s.value:lt(%d) end, function()", w, r(1, 5)))
      line(indent + 1, string.format("%s.value = %s.value + 1", w, w))
      stmts(indent + 1, depth - 1, r(1, 2))
      line(indent, "end)")
    else
      line(indent, string.format("y[%s] = %s", index(), to_d(expr(3))))
    end
  end
  stmts = function(indent, depth, n)
    for _ = 1, n do
      if inject and not injected_line and r(1, 4) == 1 then
        local bad = ({
          string.format("y[%s] = %s", index(), BAD_NUMBER[D]),
          static and string.format("y[%d] = %s", N, lit() == "x" and "" or to_d(lit())) or "cute.fence(\"galaxy\")",
          "cute.fence(\"galaxy\")",
          "for j in cute.range(4, { unroll = 1.5 }) do y[j] = x[j] end",
          "cute.sync_warp(2^40)",
          "if x[0] < x[1] then y[0] = x[0] end",
          ci.kind ~= "float" and string.format("y[0] = cute.sqrt(%s)", expr(1)) or "cute.barrier(1, 64, \"arive\")",
          #smems > 0 and string.format("%s[%d] = x[0]", smems[1], N) or "cute.fence(\"cta\", \"seq\")",
          string.format("y[0] = cute.var(cute.%s, %s).value", D, BAD_NUMBER[D]),
          "for j in cute.range(4, { unrol = 2 }) do y[j] = x[j] end",
        })[inject]
        line(indent, bad)
        injected_line = #lines
      end
      stmt(indent, depth)
    end
  end

  line(0, "local cute = require \"cute\"")
  line(0, string.format("return cute.kernel(\"fuzz_%d\", function(x, y, n)", seed))
  line(1, "local tid = cute.thread_idx().x")
  for k = 1, r(0, 2) do
    vars[k] = "v" .. k
    line(1, string.format("local v%d = cute.var(cute.%s, %s)", k, C, lit()))
  end
  for k = 1, r(0, 2) do
    frags[k] = "f" .. k
    line(1, string.format("local f%d = cute.make_fragment(cute.make_layout(4), cute.%s)", k, C))
    line(1, string.format("f%d:fill(%s)", k, lit()))
  end
  for k = 1, r(0, 1) do
    smems[k] = "s" .. k
    line(1, string.format("local s%d = cute.make_smem_tensor(cute.%s, cute.make_layout(%d))", k, D, N))
  end
  if static then
    for k = 1, r(0, 2) do
      tiles[k] = "t" .. k
      line(1, string.format("local t%d = cute.local_tile(x, { 4 }, { %d }):load()", k, r(0, N / 4 - 1)))
    end
  end
  stmts(1, 3, r(2, 6))
  if inject and not injected_line then
    line(1, "cute.fence(\"galaxy\")")
    injected_line = #lines
  end
  -- plain tracing: the preprocessor would make the injected Lua comparisons run-time ones
  line(0, string.format("end, { arch = %q, cache = false, preprocess = false, max_threads = %d })", arch,
    ({ 64, 128, 256 })[r(1, 3)]))
  return table.concat(lines, "\n") .. "\n", injected_line, { arch = arch, D = D, N = N, static = static }
end

-- Compiles program seed; returns "ok", "located" (an error at a line of the
-- program), or nil and what is wrong.
local function run(seed)
  local src, bad_line, p = program(seed)
  local chunk_name = "fuzz_" .. seed .. ".lua"
  local chunk, why = loadstring(src, "@" .. chunk_name)
  if not chunk then return nil, "the generator made bad Lua: " .. why .. "\n" .. src end
  local ok, result = pcall(function()
    local k = chunk()
    local function t(dt)
      local f = cute.fake_tensor(cute[dt], p.N)
      return p.static and cute.static(f) or f
    end
    local m = k:compile(t(p.D), t(p.D), cute.i32(5))
    return #m:cubin()
  end)
  local function show()
    return string.format("program %d (%s, %s%s):\n%s", seed, p.arch, p.D, p.static and ", static" or "", src)
  end
  if ok then
    if bad_line then return nil, "compiled, but line " .. bad_line .. " has an error in " .. show() end
    if result <= 0 then return nil, "an empty cubin for " .. show() end
    return "ok"
  end
  local msg = tostring(result)
  -- (a Lua error inside cutelua is caught below: it is not located in the program)
  if msg:find("internal error", 1, true) or msg:find("does not verify", 1, true)
      or msg:find("the NVVM emitter failed", 1, true) then
    return nil, msg .. "\nfor " .. show()
  end
  local at = msg:match("^" .. chunk_name:gsub("%.", "%%.") .. ":(%d+): ")
  if not at then return nil, "an error not located in the program: " .. msg .. "\nfor " .. show() end
  if bad_line and tonumber(at) ~= bad_line then
    return nil, string.format("the error is at line %s, the injected one at %d: %s\nfor %s", at, bad_line, msg, show())
  end
  return bad_line and "injected" or "located", msg
end

describe("random kernels through the whole compile path", function()
  it("compile, or fail with an error at the line of the program that has it", function()
    local seeds = {}
    if os.getenv("CUTELUA_FUZZ_SEED") then
      seeds[1] = tonumber(os.getenv("CUTELUA_FUZZ_SEED"))
    else
      for i = 1, PROGRAMS do seeds[i] = i * 104729 end
    end
    local counts = { ok = 0, injected = 0, located = 0 }
    local failures, located = {}, {}
    for _, seed in ipairs(seeds) do
      local what, msg = run(seed)
      if what then
        counts[what] = counts[what] + 1
        if what == "located" then located[#located + 1] = string.format("program %d: %s", seed, msg) end
      else
        failures[#failures + 1] = string.format("program %d (rerun with CUTELUA_FUZZ_SEED=%d): %s", seed, seed, msg)
      end
    end
    assert(#failures == 0, #failures .. " of " .. #seeds .. " programs failed:\n" .. table.concat(failures, "\n\n",
      1, math.min(3, #failures)))
    if #seeds > 1 then
      -- programs without an injected error compile (the ones that do not have located user errors the
      -- generator did not mean, listed here)
      assert(counts.located <= counts.ok / 10, "too many programs fail:\n" .. table.concat(located, "\n"))
      assert.is_true(counts.ok >= #seeds * 0.7, "only " .. counts.ok .. " compiled")
      assert.is_true(counts.injected >= #seeds / 20, "only " .. counts.injected .. " injected errors")
    end
  end)
end)
