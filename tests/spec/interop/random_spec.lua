-- cute.random: Philox 4x32-10 on the host against the published known-answer
-- vectors, the streams built on it (rand, randint, randn and their 4-wide
-- forms, rand_host), kernels that use them compiled without a GPU, and on a
-- GPU the device stream compared with the host's bit for bit.
local cute = require "cute"
local ffi = require "ffi"

local function hex4(...) return string.format("%08x %08x %08x %08x", ...) end

-- One Philox round written independently with 64-bit FFI integers (the
-- module computes the products exactly in doubles).
local function one_round(c, k)
  local function mul(m, x)
    local p = ffi.cast("uint64_t", m) * x
    return tonumber(p / 4294967296ULL), tonumber(p % 4294967296ULL)
  end
  local hi0, lo0 = mul(0xD2511F53, c[1])
  local hi1, lo1 = mul(0xCD9E8D57, c[3])
  local function xor(a, b, d) return bit.bxor(bit.bxor(a, b), d) % 2 ^ 32 end
  return xor(hi1, c[2], k[1]), lo1, xor(hi0, c[4], k[2]), lo0
end

describe("cute.philox4x32 on the host", function()
  -- Random123 1.14 (D. E. Shaw Research), tests/kat_vectors, the three
  -- "philox4x32 10" lines: counter (4 words), key (2 words), output (4 words).
  -- They reproduce Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC11.
  local KAT = {
    { { 0, 0, 0, 0 }, { 0, 0 }, "6627e8d5 e169c58d bc57ac4c 9b00dbd8" },
    { { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
      "408f276d 41c83b0e a20bc7c6 6d5451fd" },
    { { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
      "d16cfe09 94fdcceb 5001e420 24126ea1" },
  }

  it("gives Random123's known answers", function()
    for _, v in ipairs(KAT) do assert.equal(v[3], hex4(cute.philox4x32(v[1], v[2]))) end
  end)

  it("computes one round as 64-bit integer products do", function()
    math.randomseed(7)
    for _ = 1, 200 do
      local c = { math.random(0, 2 ^ 31) * 2 + math.random(0, 1), math.random(0, 2 ^ 32 - 1),
        math.random(0, 2 ^ 32 - 1), math.random(0, 2 ^ 32 - 1) }
      local k = { math.random(0, 2 ^ 32 - 1), math.random(0, 2 ^ 32 - 1) }
      assert.equal(hex4(one_round(c, k)), hex4(cute.philox4x32(c, k, 1)))
    end
  end)

  it("refuses what is not a counter of 4 words and a key of 2, naming the caller's line", function()
    local ok, msg = pcall(function() cute.philox4x32({ 1, 2, 3 }, { 0, 0 }) end)
    assert.is_false(ok)
    assert.matches("random_spec.lua:%d+: philox4x32: the counter must be a table of 4 words", msg)
    assert.error_matches(function() cute.philox4x32({ 1, 2, 3, 4 }, { 0 }) end, "the key must be a table of 2 words")
    assert.error_matches(function() cute.philox4x32({ 1, 2, 3, 2 ^ 32 }, { 0, 0 }) end,
      "counter%[4%] must be a 32%-bit word %(an integer in 0..2%^32%-1%), got 4294967296")
    assert.error_matches(function() cute.philox4x32({ 1, 2, 3, 4 }, { 0, 0.5 }) end, "key%[2%] must be a 32%-bit word")
    assert.error_matches(function() cute.philox4x32({ 1, 2, 3, 4 }, { 0, 0 }, 0) end,
      "rounds must be an integer in 1..16")
  end)
end)

describe("cute.rand, randint, randn on the host", function()
  it("take the counter {offset lo, offset hi, 0, 0} and the key {seed lo, seed hi}", function()
    local seed, offset = 0x123456789, 2 ^ 32 * 3 + 17
    local w0, w1, w2, w3 = cute.philox4x32({ 17, 3, 0, 0 }, { 0x23456789, 1 })
    assert.equal(w0, cute.randint(seed, offset))
    assert.same({ w0, w1, w2, w3 }, { cute.randint4(seed, offset) })
    assert.equal(math.floor(w0 / 256) / 2 ^ 24, cute.rand(seed, offset))
    assert.same({ math.floor(w0 / 256) / 2 ^ 24, math.floor(w1 / 256) / 2 ^ 24, math.floor(w2 / 256) / 2 ^ 24,
      math.floor(w3 / 256) / 2 ^ 24 }, { cute.rand4(seed, offset) })
    -- 64-bit FFI integers as seeds and offsets: the same words
    assert.equal(w0, cute.randint(0x123456789ULL, 2 ^ 32 * 3 + 17))
    assert.equal(w0, cute.randint(seed, ffi.new("int64_t", offset)))
    assert.equal(w0, cute.randint(cute.u64(0x123456789ULL), cute.i64(offset))) -- typed scalars, as kernels take
  end)

  it("give uniforms in [0, 1) that are f32 values, and normals from Box-Muller", function()
    local n, sum, sumsq, lo, hi = 20000, 0, 0, 1, 0
    local cell = ffi.new("float[1]")
    for i = 0, n - 1 do
      local u = cute.rand(42, i)
      cell[0] = u
      assert.equal(u, cell[0]) -- exactly an f32
      lo, hi = math.min(lo, u), math.max(hi, u)
      local z = cute.randn(42, i)
      sum, sumsq = sum + z, sumsq + z * z
    end
    assert.is_true(lo >= 0 and lo < 1e-3 and hi < 1 and hi > 1 - 1e-3, lo .. " " .. hi)
    local mean, var = sum / n, sumsq / n - (sum / n) ^ 2
    assert.is_true(math.abs(mean) < 0.03 and math.abs(var - 1) < 0.04, mean .. " " .. var)
    -- the two branches of a pair: z0^2 + z1^2 = -2 ln u1, the angle 2 pi u2
    for i = 0, 50 do
      local w0, w1 = cute.randint4(9, i)
      local z0, z1 = cute.randn4(9, i)
      local u1, u2 = (math.floor(w0 / 256) + 1) / 2 ^ 24, math.floor(w1 / 256) / 2 ^ 24
      assert.is_true(math.abs(z0 * z0 + z1 * z1 + 2 * math.log(u1)) < 1e-5 * (1 - 2 * math.log(u1)))
      assert.equal(z0, (cute.randn(9, i)))
      local angle = math.atan2(z1, z0) % (2 * math.pi)
      if z0 * z0 + z1 * z1 > 1e-6 then
        local d = math.abs(angle - 2 * math.pi * u2)
        assert.is_true(math.min(d, 2 * math.pi - d) < 1e-5, i)
      end
    end
  end)

  it("differ between seeds and offsets", function()
    local seen = {}
    for s = 0, 9 do
      for o = 0, 99 do
        local w = cute.randint(s, o)
        assert.is_nil(seen[w])
        seen[w] = true
      end
    end
  end)

  it("stream on the host with rand_host: element i is cute.<kind>(seed, offset + i)", function()
    local u = cute.rand_host(5, 300)
    local r = cute.rand_host(5, 300, { kind = "randint", offset = 2 ^ 32 - 150 })
    local z = cute.rand_host(5, 300, { kind = "randn", offset = 7 })
    assert.is_true(ffi.istype("float[?]", u) or ffi.istype("float[300]", u))
    for i = 0, 299 do
      assert.equal(cute.rand(5, i), u[i])
      assert.equal(cute.randint(5, 2 ^ 32 - 150 + i), r[i])
      assert.equal(cute.randn(5, 7 + i), z[i])
    end
  end)

  it("refuse seeds and offsets that are not non-negative integers", function()
    assert.error_matches(function() cute.rand(-1, 0) end,
      "rand: the seed must be a non%-negative integer below 2%^53")
    assert.error_matches(function() cute.randn(1, 0.5) end, "randn: the offset must be a non%-negative integer")
    assert.error_matches(function() cute.rand_host(1, 10, { kind = "normal" }) end,
      'rand_host: kind must be "rand", "randint" or "randn", got normal')
    assert.error_matches(function() cute.rand_host(1, -1) end, "rand_host: n must be a non%-negative integer")
  end)
end)

-- A kernel writing the streams for offsets base + i.
local streams = cute.kernel(function(u, w, z, q, seed, base)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(u)), function()
    local o = base + i:to(cute.i64)
    u[i] = cute.rand(seed, o)
    w[i] = cute.randint(seed, o)
    z[i] = cute.randn(seed, o)
    local a, b, c, d = cute.rand4(seed, o)
    q[{ 0, i }], q[{ 1, i }], q[{ 2, i }], q[{ 3, i }] = a, b, c, d
  end)
end)

