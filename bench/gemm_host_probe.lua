-- cute.gemm's host side on a cached call, a probe (not a timed test): the
-- time a repeated cute.gemm(A, B, C[, opts]) spends before its launch (the
-- plan cache's key and lookup, the tensors' validity checks), with the
-- cached plans' launches replaced by a no-op so that only the host's Lua is
-- timed; then, on a GPU, the wall time of N back-to-back real calls and a
-- synchronize. Three calls: no options, alpha, and a Hopper opts.config.
--   cutelua bench/gemm_host_probe.lua [MxNxK]         default 1x4096x4096 (a decode step)
--   CUTELUA_SIM_ARCH=sm_90a cutelua bench/gemm_host_probe.lua 1x64x128   on the simulator
io.stdout:setvbuf("line")
local cute = require "cute"
local G = require "cute.lib.gemm"
local host = require("cute._c").host
local function now() return tonumber(host.now_ns()) / 1e3 end -- microseconds

local m, n, k = 1, 4096, 4096
if arg[1] then
  m, n, k = arg[1]:match("^(%d+)x(%d+)x(%d+)$")
  if not m then error("bench/gemm_host_probe.lua: the argument is MxNxK, got " .. arg[1], 0) end
  m, n, k = tonumber(m), tonumber(n), tonumber(k)
end
if os.getenv("CUTELUA_SIM_ARCH") then cute.set_device("sim", { arch = os.getenv("CUTELUA_SIM_ARCH") }) end
local sim = cute.current_device() == "sim"
local N = sim and 50000 or 20000

local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1, 1)
local B = cute.tensor(cute.bf16, { k, n }, "col"):uniform(-1, 1, 2)
local C = cute.tensor(cute.bf16, { m, n }, "row")
local info = cute.device_info()
print(string.format("%s; %dx%dx%d bf16; %d calls a measurement", info.name or info.arch or "device", m, n, k, N))
local variants = { { "no options", nil }, { "alpha = 2", { alpha = 2 } },
  { "kernel = sm90, config = {split_k = 1}", { kernel = "sm90", config = { split_k = 1 } } } }
for _, v in ipairs(variants) do
  local name, opts = v[1], v[2]
  local ok, e = pcall(G.gemm, A, B, C, opts)
  if not ok then
    print(string.format("%-40s skipped: %s", name, tostring(e):match("^[^\n]*")))
  else
    local wall
    if not sim then -- the real launches first
      cute.synchronize()
      local t0 = now()
      for _ = 1, 200 do G.gemm(A, B, C, opts) end
      cute.synchronize()
      wall = (now() - t0) / 200
    end
    local entries = G._plan_cache[A][B][C]
    local saved = {}
    for key, p in pairs(entries) do
      saved[key] = p.launcher
      p.launcher = function() end
    end
    for _ = 1, 2000 do G.gemm(A, B, C, opts) end
    local t0 = now()
    for _ = 1, N do G.gemm(A, B, C, opts) end
    local t = (now() - t0) / N
    for key, f in pairs(saved) do entries[key].launcher = f end
    print(string.format("%-40s host %.2f us a call before the launch%s", name, t,
      wall and string.format("; wall %.2f us a call with the launch", wall) or ""))
  end
end
