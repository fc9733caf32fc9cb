--- Trace and compile times of the tensor-core GEMM kernel (cute.lib.gemm), not
-- a test: the tracer's share of a compile, and the compile from the disk
-- cache in a new process.
--   cutelua bench/trace_gemm.lua [repeats]
-- For the 128x128x32 (4 stages, 2x2 warps) and 128x256x64 (3 stages, 2x4 warps)
-- configurations, bf16 with A K-major and B N-major, compiled for sm_90a:
--
-- 1. with the compile cache off: the time to trace the Lua body into the IR,
--    and the rest of the compile (printing the IR, emitting NVVM IR, libnvvm,
--    ptxas), medians of the repeats (each a fresh kernel object: a full trace);
-- 2. cold in a new `cutelua` process (cache off): the compile call as the
--    child times it (G.kernel(cfg) and the specialisation: from Lua to the
--    cubin, loading libnvvm and nvJitLink included), and the whole process;
-- 3. from a warm disk cache (a scratch directory) in a new `cutelua` process:
--    the compile call as the child times it (G.kernel(cfg) and the
--    specialisation for the arguments: from Lua to the cubin), and the whole
--    child process, start to exit; keyed before tracing (the kernel's
--    trace_key, the default) and, for comparison, keyed by the traced IR
--    (trace_key = false: traced first).
local cute = require "cute"
local G = require "cute.lib.gemm"
local host = require("cute._c").host
local repeats = tonumber(arg and arg[1]) or 5

local function fake(r, c, stride)
  return cute.fake_tensor(cute.bf16, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride))
end
local A, B, C = fake(4096, 4096, { 4096, 1, 0 }), fake(4096, 4096, { 1, 4096, 0 }), fake(4096, 4096, { 4096, 1, 0 })

local function median(t)
  table.sort(t)
  return t[math.ceil(#t / 2)]
end

local function min(t)
  local m = math.huge
  for _, v in ipairs(t) do m = math.min(m, v) end
  return m
end

local CONFIGS = { { 128, 128, 32, 4, 2, 2 }, { 128, 256, 64, 3, 2, 4 } }
local function config_of(c)
  return { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
    group = 8, even = true, beta = false, bm = c[1], bn = c[2], bk = c[3], stages = c[4], wm = c[5], wn = c[6] }
end
local function label(c) return string.format("%dx%dx%d, %d stages, %dx%d warps", c[1], c[2], c[3], c[4], c[5], c[6]) end

print("| configuration | trace (ms) | rest of the compile (ms) | IR ops |")
print("|---|---|---|---|")
for _, c in ipairs(CONFIGS) do
  local tr, co, nops = {}, {}, 0
  for i = 1, repeats do
    local cfg = config_of(c)
    cfg.ldmatrix = i -- a distinct key: a fresh kernel, traced again
    local k = G.kernel(cfg):with { arch = "sm_90a", cache = false }
    local spec = k:_specialise(5, A, B, C, cute.f32(1), cute.f32(0))
    tr[#tr + 1], co[#co + 1] = spec.trace_ms, spec.compile_ms
    local ir = spec.compiled:ir()
    local _, n = ir:gsub("\n", "")
    nops = n
  end
  print(string.format("| %s | %.1f | %.0f | %d |", label(c), median(tr), median(co), nops))
end

-- From the disk cache in a new process: the child times its own compile.
local dir = io.popen("mktemp -d /tmp/cutelua-bench-XXXXXX"):read("*l")
local script = dir .. "/child.lua"
local f = assert(io.open(script, "w"))
f:write([[
local host = require("cute._c").host
local cute = require "cute"
local G = require "cute.lib.gemm"
local c, mode = { tonumber(arg[1]), tonumber(arg[2]), tonumber(arg[3]), tonumber(arg[4]), tonumber(arg[5]),
  tonumber(arg[6]) }, arg[7]
local function fake(r, k, stride)
  return cute.fake_tensor(cute.bf16, { r, k, 1 }, cute.make_layout({ r, k, 1 }, stride))
end
local A, B, C = fake(4096, 4096, { 4096, 1, 0 }), fake(4096, 4096, { 1, 4096, 0 }), fake(4096, 4096, { 4096, 1, 0 })
local cfg = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
  group = 8, even = true, beta = false, bm = c[1], bn = c[2], bk = c[3], stages = c[4], wm = c[5], wn = c[6] }
local alpha, beta = cute.f32(1), cute.f32(0)
local t0 = host.now_ns()
local k = G.kernel(cfg)
if mode == "ir" then k = k:with { trace_key = false } end
local spec = k:_specialise(5, A, B, C, alpha, beta)
local t1 = host.now_ns()
io.write(string.format("%.3f %s %s\n", tonumber(t1 - t0) / 1e6, spec.compiled.origin, tostring(spec.pretraced)))
]])
f:close()

local function now() return tonumber(host.now_ns()) / 1e6 end
local function child(c, mode)
  local cmd = string.format("env -u CUTELUA_CACHE -u CUTELUA_KEEP -u CUTELUA_SOURCE_DIR CUTELUA_ARCH=sm_90a %s"
    .. "CUTELUA_CACHE_DIR='%s' '%s' '%s' %d %d %d %d %d %d %s 2>&1", mode == "cold" and "CUTELUA_CACHE=0 " or "", dir,
    arg[-1], script, c[1], c[2], c[3], c[4], c[5], c[6], mode)
  local p0 = now()
  local out = io.popen(cmd):read("*a")
  local wall = now() - p0
  local ms, origin, pretraced = out:match("^([%d.]+) (%a+) (%a+)\n$")
  if not ms then error("child failed: " .. out) end
  return tonumber(ms), wall, origin, pretraced
end

print()
print(string.format("| cold, in a new process (sm_90a, cache off, %d repeats) | compile call, median ms | min ms | "
  .. "whole process, median ms | min ms |", repeats))
print("|---|---:|---:|---:|---:|")
for _, c in ipairs(CONFIGS) do
  local xs, procs = {}, {}
  for _ = 1, repeats do
    local ms, wall, origin = child(c, "cold")
    assert(origin == "compiled", "expected a compile, got " .. origin)
    xs[#xs + 1], procs[#procs + 1] = ms, wall
  end
  print(string.format("| %s | %.1f | %.1f | %.1f | %.1f |", label(c), median(xs), min(xs), median(procs), min(procs)))
end

print()
print(string.format("| from the disk cache, in a new process (sm_90a, %d repeats) | compile call, median ms | min ms | "
  .. "whole process, median ms | min ms |", repeats))
print("|---|---:|---:|---:|---:|")
for _, c in ipairs(CONFIGS) do
  for _, mode in ipairs { "pretrace", "ir" } do
    child(c, mode) -- fills the cache (a cold compile)
    local xs, procs = {}, {}
    for _ = 1, repeats do
      local ms, wall, origin, pretraced = child(c, mode)
      assert(origin == "disk", "expected a disk-cache hit, got " .. origin)
      assert(pretraced == (mode == "pretrace" and "true" or "false"), "pretraced: " .. pretraced)
      xs[#xs + 1], procs[#procs + 1] = ms, wall
    end
    local what = mode == "pretrace" and "keyed before tracing (trace_key)" or "keyed by the traced IR (traced first)"
    print(string.format("| %s: %s | %.2f | %.2f | %.2f | %.2f |", label(c), what, median(xs), min(xs), median(procs),
      min(procs)))
  end
end
os.execute("rm -rf '" .. dir .. "'")
