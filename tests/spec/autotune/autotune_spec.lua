-- cute.autotune: the cache, skipped configs, defaults and the timing path on
-- the CPU (an injected timer and device), and a real tuning run on the GPU.
local cute = require "cute"
local at = cute.autotune

local DEV = { name = "Test GPU", arch = "sm_90a" }

local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  return d .. "-autotune-spec"
end

-- A builder of launch functions that record which config ran, and a timer
-- that gives each config the time its `ms` field says (no GPU).
local function fixture()
  local ran = {}
  local timed = {}
  local function builder(cfg)
    if cfg.refuse then return nil, "tile too large" end
    if cfg.raise then error("bad config " .. cfg.id) end
    return function(x) ran[#ran + 1] = { id = cfg.id, x = x } end
  end
  local function timer(launch)
    launch()
    local last = ran[#ran]
    timed[#timed + 1] = last.id
    return ({ a = 3.0, b = 1.5, c = 2.0, d = 0.5 })[last.id]
  end
  return builder, timer, ran, timed
end

local CONFIGS = { { id = "a" }, { id = "b" }, { id = "c" } }

local function opts(dir, extra)
  local o = { name = "spec_builder", shape_class = "1024", dtypes = "f32", device = DEV, cache_dir = dir }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

describe("cute.autotune", function()
  before_each(function() at.clear_memory() end)

  it("times every config with the timer and returns the fastest, with a report", function()
    local builder, timer, ran, timed = fixture()
    local best, rep = cute.autotune(builder, CONFIGS, { 7 }, opts(false, { timer = timer }))
    assert.equal("b", best.id)
    assert.equal("tuned", rep.source)
    assert.equal(1.5, rep.time_ms)
    assert.same({ "a", "b", "c" }, timed)
    assert.equal(7, ran[1].x)
    assert.equal(3.0, rep.entries[1].time_ms)
    assert.equal(2.0, rep.entries[3].time_ms)
  end)

  it("skips configs the builder refuses or raises on, and reports why", function()
    local builder, timer, ran = fixture()
    local cfgs = { { id = "a" }, { id = "d", refuse = true }, { id = "b", raise = true }, { id = "c" } }
    local best, rep = cute.autotune(builder, cfgs, { 1 }, opts(false, { timer = timer }))
    assert.equal("c", best.id)
    assert.matches("refused by the builder: tile too large", rep.entries[2].skipped)
    assert.matches("builder raised: .*bad config b", rep.entries[3].skipped)
    assert.is_nil(rep.entries[2].time_ms)
    -- a launch that fails skips the config too
    local best2, rep2 = cute.autotune(builder, { { id = "a" }, { id = "c" } }, { 1 }, opts(false, {
      force = true, timer = function(launch)
        launch()
        if ran[#ran].id == "a" then error("an illegal address") end
        return 1
      end }))
    assert.matches("launch failed: .*an illegal address", rep2.entries[1].skipped)
    assert.equal("c", best2.id)
    assert.equal(1, rep2.entries[2].time_ms)
  end)

  it("raises, listing each reason, when every config is skipped", function()
    local builder, timer = fixture()
    local ok, e = pcall(cute.autotune, builder, { { id = "x", refuse = true }, { id = "y", raise = true } }, { 1 },
      opts(false, { timer = timer }))
    assert.is_false(ok)
    assert.matches("every config was skipped", tostring(e))
    assert.matches("config 1 {id s x, refuse b true}: refused by the builder", tostring(e))
    assert.matches("config 2 .*bad config y", tostring(e))
  end)

  it("rejects configs it cannot key and builders that are not functions", function()
    assert.has_error(function() cute.autotune(42, CONFIGS, {}) end, "autotune: expected a builder function, got number")
    assert.has_error(function() cute.autotune(function() end, {}, {}) end)
    -- a misspelt option is refused, not ignored (it tuned without the cache directory asked for)
    local refused, msg = pcall(cute.autotune, function() end, CONFIGS, {}, { cache_directory = "/tmp" })
    assert.is_false(refused)
    assert.matches("autotune: unknown option 'cache_directory'.*%(the options are: bench, cache_dir, device,", msg)
    local ok, e = pcall(cute.autotune, function() end, { { f = {} } }, {}, opts(false))
    assert.is_false(ok)
    assert.matches("config 1: config field f is a table", tostring(e))
  end)

  it("stores the winner on disk and never times again for the same key", function()
    local dir = tmpdir()
    local builder, timer, _, timed = fixture()
    local best = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    assert.equal("b", best.id)
    assert.equal(3, #timed)
    at.clear_memory() -- a new process: only the disk remains
    local best2, rep2 = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    assert.equal("b", best2.id)
    assert.equal("cache", rep2.source)
    assert.equal(1.5, rep2.time_ms)
    assert.equal(3, #timed)
    -- force re-tunes
    local _, rep3 = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer, force = true }))
    assert.equal("tuned", rep3.source)
    assert.equal(6, #timed)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("keys the cache by device name, arch, shape class, dtypes, build id, name and configs", function()
    local dir = tmpdir()
    local builder, timer, _, timed = fixture()
    cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    local n = #timed
    local variants = {
      { device = { name = "Other GPU", arch = "sm_90a" } },
      { device = { name = "Test GPU", arch = "sm_100a" } },
      { shape_class = "2048" },
      { dtypes = "bf16" },
      { name = "other_builder" },
    }
    for _, v in ipairs(variants) do
      local _, rep = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer, device = v.device or DEV,
        shape_class = v.shape_class, dtypes = v.dtypes, name = v.name }))
      assert.equal("tuned", rep.source)
      n = n + 3
      assert.equal(n, #timed)
    end
    local real_id = at.build_id
    at.build_id = function() return "0123456789abcdef" end
    local _, rep = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    at.build_id = real_id
    assert.equal("tuned", rep.source)
    local _, rep2 = cute.autotune(builder, { { id = "a" }, { id = "c" } }, { 1 }, opts(dir, { timer = timer }))
    assert.equal("tuned", rep2.source)
    assert.equal("c", rep2.config.id)
    -- and the first key is still cached
    at.clear_memory()
    local _, rep3 = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    assert.equal("cache", rep3.source)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("ignores a corrupt cache entry with a warning and tunes again", function()
    local dir = tmpdir()
    local builder, timer, _, timed = fixture()
    cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    local p = io.popen("ls '" .. dir .. "'/*.tune")
    local path = p:read("*l")
    p:close()
    assert.is_not_nil(path)
    local f = io.open(path, "rb")
    local text = f:read("*a")
    f:close()
    f = io.open(path, "wb")
    f:write(text:sub(1, #text - 5)) -- truncated
    f:close()
    at.clear_memory()
    local warnings = {}
    local old = cute.compiler.set_warning_handler(function(m) warnings[#warnings + 1] = m end)
    local best, rep = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    cute.compiler.set_warning_handler(old)
    assert.equal("tuned", rep.source)
    assert.equal("b", best.id)
    assert.equal(6, #timed)
    assert.equal(1, #warnings)
    assert.matches("ignoring the corrupt cache entry .*truncated", warnings[1])
    -- rewritten whole: a hit again
    at.clear_memory()
    local _, rep2 = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    assert.equal("cache", rep2.source)
    -- an entry whose numbers are garbage is also ignored
    f = io.open(path, "rb")
    text = f:read("*a")
    f:close()
    f = io.open(path, "wb")
    f:write((text:gsub("time_ms [^\n]*", "time_ms fast")))
    f:close()
    at.clear_memory()
    warnings = {}
    old = cute.compiler.set_warning_handler(function(m) warnings[#warnings + 1] = m end)
    local _, rep3 = cute.autotune(builder, CONFIGS, { 1 }, opts(dir, { timer = timer }))
    cute.compiler.set_warning_handler(old)
    assert.equal("tuned", rep3.source)
    assert.matches("no time_ms line", warnings[1])
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("round-trips numbers, strings and booleans through the disk entry", function()
    local dir = tmpdir()
    local cfgs = { { bn = 128, stages = 4, sched = "ping pong", swap = true, alpha = 0.1 } }
    local function timer() return 1 end
    cute.autotune(function() return function() end end, cfgs, {}, opts(dir, { timer = timer }))
    at.clear_memory()
    local best, rep = cute.autotune(function() return function() end end, cfgs, {}, opts(dir, { timer = timer }))
    assert.equal("cache", rep.source)
    assert.same(cfgs[1], best)
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("uses cute.autotune.defaults[name] before tuning when tune = false", function()
    local builder, timer, _, timed = fixture()
    local seen
    at.defaults.spec_builder = function(device_name, problem)
      seen = { device_name, problem }
      return { id = "c" }
    end
    local best, rep = cute.autotune(builder, CONFIGS, { 1 }, opts(false, { timer = timer, tune = false,
      problem = { m = 16 } }))
    at.defaults.spec_builder = nil
    assert.equal("c", best.id)
    assert.equal("default", rep.source)
    assert.equal(0, #timed)
    assert.equal("Test GPU", seen[1])
    assert.equal(16, seen[2].m)
    -- no default: the first config, still untimed
    local best2, rep2 = cute.autotune(builder, CONFIGS, { 1 }, opts(false, { timer = timer, tune = false }))
    assert.equal("a", best2.id)
    assert.equal("first", rep2.source)
    assert.equal(0, #timed)
    -- a cached result wins over the default
    cute.autotune(builder, CONFIGS, { 1 }, opts(false, { timer = timer }))
    at.defaults.spec_builder = function() return { id = "c" } end
    local best3, rep3 = cute.autotune(builder, CONFIGS, { 1 }, opts(false, { timer = timer, tune = false }))
    at.defaults.spec_builder = nil
    assert.equal("b", best3.id)
    assert.equal("cache", rep3.source)
  end)

  it("derives the shape class and dtypes from tensor arguments", function()
    local x = cute.fake_tensor(cute.bf16, { 1000, 3 })
    local y = cute.fake_tensor(cute.f32, 4096)
    assert.equal("1024x4,4096,64", at.shape_class({ x, y, 33 }))
    assert.equal("bf16,f32", at.dtypes({ x, y, 33 }))
  end)

  it("sits beside the compile cache's directory", function()
    local d = at.cache_dir()
    local c = cute.compiler.options({ arch = "sm_80" }):get("cache_dir")
    if c then assert.equal(c:gsub("/+$", "") .. "-autotune", d) else assert.is_false(d) end
    assert.equal("/x", at.cache_dir({ cache_dir = "/x" }))
  end)

  it("tunes a real kernel's unroll on the device, and the second call times nothing #gpu", function()
    local n = 4194304
    local x = cute.tensor(cute.f32, n)
    local y = cute.tensor(cute.f32, n)
    local kernels = {}
    local function builder(cfg)
      local k = kernels[cfg.vec]
      if not k then
        k = cute.kernel("autotune_copy_" .. cfg.vec, function(a, b)
          local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
          for u = 0, cfg.vec - 1 do
            local j = i * cfg.vec + u
            cute.if_(j:lt(cute.size(b)), function() b[j] = a[j] end)
          end
        end)
        kernels[cfg.vec] = k
      end
      return k, { grid = math.ceil(n / (256 * cfg.vec)), block = 256 }
    end
    local dir = tmpdir()
    local calls = 0
    local function timer(launch, o)
      calls = calls + 1
      return at.timer(launch, o)
    end
    local cfgs = { { vec = 1 }, { vec = 2 }, { vec = 4 } }
    local best, rep = cute.autotune(builder, cfgs, { x, y }, { name = "spec_copy", cache_dir = dir, timer = timer,
      bench = { min_time_ms = 10 } })
    assert.equal("tuned", rep.source)
    assert.equal(3, calls)
    for _, e in ipairs(rep.entries) do assert.is_true(e.time_ms > 0) end
    at.clear_memory()
    local best2, rep2 = cute.autotune(builder, cfgs, { x, y }, { name = "spec_copy", cache_dir = dir, timer = timer })
    assert.equal("cache", rep2.source)
    assert.equal(3, calls)
    assert.same(best, best2)
    os.execute("rm -rf '" .. dir .. "'")
  end)
end)
