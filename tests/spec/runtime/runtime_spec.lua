-- cute.runtime: devices, memory, modules, launches, streams, events, TMA, faults.
-- The specs tagged #gpu need a GPU; the others run anywhere.
local cute = require "cute"
local ffi = require "ffi"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local PTX = "tests/spec/runtime/kernels.ptx"

describe("runtime without a GPU", function()
  it("says why no GPU is available, or that one is", function()
    local ok, why = cute.gpu_available()
    if not ok then
      assert.is_string(why)
      assert.is_true(why:find("libcuda") ~= nil or why:find("GPU") ~= nil or why:find("cuInit") ~= nil, why)
    end
  end)

  it("raises a clear error at the first call that needs a GPU", function()
    if cute.gpu_available() then return end
    local ok, msg = pcall(cute.device_count)
    assert.is_false(ok)
    assert.matches("runtime_spec%.lua:%d+:", msg)
    assert.is_true(msg:find("libcuda.so.1", 1, true) ~= nil or msg:find("GPU", 1, true) ~= nil, msg)
  end)

  it("rejects bad TMA descriptors before reaching the driver, naming the rule", function()
    local base = { dtype = cute.f32, address = 4096, dims = { 64, 64 }, strides = { 256 }, box = { 32, 32 } }
    local function spec(over)
      local s = {}
      for k, v in pairs(base) do s[k] = v end
      for k, v in pairs(over) do s[k] = v end
      return s
    end
    local cases = {
      { { address = 4100 }, "not 16%-byte aligned" },
      { { strides = { 250 } }, "globalStrides%[0%] %(dimension 1%) is 250 bytes" },
      { { box = { 32, 300 } }, "boxDim%[1%] is 300" },
      { { box = { 3, 32 } }, "boxDim%[0%] is 12 bytes" },
      { { swizzle = "64B" }, "larger than the 64%-byte swizzle span" },
      { { swizzle = "16B" }, "swizzle must be one of" },
      { { dtype = cute.e4m3, box = { 8, 32 } }, "boxDim%[0%] is 8 bytes" },
    }
    for _, c in ipairs(cases) do
      local ok, msg = pcall(cute.tma_descriptor, spec(c[1]))
      assert.is_false(ok)
      assert.matches(c[2], msg)
    end
  end)

  it("rejects raw launch arguments it cannot type", function()
    local ptxas = "/usr/local/cuda/bin/ptxas"
    assert.is_truthy(read(PTX):find("add_one", 1, true))
    -- the hand-written PTX of the GPU specs assembles (checked here, off the GPU)
    if io.open(ptxas) then
      local out = os.tmpname()
      local rc = os.execute(ptxas .. " -arch=sm_90 " .. PTX .. " -o " .. out .. " 2>/dev/null")
      os.remove(out)
      assert.is_true(rc == 0 or rc == true)
    end
  end)

  it("packs raw launch arguments as the addresses of their bytes (64-bit integers, scalars, structs)", function()
    local R = require "cute.runtime"
    local pack = R.internal.pack_arg
    local args = ffi.new("void *[4]")
    local keep = {}
    local big = 2 ^ 40 + 3
    for i, v in ipairs { ffi.new("uint64_t", big), ffi.new("int64_t", -big), cute.i32(-7) } do
      local p, anchor = pack(v, i)
      args[i - 1] = p -- (a launch's argument array takes each)
      keep[i] = anchor
    end
    assert.equals(big, tonumber(ffi.cast("uint64_t *", args[0])[0]))
    assert.equals(-big, tonumber(ffi.cast("int64_t *", args[1])[0]))
    assert.equals(-7, ffi.cast("int32_t *", args[2])[0])
    assert.equals(3, #keep) -- (each value's anchor, which kept its bytes alive until here)
    local s = ffi.new("struct { uint32_t a, b; }", 5, 6)
    local p = pack(s, 4)
    assert.equals(6, ffi.cast("uint32_t *", p)[1])
    local ok, msg = pcall(pack, 3, 2)
    assert.is_false(ok)
    assert.matches("argument #2 is a number; pass a tensor, a buffer, a typed scalar such as cute.i32%(3%)", msg)
  end)
end)

describe("runtime on the GPU", function()
  local mod

  local function module()
    if not mod or cute.generation() ~= mod.gen then
      mod = cute.load_module(read(PTX), "kernels.ptx")
      mod.gen = cute.generation()
    end
    return mod
  end

  local function upload(t, n)
    local buf = cute.alloc(n * 4)
    local h = ffi.new("float[?]", n, t)
    buf:copy_from_host(h, n * 4)
    return buf
  end

  local function download(buf, n)
    local h = ffi.new("float[?]", n)
    buf:copy_to_host(h, n * 4)
    return h
  end

  it("describes the device #gpu", function()
    local info = cute.device_info()
    assert.is_true(#info.name > 0)
    assert.is_true(info.compute_capability[1] >= 8)
    assert.is_true(info.sm_count > 0 and info.total_memory > 0 and info.l2_bytes > 0)
    assert.is_true(info.smem_per_block_optin >= info.smem_per_block)
    assert.matches("^%d+%.%d+$", info.driver_version)
  end)

  it("allocates, copies and fills #gpu", function()
    local n = 1000
    local vals = {}
    for i = 1, n do vals[i] = math.random() * 100 - 50 end
    local buf = upload(vals, n)
    local back = download(buf, n)
    for i = 1, n do assert.equal(ffi.new("float", vals[i]), back[i - 1]) end
    -- memset patterns of every width
    for _, w in ipairs { 1, 2, 4, 8 } do
      local pat = ({ 0xab, 0xbeef, 0xdeadbeef, 0x0123456789abcdefULL })[w == 8 and 4 or (w == 4 and 3 or w)]
      buf:memset(pat, w, 4000 / w)
      local h = ffi.new("uint8_t[4000]")
      buf:copy_to_host(h, 4000)
      local cell = ffi.new("uint64_t[1]", pat)
      local pb = ffi.cast("uint8_t *", cell)
      for i = 0, 3999 do
        if h[i] ~= pb[i % w] then error(string.format("width %d: byte %d is %x", w, i, h[i])) end
      end
    end
    local other = cute.alloc(4000)
    other:copy_from(buf, 4000)
    local h = ffi.new("uint8_t[4000]")
    other:copy_to_host(h, 4000)
    assert.equal(0xef, h[0])
    buf:free()
    buf:free() -- twice is harmless
    local ok, msg = pcall(function() buf:copy_to_host(h, 4) end)
    assert.is_false(ok)
    assert.matches("freed", msg)
  end)

  it("refuses copies outside a buffer #gpu", function()
    local buf = cute.alloc(64)
    local h = ffi.new("uint8_t[128]")
    local ok, msg = pcall(function() buf:copy_to_host(h, 128) end)
    assert.is_false(ok)
    assert.matches("outside the 64%-byte device buffer", msg)
  end)

  it("loads PTX and launches with raw arguments #gpu", function()
    local k = module():kernel("add_one")
    local n = 5000
    local vals = {}
    for i = 1, n do vals[i] = i * 0.5 end
    local buf = upload(vals, n)
    k:launch({ grid = math.ceil(n / 256), block = 256 }, buf, cute.u32(n))
    cute.synchronize()
    local back = download(buf, n)
    for i = 1, n do assert.equal(vals[i] + 1, back[i - 1]) end
    assert.is_true(k:attributes().registers > 0)
    assert.is_true(k:occupancy(256) > 0)
  end)

  it("names a missing kernel #gpu", function()
    local ok, msg = pcall(function() return module():kernel("nope") end)
    assert.is_false(ok)
    assert.matches("no kernel named 'nope'", msg)
  end)

  it("checks launch configurations before launching #gpu", function()
    local k = module():kernel("add_one")
    local info = cute.device_info()
    local ok, msg = k:check_launch { grid = 1, block = 2048 }
    assert.is_false(ok)
    assert.matches("block.x = 2048 is outside 1..1024", msg)
    ok, msg = k:check_launch { grid = 1, block = { 32, 32, 2 } }
    assert.is_false(ok)
    assert.matches("2048 threads per block; .* at most 1024", msg)
    ok, msg = k:check_launch { grid = 1, block = 32, smem = info.smem_per_block_optin + 1 }
    assert.is_false(ok)
    assert.matches("bytes of dynamic shared memory; at most %d+ are available", msg)
    ok, msg = k:check_launch { grid = 3, block = 32, cluster = 2 }
    assert.is_false(ok)
    assert.matches("grid.x = 3 is not a multiple of the cluster's 2", msg)
    ok, msg = k:check_launch { grid = 32, block = 32, cluster = 32 }
    assert.is_false(ok)
    assert.matches("at most 16", msg)
    -- a cluster whose size overflows 32 bits (it once wrapped to 0, skipped these checks and launched
    -- without a cluster): refused like any other that is too large
    ok, msg = k:check_launch { grid = 65536, block = 32, cluster = { 65536, 65536, 1 } }
    assert.is_false(ok)
    if info.cluster_launch then
      assert.matches("a cluster of 65536 x 65536 x 1 = 4294967296 blocks; at most 16 are possible", msg)
    end
    ok, msg = pcall(function() k:launch({ grid = 1, block = 64 }, 3) end)
    assert.is_false(ok)
    assert.matches("argument #1 is a number; pass .*cute.i32%(3%)", msg)
    -- a stream that is not one is refused (a string or a table ran on the default stream)
    local buf = cute.alloc(256)
    cute.set_device("sim")
    local sim_stream = cute.stream()
    cute.set_device(0)
    local function launch_on(s)
      return function() k:launch({ grid = 1, block = 64, stream = s }, buf, cute.u32(64)) end
    end
    for _, c in ipairs {
      { launch_on("s"), "launch: stream must be a cute.stream%(%) or a cute.stream_from_handle%(handle%), got the "
        .. "string \"s\"" },
      { launch_on({}), "launch: stream must be .*got table" },
      { launch_on(sim_stream), "launch: a stream of the CPU simulator, on a GPU's call" },
      { function() buf:memset(0, 4, 64, 0, 0) end, "memset: stream must be .*got number" },
      { function() cute.event():record("s") end, "event record: stream must be" },
    } do
      local ok2, msg2 = pcall(c[1])
      assert.is_false(ok2)
      assert.matches(c[2], msg2)
    end
    k:launch({ grid = 1, block = 64, stream = cute.stream() }, buf, cute.u32(64))
    cute.synchronize()
    buf:free()
  end)

  it("launches with more than 48 KB of dynamic shared memory #gpu", function()
    local k = module():kernel("smem_roundtrip")
    local words = 40000 -- 160000 bytes
    local out = cute.alloc(words * 4)
    k:launch({ grid = 1, block = 512, smem = words * 4 }, out, cute.u32(words))
    cute.synchronize()
    local h = ffi.new("uint32_t[?]", words)
    out:copy_to_host(h, words * 4)
    for i = 0, words - 1 do
      if h[i] ~= words - 1 - i then error("word " .. i .. " is " .. h[i]) end
    end
  end)

  it("launches clusters #gpu", function()
    local info = cute.device_info()
    if not info.cluster_launch then pending("no cluster launch on this GPU") return end
    local k = module():kernel("cluster_ranks")
    local out = cute.alloc(8 * 4)
    k:launch({ grid = 8, block = 32, cluster = 4 }, out)
    cute.synchronize()
    local h = ffi.new("uint32_t[8]")
    out:copy_to_host(h, 32)
    for b = 0, 7 do assert.equal((b % 4) * 1000 + 4, h[b]) end
  end)

  it("times with events and runs on streams #gpu", function()
    local k = module():kernel("add_one")
    local n = 1048576
    local buf = cute.alloc(n * 4)
    buf:memset(0, 4, n)
    local s = cute.stream()
    local e0, e1 = cute.event(), cute.event()
    e0:record(s)
    for _ = 1, 10 do k:launch({ grid = n / 256, block = 256, stream = s }, buf, cute.u32(n)) end
    e1:record(s)
    s:synchronize()
    local ms = e0:elapsed_ms(e1)
    assert.is_true(ms > 0 and ms < 1000)
    local h = ffi.new("float[4]")
    buf:copy_to_host(h, 16)
    assert.equal(10, h[0])
    s:free()
    s:free()
  end)

  it("loads a tile through a TMA descriptor, with out-of-bounds zero fill #gpu", function()
    local info = cute.device_info()
    if info.compute_capability[1] < 9 then pending("TMA needs sm_90") return end
    local W, H = 100, 70 -- a row-major W x H f32 matrix: x (dimension 1) is contiguous
    local vals = {}
    for i = 1, W * H do vals[i] = math.random(-1000, 1000) end
    local src = upload(vals, W * H)
    -- rows of 100 floats are 400 bytes: a multiple of 16, as TMA needs
    local desc = cute.tma_descriptor { dtype = cute.f32, address = src.ptr, dims = { W, H }, strides = { W * 4 },
      box = { 32, 32 }, swizzle = "none", oob = "zero" }
    local k = module():kernel("tma_load_tile")
    local out = cute.alloc(1024 * 4)
    for _, origin in ipairs { { 0, 0 }, { 40, 20 }, { 80, 50 } } do -- the last box hangs over both edges
      out:memset(0x7fc00000, 4, 1024) -- poison with NaN
      k:launch({ grid = 1, block = 128 }, desc, out, cute.u32(origin[1]), cute.u32(origin[2]))
      cute.synchronize()
      local h = download(out, 1024)
      for y = 0, 31 do
        for x = 0, 31 do
          local gx, gy = origin[1] + x, origin[2] + y
          local want = (gx < W and gy < H) and vals[gy * W + gx + 1] or 0
          if h[y * 32 + x] ~= want then
            error(string.format("origin (%d,%d): element (%d,%d) is %g, expected %g", origin[1], origin[2], x, y,
              h[y * 32 + x], want))
          end
        end
      end
    end
  end)

  it("resets the device on request; handles made before are refused #gpu", function()
    local buf = cute.alloc(1024)
    local gen = cute.generation()
    cute.reset_device()
    assert.equal(gen + 1, cute.generation())
    local ok, msg = pcall(function() buf:copy_to_host(ffi.new("uint8_t[4]"), 4) end)
    assert.is_false(ok)
    assert.matches("belongs to a CUDA context that was reset", msg)
    buf:free() -- harmless
    local k = module():kernel("add_one") -- reloaded: the generation changed
    local b2 = upload({ 1, 2, 3 }, 3)
    k:launch({ grid = 1, block = 32 }, b2, cute.u32(3))
    cute.synchronize()
    local h = download(b2, 3)
    assert.same({ 2, 3, 4 }, { h[0], h[1], h[2] })
  end)
end)