local function args(fake, n)
  local mk = fake and cute.fake_tensor or cute.tensor
  return mk(cute.f32, n), mk(cute.u32, n), mk(cute.f32, n), mk(cute.f32, { 4, n })
end

-- docs/interop.md's dropout: element i kept when rand(seed, i) >= p, scaled by 1 / (1 - p).
local dropout = cute.kernel(function(x, y, p, seed)
  local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
  cute.if_(i:lt(cute.size(x)), function()
    local keep = cute.rand(seed, i):ge(p)
    y[i] = cute.where(keep, x[i] / (1 - p), 0)
  end)
end)

describe("cute.rand in kernels", function()
  it("compiles the dropout of docs/interop.md", function()
    local ptx = dropout:compile(cute.fake_tensor(cute.f32, 4096), cute.fake_tensor(cute.f32, 4096), cute.f32(0.25),
      cute.u32(1)):ptx()
    assert.truthy(ptx:find("mul%.hi%.u32"))
  end)

  it("drops what the host's mask says #gpu", function()
    local n, p, seed = 100000, 0.25, 2024
    local x = cute.tensor(cute.f32, n):uniform(1, 2, 1)
    local y = cute.tensor(cute.f32, n)
    dropout { grid = math.ceil(n / 256), block = 256 }(x, y, cute.f32(p), cute.u32(seed))
    local hx, hy = x:to_host():doubles(), y:to_host():doubles()
    local mask = cute.rand_host(seed, n)
    local kept = 0
    for i = 0, n - 1 do
      if mask[i] >= p then
        kept = kept + 1
        assert.is_true(math.abs(hy[i] - hx[i] / (1 - p)) <= 1e-6 * hy[i], i)
      else
        assert.equal(0, hy[i])
      end
    end
    assert.is_true(math.abs(kept / n - (1 - p)) < 0.01, kept)
  end)


  it("compiles without a GPU: umulhi, no 64-bit multiplies, PTX mul.hi.u32", function()
    local u, w, z, q = args(true, 1000)
    local c = streams:compile(u, w, z, q, cute.u64(1), cute.i64(0))
    local ptx = c:ptx()
    local _, hi = ptx:gsub("mul%.hi%.u32", "")
    assert.is_true(hi >= 19, "mul.hi.u32 x" .. hi) -- 20 a call, less what folds (counter words 0)
    assert.is_nil(ptx:find("mul%.hi%.u64"))
    assert.truthy(c:ir():find("umulhi"))
    assert.is_true(#c:cubin() > 0) -- ptxas takes it
  end)

  it("emits rounds that give the known answers (traced constants, folded by the IR)", function()
    local kat = cute.kernel(function(out, which)
      local function u(x) return cute.to(x, cute.u32) end
      local w = { cute.philox4x32({ u(0x243f6a88), u(0x85a308d3), u(0x13198a2e), u(0x03707344) },
        { u(0xa4093822), u(0x299f31d0) }) }
      out[0] = w[which]
    end)
    local want = { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 }
    for j = 1, 4 do
      local ir = kat:compile(cute.fake_tensor(cute.u32, 1), cute.constexpr(j)):ir()
      local stored = ir:match("store %%1, %%(%d+)")
      local v = want[j] >= 2 ^ 31 and want[j] - 2 ^ 32 or want[j] -- the IR prints i32
      assert.equal(tostring(v), ir:match("%%" .. stored .. " = const (%-?%d+)"), ir)
    end
  end)

  it("folds to the host's value when seed and offset are known at trace time", function()
    local k = cute.kernel(function(out)
      out[0] = cute.randint(cute.to(77, cute.u32), 5) -- a u32 value the IR folds
    end)
    local ir = k:compile(cute.fake_tensor(cute.u32, 1)):ir()
    local stored = ir:match("store %%1, %%(%d+)")
    local want = cute.randint(77, 5)
    if want >= 2 ^ 31 then want = want - 2 ^ 32 end -- the IR prints i32
    assert.equal(tostring(want), ir:match("%%" .. stored .. " = const (%-?%d+)"), ir)
  end)

  it("refuses values that are not integers", function()
    local k = cute.kernel(function(out, x)
      out[0] = cute.rand(x, 0)
    end)
    assert.error_matches(function() k:compile(cute.fake_tensor(cute.f32, 1), cute.f32(1)) end,
      "rand: the seed must be an integer value %(i32, u32, i64, u64%), got a f32 value")
  end)

  it("gives the host's stream bit for bit (randn within a few ulps) #gpu", function()
    local n = 2 ^ 18
    local u, w, z, q = args(false, n)
    for _, case in ipairs { { cute.u32(1234), cute.i64(0), 1234, 0 },
      { cute.u64(0x1234567890ULL), cute.i64(2 ^ 32 - 1000), 0x1234567890, 2 ^ 32 - 1000 } } do
      streams { grid = n / 256, block = 256 }(u, w, z, q, case[1], case[2])
      local seed, base = case[3], case[4]
      local hu, hw, hz = u:to_host():doubles(), w:to_host():doubles(), z:to_host():doubles()
      local hq = q:to_host()
      local ru = cute.rand_host(seed, n, { offset = base })
      local rw = cute.rand_host(seed, n, { offset = base, kind = "randint" })
      local rz = cute.rand_host(seed, n, { offset = base, kind = "randn" })
      local maxdiff = 0
      for i = 0, n - 1 do
        if hu[i] ~= ru[i] or hw[i] ~= rw[i] then
          error(string.format("element %d: GPU %s %s, host %s %s", i, hu[i], hw[i], ru[i], rw[i]))
        end
        maxdiff = math.max(maxdiff, math.abs(hz[i] - rz[i]) / math.max(1, math.abs(rz[i])))
      end
      for i = 0, n - 1, 997 do
        assert.same({ cute.rand4(seed, base + i) }, { hq[{ 0, i }], hq[{ 1, i }], hq[{ 2, i }], hq[{ 3, i }] })
      end
      print(string.format("randn: largest difference GPU - host %.3g (relative above 1)", maxdiff))
      assert.is_true(maxdiff < 2 ^ -18, maxdiff)
    end
  end)
end)
