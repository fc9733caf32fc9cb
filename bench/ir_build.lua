--- IR build and emit times (CPU only; not a test): a small kernel (saxpy) and
-- a fully unrolled warp tile (512 mma.sync m16n8k16 + 128 ldmatrix.x4 + the
-- address arithmetic), built op by op from Lua through cute.ir (what the
-- tracer pays per op; tests/spec/ir/samples.lua), verified, printed and
-- emitted as NVVM IR. Medians of repeated runs, in milliseconds.
--
--   build/cutelua bench/ir_build.lua [reps]
local ffi = require "ffi"
local ir = require "cute.ir"
local host = require("cute._c").host
local C = require("cute._c").ir
local samples = require "tests.spec.ir.samples"

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

print(string.format("cute.ir build/emit, median of %d runs, ms (cutelua %s)", REPS,
  ffi.string(host.version())))
measure("saxpy", function()
  local t0 = host.now_ns()
  local m = ir.module()
  samples.saxpy(m)
  local t = { build = ms(t0) }
  t0 = host.now_ns()
  m:emit_nvvm()
  t.emit = ms(t0)
  m:free()
  return t
end)
measure("512 mma + 128 ldmatrix", function()
  local t0 = host.now_ns()
  local m = ir.module()
  local k = samples.mma_tile(m, 512, 128)
  local t = { a_build = ms(t0), ops = C.inst_count(k.handle) }
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
