--- IR build and emit times (CPU only; not a test): a small kernel (saxpy) and
-- a fully unrolled warp tile (512 mma.sync m16n8k16 + 128 ldmatrix.x4 + the
-- address arithmetic), built in C (src/ir/ir_sample.c), built op by op from Lua
-- through cute.ir (what the tracer pays per op), verified, printed and emitted
-- as NVVM IR. Medians of repeated runs, in milliseconds.
--
--   build/cutelua bench/ir_build.lua [reps]
local ffi = require "ffi"
local ir = require "cute.ir"
local host = require("cute._c").host
local C = require("cute._c").ir

local REPS = tonumber(arg and arg[1]) or 21

local function ms(t0) return tonumber(host.now_ns() - t0) / 1e6 end

local function median(xs)
  table.sort(xs)
  return xs[math.floor(#xs / 2) + 1]
end

local function measure(name, fn)
  local times = {}
  for _ = 1, REPS do times[#times + 1] = fn() end
  local keys = {}
  for k in pairs(times[1]) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local xs = {}
    for _, t in ipairs(times) do xs[#xs + 1] = t[k] end
    parts[#parts + 1] = string.format("%s %.3f", k, median(xs))
  end
  print(string.format("%-34s %s", name, table.concat(parts, "  ")))
end

-- The unrolled tile through the Lua binding, as a tracer would drive it.
local function lua_tile(m, n_mma, n_ldm)
  local k = m:kernel("tile_lua", { maxntid = 32 })
  local out = k:param("ptr<f32, global, 16>")
  local s = k:op("smem", "ptr<i8, shared, 128>", { 64 * 1024 - 1024, 128 })
  local lane = k:op("sreg", nil, { "laneid" })
  local lane16 = k:op("mul", nil, lane, k:const("i32", 16))
  local frag = {}
  for i = 0, n_ldm - 1 do
    local o = k:op("add", nil, lane16, k:const("i32", i * 512 % 63488))
    frag[i] = k:op("ldmatrix", nil, k:op("gep", "ptr<i8, shared, 16>", s, o), { 4 })
  end
  local z = k:const("f32", 0)
  local acc = {}
  for j = 0, 15 do acc[j] = k:op("pack", "{4 x f32}", z, z, z, z) end
  local imms = { "m16n8k16", "f16", "f16", "f32", "f32" }
  for j = 0, n_mma - 1 do
    local bsrc = frag[(j + 1) % n_ldm]
    local h = math.floor(j / n_ldm) % 2 * 2
    local b = k:op("pack", "{2 x i32}", k:op("extract", nil, bsrc, { h }), k:op("extract", nil, bsrc, { h + 1 }))
    acc[j % 16] = k:op("mma", nil, frag[j % n_ldm], b, acc[j % 16], imms)
  end
  local base = k:op("mul", nil, lane, k:const("i32", 64))
  for q = 0, 15 do
    local v = {}
    for e = 0, 3 do v[e + 1] = k:op("extract", nil, acc[q], { e }) end
    local p = k:op("gep", "ptr<f32, global, 16>", out, k:op("add", nil, base, k:const("i32", q * 4)))
    k:op("store", nil, p, k:op("pack", "<4 x f32>", unpack(v)))
  end
  return k
end

print(string.format("cute.ir build/emit, median of %d runs, ms (cutelua %s)", REPS,
  ffi.string(host.version())))
measure("saxpy (C builder)", function()
  local t0 = host.now_ns()
  local m = ir.module()
  m:sample("saxpy")
  local t = { build = ms(t0) }
  t0 = host.now_ns()
  m:emit_nvvm()
  t.emit = ms(t0)
  m:free()
  return t
end)
measure("512 mma + 128 ldmatrix (C builder)", function()
  local t0 = host.now_ns()
  local m = ir.module()
  m:sample("mma", 512, 128)
  local t = { a_build = ms(t0) }
  t0 = host.now_ns()
  C.verify(m.handle)
  t.b_verify = ms(t0)
  t0 = host.now_ns()
  m:print()
  t.c_print = ms(t0)
  t0 = host.now_ns()
  local ll = m:emit_nvvm()
  t.d_emit = ms(t0)
  t.e_kbytes = #ll / 1024
  m:free()
  return t
end)
measure("512 mma + 128 ldmatrix (Lua k:op)", function()
  local t0 = host.now_ns()
  local m = ir.module()
  local k = lua_tile(m, 512, 128)
  local t = { a_build = ms(t0), ops = C.inst_count(k.handle) }
  t0 = host.now_ns()
  m:emit_nvvm()
  t.d_emit = ms(t0)
  m:free()
  return t
end)
