-- Compile time of one cute.gemm Hopper kernel variant (not a test): the trace
-- (Lua -> IR), the whole compile of a kernel no cache has seen (IR -> NVVM IR ->
-- PTX -> cubin, with setmaxnreg's whole-program ptxas), and a compile served by
-- the disk cache in a fresh process. Needs no GPU (sm_90a).
--   cutelua bench/gemm_sm90_compile.lua [dtype]        e.g. bf16 (default), e4m3
local cute = require "cute"
local G = require "cute.lib.gemm"
local host = require("cute._c").host

local dt = cute[arg and arg[1] or "bf16"]
local function now() return tonumber(host.now_ns()) / 1e6 end
-- a tile no earlier run compiled: the cold path (a per-run salt in the epilogue)
local salt = os.time() % 100000 + math.random()
local A = cute.fake_tensor(dt, { 4096, 4096 }, "row")
local B = cute.fake_tensor(dt, { 4096, 4096 }, "col")
local C = cute.fake_tensor(cute.bf16, { 4096, 4096 }, "row")
local fn = function(v) return v * salt end
local t0 = now()
local p = G.plan(A, B, C, { arch = "sm_90a", epilogue = fn })
local t1 = now()
local h = p.kernel:compile(unpack(p.args))
local t2 = now()
print(string.format("%s: plan %.1f ms, first compile (trace + NVVM + ptxas, no cache) %.1f ms", p.kernel.name,
  t1 - t0, t2 - t1))
local report = h:report()
print(report)
-- the disk cache: the same kernel (no user function: the default epilogue) compiled
-- once here, then in a new process
local p2 = G.plan(A, B, C, { arch = "sm_90a" })
p2.kernel:compile(unpack(p2.args))
local exe = arg[-1] or "cutelua"
local code = [[local cute = require "cute"; local G = require "cute.lib.gemm"; local host = require("cute._c").host
local function now() return tonumber(host.now_ns()) / 1e6 end
local dt = cute["]] .. dt.name .. [["]
local A = cute.fake_tensor(dt, { 4096, 4096 }, "row"); local B = cute.fake_tensor(dt, { 4096, 4096 }, "col")
local C = cute.fake_tensor(cute.bf16, { 4096, 4096 }, "row")
local t0 = now(); local p = G.plan(A, B, C, { arch = "sm_90a" }); local t1 = now()
p.kernel:compile(unpack(p.args)); local t2 = now()
print(string.format("new process, disk cache: plan %.1f ms, compile %.1f ms", t1 - t0, t2 - t1))]]
local path = os.tmpname()
local out = assert(io.open(path, "w"))
out:write(code)
out:close()
local f = io.popen(string.format("'%s' '%s'", exe, path))
io.write(f:read("*a"))
f:close()
os.remove(path)
