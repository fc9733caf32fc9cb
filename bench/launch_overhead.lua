--- Launch overhead: host time per launch of a traced kernel from Lua, against
-- raw cuLaunchKernel from C on the same loaded kernel with the same arguments,
-- in the same run (scripts/bench cannot time host work; this script does).
--   cutelua bench/launch_overhead.lua [--out DIR]
-- Launches are submitted in batches of 500 and only the submission is timed
-- (the GPU drains between batches, untimed), so neither path waits on a
-- full launch queue. Figures: the median over batches, ns per launch.
local cute = require "cute"
local ffi = require "ffi"
local rt = require("cute._c").rt
local host = require("cute._c").host

local ok, why = cute.gpu_available()
if not ok then
  print("launch_overhead: no usable GPU (" .. tostring(why):match("^[^\n]*") .. "): skipped")
  os.exit(77)
end

local out_dir
for i = 1, #arg do if arg[i] == "--out" then out_dir = arg[i + 1] end end

local BATCH, BATCHES = 500, cute.bench.quick() and 5 or 40

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

-- ns per launch of one batch: f submits BATCH launches; only the submission
-- is timed, then the GPU drains.
local function time_batch(f)
  local t0 = host.now_ns()
  f()
  local t1 = host.now_ns()
  cute.synchronize()
  return tonumber(t1 - t0) / BATCH
end

local cases = {}

-- The three paths take turns batch by batch, so drift of the clocks or of the
-- machine's load affects them alike; the figures are medians over batches.
local function measure(name, k, args)
  local cfg = { grid = 1, block = 32 }
  k:launch(cfg, unpack(args)) -- compile, load
  cute.synchronize()
  local spec = k:_specialise(#args, unpack(args))
  local fn = spec.loaded[cute.current_device()].fn.fn
  local rcfg = ffi.new("RtLaunch")
  cute.runtime.internal.fill_launch(cfg, rcfg)
  local raw_ns = ffi.new("double[1]")
  local launcher = k(cfg)
  -- the loops name their arguments, as a program does (unpack() in the loop
  -- would cost more than the launch path: LuaJIT does not compile it)
  local names = {}
  for i = 1, #args do names[i] = "a" .. i end
  local list = table.concat(names, ", ")
  local sep = #args > 0 and ", " or ""
  local via_launch, via_call = assert(loadstring(string.format([[
local k, cfg, launcher, B%s%s = ...
return function() for _ = 1, B do k:launch(cfg%s%s) end end,
  function() for _ = 1, B do launcher(%s) end end]], sep, list, sep, list, list), "=launch loops"))(k, cfg, launcher,
    BATCH, unpack(args))
  local paths = {
    function() -- launch_raw_ns times only its submission loop, then synchronises
      assert(rt.launch_raw_ns(fn, rcfg, spec.argv, BATCH, raw_ns) == 0)
      return raw_ns[0]
    end,
    function() return time_batch(via_launch) end,
    function() return time_batch(via_call) end,
    -- the C launch path alone (its checks, then cuLaunchKernel), called from Lua
    function() return time_batch(function() for _ = 1, BATCH do rt.launch(fn, rcfg, spec.argv) end end) end,
  }
  local per = { {}, {}, {}, {} }
  for b = 1, BATCHES + 2 do
    for p = 1, 4 do
      local ns = paths[p]()
      if b > 2 then per[p][#per[p] + 1] = ns end -- the first two warm up
    end
  end
  cases[#cases + 1] = { name = name, raw = median(per[1]), launch = median(per[2]), call = median(per[3]),
    c_path = median(per[4]) }
end

local empty0 = cute.kernel("empty0", function() end)
local empty2 = cute.kernel("empty2", function(a, n)
  cute.if_(n:lt(0), function() a[0] = 1 end) -- never true: uses the arguments
end)
local empty4 = cute.kernel("empty4", function(a, b, c, n)
  cute.if_(n:lt(0), function() c[0] = a[0] + b[0] end)
end)
local t1, t2, t3 = cute.tensor(cute.f32, 1024), cute.tensor(cute.f32, 1024), cute.tensor(cute.f32, 1024)
measure("no arguments", empty0, {})
measure("tensor + i32", empty2, { t1, cute.i32(5) })
measure("3 tensors + i32", empty4, { t1, t2, t3, cute.i32(5) })

local info = cute.device_info()
local lines = {
  string.format("Launch overhead on %s (driver %s), host ns per launch, median of %d batches of %d "
    .. "(the three paths in turn):", info.name, info.driver_version, BATCHES, BATCH),
  "",
  "| kernel arguments | raw cuLaunchKernel (C) | k:launch(cfg, ...) | ratio | k(cfg)(...) | ratio | C launch path "
    .. "from Lua | ratio |",
  "|---|---|---|---|---|---|---|---|",
}
for _, c in ipairs(cases) do
  lines[#lines + 1] = string.format("| %s | %.0f | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f |", c.name, c.raw, c.launch,
    c.launch / c.raw, c.call, c.call / c.raw, c.c_path, c.c_path / c.raw)
end
local text = table.concat(lines, "\n") .. "\n"
io.write(text)
if out_dir then
  os.execute("mkdir -p '" .. out_dir .. "'")
  local f = assert(io.open(out_dir .. "/launch_overhead.md", "w"))
  f:write(text)
  f:close()
end
