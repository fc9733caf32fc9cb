-- Where a cold compile of one cute.gemm Hopper kernel variant goes (not a
-- test; no GPU): the plan, the trace (Lua -> IR), then the same traced module
-- taken through the compiler's steps one by one: printing the IR (the cache
-- key's material), its SHA-256 key, the NVVM emitter, libnvvm (NVVM IR -> PTX)
-- and ptxas (the executable, whole-program, for setmaxnreg), with ptxas's own
-- "Compile time". Each repeat compiles a kernel no cache has seen (a per-run
-- constant in the epilogue); the first also loads libnvvm. Medians at the end.
--   cutelua bench/gemm_sm90_phases.lua [dtype [repeats]]     e.g. bf16 (default), e4m3
local cute = require "cute"
local ffi = require "ffi"
local G = require "cute.lib.gemm"
local nv = require("cute._c").nvvm
local host = require("cute._c").host

local dt = cute[arg and arg[1] or "bf16"]
local repeats = tonumber(arg and arg[2]) or 5
local function now() return tonumber(host.now_ns()) / 1e6 end
local A = cute.fake_tensor(dt, { 4096, 4096 }, "row")
local B = cute.fake_tensor(dt, { 4096, 4096 }, "col")
local C = cute.fake_tensor(cute.bf16, { 4096, 4096 }, "row")
local len = ffi.new("size_t[1]")
local function part(r, name) return nv.part(r, nv.part_find(name), len), tonumber(len[0]) end
local keys = { "plan", "trace", "compile", "print_ir", "key", "emit", "libnvvm", "ptxas", "ptxas_self" }
local runs = {}
local salt0 = os.time() % 100000 + math.random()
for i = 1, repeats do
  local T = {}
  local salt = salt0 + i
  local t = now()
  local p = G.plan(A, B, C, { arch = "sm_90a", epilogue = function(v) return v * salt end })
  T.plan = now() - t
  local k = p.kernel:with({ cache = false })
  t = now()
  local h = k:compile(unpack(p.args)) -- trace + the one-call compile (compile_module)
  T.compile = now() - t
  for _, s in pairs(k.specs) do T.trace = s.trace_ms end
  T.compile = T.compile - T.trace
  local m, o = h._irmod, h.options.c
  local r = ffi.gc(nv.result_new(), nv.result_free)
  t = now(); nv.module_print(r, m); T.print_ir = now() - t
  local ir, irlen = part(r, "ir")
  t = now(); nv.cache_key(r, ir, irlen, "bench", o); T.key = now() - t
  t = now(); assert(nv.module_emit(r, m, o, "bench") == 0); T.emit = now() - t
  local ll, lllen = part(r, "ll")
  t = now(); assert(nv.nvvm_to_ptx(r, ll, lllen, o) == 0); T.libnvvm = now() - t
  local ptx, ptxlen = part(r, "ptx")
  t = now(); assert(nv.ptx_to_cubin(r, ptx, ptxlen, o) == 0); T.ptxas = now() - t
  T.ptxas_self = h:resources()[1].compile_ms
  local line = {}
  for _, key in ipairs(keys) do line[#line + 1] = string.format("%s %.1f", key, T[key]) end
  print(string.format("%s #%d: %s (IR %d KB, NVVM IR %d KB, PTX %d KB)", p.kernel.name, i, table.concat(line, ", "),
    irlen / 1024, lllen / 1024, ptxlen / 1024))
  runs[i] = T
end
local med = {}
for _, key in ipairs(keys) do
  local v = {}
  for i = 1, #runs do v[i] = runs[i][key] end
  table.sort(v)
  med[#med + 1] = string.format("%s %.1f", key, v[math.floor((#v + 1) / 2)])
end
print("median (ms): " .. table.concat(med, ", "))
print("(compile: the one-call compile after the trace: print, key, emit, libnvvm, ptxas; the other columns repeat "
  .. "its steps on the same module)")
