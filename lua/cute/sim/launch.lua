--- cute.sim.launch: a cute.kernel launch on the CPU simulator.
--
-- The kernel object (cute.kernel) traces a specialisation as for the GPU but
-- does not compile it; here its IR is compiled to Lua once (cute.sim.compile,
-- kept on the specialisation), the packed parameters are read back as the
-- generated code's values, the tensor arguments become the global memory the
-- launch may touch (named in the out-of-bounds errors), and the grid runs
-- (cute.sim.exec) before the launch returns.
local err = require "cute._err"
local L = require "cute.layout"
local compile = require "cute.sim.compile"
local exec = require "cute.sim.exec"
local tma = require "cute.sim.tma"
local ffi = require "ffi"

local M = {}

-- (the limits of a GPU's launch, as the runtime checks them there: src/rt/rt_module.c)
local LIMITS = { grid = { 2 ^ 31 - 1, 65535, 65535 }, block = { 1024, 1024, 64 }, cluster = { 16, 16, 16 } }

local function dims(v, what)
  local d
  if v == nil then d = { 1, 1, 1 }
  elseif type(v) == "number" then d = { v, 1, 1 }
  elseif type(v) == "table" then d = { v[1] or v.x or 1, v[2] or v.y or 1, v[3] or v.z or 1 }
  else err.raise("launch: %s must be a number or {x, y, z}, got %s", what, type(v)) end
  for i, axis in ipairs { "x", "y", "z" } do
    local x, hi = d[i], LIMITS[what][i]
    if type(x) ~= "number" or x % 1 ~= 0 or x < 1 or x > hi then
      err.raise("launch: %s.%s = %s is outside 1..%d", what, axis, tostring(x), hi)
    end
  end
  return d
end

local StaticMark = require("cute.kernel_args").StaticMark

-- The bytes of a tensor argument the kernel may touch: its layout's span
-- (cosize), or fewer if its buffer ends before.
local function tensor_bytes(t)
  local n = L.cosize(t.layout) * t.dtype.bytes
  local room = t.buffer.bytes - t.offset
  return math.min(n, room)
end

--- The simulator's compiled form of a specialisation (compiled once).
function M.compiled(k, spec)
  local c = spec.sim_compiled
  if not c then
    c = compile.compile(spec.module, k.name, exec.helpers)
    spec.sim_compiled = c
  end
  return c
end

--- Runs k's specialisation spec (its arguments already packed) on the simulator.
function M.launch(k, spec, cfg, ...)
  if type(cfg) ~= "table" then err.raise("launch: expected a configuration table {grid=, block=, ...}") end
  if cfg.block == nil then err.raise("launch: the configuration needs block = {x, y, z}") end
  local st = cfg.stream -- (the simulator runs a launch at once: a stream only has to be one)
  if st ~= nil and not (type(st) == "table" and st.sim) then
    err.raise("launch of %s on the simulator: stream must be a cute.stream() made on the simulator, got %s", k.name,
      type(st) == "string" and string.format("the string %q", st) or type(st))
  end
  local c = M.compiled(k, spec)
  local grid, block = dims(cfg.grid, "grid"), dims(cfg.block, "block")
  local nthreads = block[1] * block[2] * block[3]
  if nthreads > 1024 then
    err.raise("launch of %s: a block has at most 1024 threads, got %d (%d x %d x %d)", k.name, nthreads, block[1],
      block[2], block[3])
  end
  if c.hopper and require("cute.sim.memory").arch() ~= "sm_90a" then
    err.raise("launch of %s on the simulator: the kernel uses Hopper (sm_90a) instructions and the simulated device " ..
      "is %s; simulate an sm_90a device: cute.set_device(\"sim\", {arch = \"sm_90a\"}) or CUTELUA_SIM_ARCH=sm_90a",
      k.name, require("cute.sim.memory").arch())
  end
  local cd = dims(cfg.cluster or k.cluster, "cluster")
  if cd[1] * cd[2] * cd[3] > 1 and require("cute.sim.memory").arch() ~= "sm_90a" then
    err.raise("launch of %s on the simulator: clusters need an sm_90 device, and the simulated one is %s; " ..
      "cute.set_device(\"sim\", {arch = \"sm_90a\"}) or CUTELUA_SIM_ARCH=sm_90a", k.name,
      require("cute.sim.memory").arch())
  end
  if cd[1] * cd[2] * cd[3] > 16 then
    err.raise("launch of %s: a cluster of %d CTAs; at most 16 (8 portably)", k.name, cd[1] * cd[2] * cd[3])
  end
  local args = { ... }
  local P, regions = {}, {}
  local storage = spec.storage
  for j, p in ipairs(spec.params) do
    local d = c.params[j]
    if d and d.blob then
      -- a TMA descriptor: the host address of its bytes (cute.sim.tma's form), and the global memory it spans
      local a = tonumber(ffi.cast("uintptr_t", spec.argv[j - 1]))
      P[j] = a
      local t, why = tma.decode(a)
      if not t then
        err.raise("launch of %s on the simulator: argument '%s' (#%d): %s", k.name, k.names[p.arg] or "?", p.arg, why)
      end
      regions[#regions + 1] = { lo = a, hi = a + 128, name = string.format("the TMA descriptor '%s' (argument #%d)",
        k.names[p.arg] or "?", p.arg) }
      regions[#regions + 1] = { lo = t.address, hi = t.address + t.span,
        name = string.format("the tensor of TMA descriptor '%s' (argument #%d)", k.names[p.arg] or "?", p.arg) }
    elseif d then
      P[j] = exec.param_value(d, storage["p" .. j])
    end
    if p.what == "ptr" then
      local t = args[p.arg]
      if getmetatable(t) == StaticMark then t = t.tensor end
      if t.buffer.device ~= "sim" then
        err.raise("launch of %s on the simulator: argument '%s' (#%d) is a GPU tensor; make the tensors after "
          .. "cute.set_device(\"sim\") (or with CUTELUA_DEVICE=sim)", k.name, k.names[p.arg] or "?", p.arg)
      end
      local lo = tonumber(t._ptr)
      regions[#regions + 1] = { lo = lo, hi = lo + tensor_bytes(t),
        name = string.format("tensor '%s' (argument #%d)", k.names[p.arg] or "?", p.arg) }
    end
  end
  local dyn = math.max(spec.dyn_smem or 0, cfg.smem or 0)
  exec.run(c, k.name, P, grid, block, dyn, regions, cd)
end

--- The Lua source the simulator made of a specialisation (for debugging).
function M.source(k, spec) return M.compiled(k, spec).source end

return M
