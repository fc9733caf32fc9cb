-- The emitter's SSA form for local variables (src/ir/ir_emit_promote.c) on
-- random structured programs: nested for, if/else and while loops with break,
-- continue and early returns, storing to and loading from an unpacked i32
-- variable, a packed i16 one (words read-modified-written), an f32 one moved
-- as vectors, and optimisation barriers. Each program must verify, emit NVVM
-- IR without a single alloca (every index is static), and pass libnvvm (whose
-- verifier checks every phi against its block's predecessors and every use
-- against dominance) and ptxas. The seeds are fixed so that a failure can be
-- reproduced; CUTELUA_FUZZ_SEED=n adds program n, CUTELUA_FUZZ_LONG=1 runs 25
-- times as many.
local ir = require "cute.ir"
local compiler = require "cute.compiler"

-- A small linear congruential generator: the same programs on every machine.
local function rng(seed)
  local s = seed % 2147483647
  if s <= 0 then s = s + 2147483646 end
  return function(lo, hi)
    s = (s * 48271) % 2147483647
    return lo + s % (hi - lo + 1)
  end
end

local function program(seed)
  local r = rng(seed)
  local m = ir.module { sm = 80 }
  m:set_loc("promote_spec.lua", seed, "fuzz")
  local k = m:kernel("fuzz" .. seed, { maxntid = 32 })
  local out = k:param("ptr<i32, global, 4>")
  local n = k:param("i32")
  local vi, vh, vf = k:var("i32", 3), k:var("i16", 4), k:var("f32", 4)
  for i = 0, 2 do k:var_store(vi, i, k:const("i32", i)) end
  for i = 0, 3 do k:var_store(vh, i, k:const("i16", i)) end
  for i = 0, 3 do k:var_store(vf, i, k:const("f32", i)) end
  local ivs = { n } -- i32 values usable here: n and the counters of the loops around
  local function operand()
    local c = r(1, 3)
    if c == 1 then return ivs[r(1, #ivs)] end
    if c == 2 then return k:const("i32", r(0, 9)) end
    return k:var_load(vi, r(0, 2))
  end
  local block
  -- one statement; true when it ended its region (break, continue, return)
  local function statement(depth, in_loop)
    local c = r(1, depth < 4 and 13 or 8)
    if c <= 2 then
      local i = r(0, 2)
      k:var_store(vi, i, k:op("add", nil, k:var_load(vi, i), operand()))
    elseif c == 3 then
      k:var_store(vh, r(0, 3), k:op("cvt", "i16", operand()))
    elseif c == 4 then
      local i = r(0, 3)
      k:var_store(vf, i, k:op("add", nil, k:var_load(vf, i), k:op("cvt", "f32", operand())))
    elseif c == 5 then -- vectors: two f32 out and back, two i16 (one word) into the counters
      local first = 2 * r(0, 1)
      local v = k:var_loadv(vf, first, 2)
      k:var_storev(vf, 2 - first, v)
      local w = k:op("bitcast", "i32", k:var_loadv(vh, 2 * r(0, 1), 2))
      k:var_store(vi, r(0, 2), w)
    elseif c == 6 then
      k:var_opaque(r(0, 1) == 0 and vh or vi)
    elseif c == 7 or c == 8 then -- a terminator, or a plain store where none fits
      local t = r(1, 6)
      if in_loop and t <= 2 then
        k:break_()
        return true
      elseif in_loop and t <= 4 then
        k:continue_()
        return true
      elseif t == 5 and depth > 0 then
        k:ret()
        return true
      end
      k:var_store(vi, 0, operand())
    elseif c <= 10 then
      local iv = k:for_(k:const("i32", 0), operand(), k:const("i32", 1), r(0, 1))
      ivs[#ivs + 1] = iv
      block(depth + 1, true)
      ivs[#ivs] = nil
      k:end_()
    elseif c <= 12 then
      k:if_(k:op("icmp", nil, operand(), operand(), { "slt" }))
      block(depth + 1, in_loop)
      if r(0, 1) == 1 then
        k:else_()
        block(depth + 1, in_loop)
      end
      k:end_()
    else
      k:while_()
      k:cond(k:op("icmp", nil, k:var_load(vi, r(0, 2)), k:const("i32", 100), { "slt" }))
      block(depth + 1, true)
      k:end_()
    end
    return false
  end
  function block(depth, in_loop)
    for _ = 1, r(1, 4) do
      if statement(depth, in_loop) then return end
    end
  end
  block(0, false)
  -- everything stays live: each element to out
  local at = 0
  local function sink(v)
    k:op("store", nil, k:op("gep", nil, out, k:const("i32", at)), v)
    at = at + 1
  end
  for i = 0, 2 do sink(k:var_load(vi, i)) end
  for i = 0, 3 do sink(k:op("cvt", "i32", k:var_load(vh, i))) end
  for i = 0, 3 do sink(k:op("bitcast", "i32", k:var_load(vf, i))) end
  return m
end

describe("local variables in SSA form", function()
  local seeds = {}
  for s = 1, os.getenv("CUTELUA_FUZZ_LONG") == "1" and 1000 or 40 do seeds[#seeds + 1] = s * 7919 end
  if os.getenv("CUTELUA_FUZZ_SEED") then seeds[#seeds + 1] = tonumber(os.getenv("CUTELUA_FUZZ_SEED")) end
  local opts = compiler.options { arch = "sm_80", cache = false }
  it("emit phis that libnvvm and ptxas accept, for random structured programs", function()
    local phis = 0
    for _, seed in ipairs(seeds) do
      local m = program(seed)
      m:verify()
      local ll = m:emit_nvvm {}
      assert(not ll:find("alloca", 1, true), "seed " .. seed .. ": an alloca is left")
      local _, np = ll:gsub(" = phi ", "")
      phis = phis + np
      local ok, e = pcall(function()
        local ptx = compiler.nvvm_to_ptx(ll, opts)
        compiler.ptx_to_cubin(ptx, opts)
      end)
      assert(ok, "seed " .. seed .. ": " .. tostring(e) .. "\n" .. ll)
      m:free()
    end
    -- the programs exercise joins: far more phis than the loops' counters alone
    assert.is_true(phis > 4 * #seeds, "only " .. phis .. " phis")
  end)
end)
