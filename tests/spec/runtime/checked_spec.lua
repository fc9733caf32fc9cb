-- Checked kernels (cute.set_checked, the checked option, CUTELUA_CHECKED=1):
-- an out-of-bounds access or a failed cute.assert_ raises a Lua error naming
-- the user's line, is not made, and leaves the GPU usable: the next launch in
-- the same process runs and is right.
local cute = require "cute"

local function poison(t)
  t:fill(0 / 0)
  return t
end

-- y[i + 1] = 2 x[i]: the last thread writes one element past y
local function shifted()
  return cute.kernel(function(x, y, n)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(i:lt(n), function()
      y[i + 1] = x[i] * 2.0 -- the line the error names
    end)
  end, { name = "shifted", checked = true })
end
local SHIFTED_LINE = 17

local function doubled(checked)
  return cute.kernel(function(x, y, n)
    local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
    cute.if_(i:lt(n), function() y[i] = x[i] * 2.0 end)
  end, { name = "doubled", checked = checked })
end

local function count(s, pat)
  local _, n = s:gsub(pat, "")
  return n
end

describe("checked kernels", function()
  it("get an extent parameter per tensor and a record pointer, after the user's parameters", function()
    local x, y = cute.fake_tensor(cute.f32, { 1024 }), cute.fake_tensor(cute.f32, { 1024 })
    local ir = shifted():compile(x, y, cute.i32(1024)):ir()
    local sig = ir:match("kernel @shifted%((.-)%)")
    -- x and y (pointer, dynamic extent), n, then two extents and the record
    assert.equal("%1: ptr<f32, global, 16>, %2: i32, %3: ptr<f32, global, 16>, %4: i32, %5: i32, %6: i64, %7: i64, "
      .. "%8: ptr<i32, global, 16>", sig)
    assert.equal(2, count(ir, "atom%.cas")) -- one record per access site: the load of x, the store to y
    assert.equal(2, count(ir, "select"))    -- each access is redirected when out of bounds
    local plain = doubled(false):compile(x, y, cute.i32(1024)):ir()
    assert.equal(0, count(plain, "atom%.cas"))
    assert.matches("kernel @doubled%(%%1: ptr<f32, global, 16>, %%2: i32, %%3: ptr<f32, global, 16>, %%4: i32, "
      .. "%%5: i32%)", plain)
  end)

  it("follow cute.set_checked for kernels without the option, and compile to PTX", function()
    local x, y = cute.fake_tensor(cute.f32, { 256 }), cute.fake_tensor(cute.f32, { 256 })
    local k = doubled(nil)
    assert.equal(0, count(k:compile(x, y, cute.i32(256)):ir(), "atom%.cas"))
    local old = cute.set_checked(true)
    local ok, e = pcall(function()
      local c = k:compile(x, y, cute.i32(256))
      assert.equal(2, count(c:ir(), "atom%.cas"))
      assert.matches("atom%.[%w.]*global%.cas", c:ptx())
    end)
    cute.set_checked(old)
    assert(ok, e)
    assert.equal(0, count(k:compile(x, y, cute.i32(256)):ir(), "atom%.cas"))
  end)

  it("check shared memory, cp.async and ldmatrix in the GEMM (dynamic shared memory size)", function()
    local G = require "cute.lib.gemm"
    local cfg = { a_dtype = "bf16", acc_dtype = "f32", a_major = "k", b_major = "mn", a_vec = 8, b_vec = 8,
      group = 8, even = false, beta = false, bm = 64, bn = 64, bk = 32, stages = 3, wm = 2, wn = 2 }
    local function fake(r, c, stride)
      return cute.fake_tensor(cute.bf16, { r, c, 1 }, cute.make_layout({ r, c, 1 }, stride))
    end
    local A, B = fake(256, 128, { 128, 1, 0 }), fake(256, 128, { 1, 256, 0 })
    local C = cute.fake_tensor(cute.f32, { 256, 256, 1 }, cute.make_layout({ 256, 256, 1 }, { 256, 1, 0 }))
    local c = G.kernel(cfg):with({ checked = true }):compile(A, B, C, cute.f32(1), cute.f32(0))
    local ir = c:ir()
    assert.matches("sreg%.dynamic_smem_size", ir)
    assert.matches("cp%.async", ir)
    assert.matches("ldmatrix", ir)
    assert.matches("%%dynamic_smem_size", c:ptx())
  end)

  it("raise at the user's line for an out-of-bounds store, skip it, and the next launch runs #gpu", function()
    local n = 1024
    local big = cute.tensor(cute.f32, { 2 * n }):fill(-1) -- y is its first half: the element past y is big[n]
    local y = poison(big:view(cute.make_layout(n)))
    local xs = {}
    for i = 1, n do xs[i] = math.random() * 100 - 50 end
    local x = cute.tensor(cute.f32, n):copy_from(xs)
    local ok, msg = pcall(function() shifted() { grid = n / 128, block = 128 }(x, y, cute.i32(n)) end)
    assert.is_false(ok)
    assert.matches("kernel 'shifted': out%-of%-bounds store of 4 bytes at [^ ]*checked_spec%.lua:" .. SHIFTED_LINE, msg)
    assert.matches("in block %(7,0,0%) thread %(127,0,0%)", msg) -- the only thread out of bounds: i = 1023
    assert.matches("byte offset 4096 of argument 'y', which has 4096 bytes", msg)
    assert.matches("the GPU stays usable", msg)
    assert.matches("^[^ ]*checked_spec%.lua:%d+:", msg) -- raised at the launching line
    assert.is_false(cute.device_lost())
    local got = big:to_table()
    assert.equal(-1, got[n + 1]) -- the store was not made
    assert.is_true(got[1] ~= got[1]) -- y[0] is written by nobody: still NaN
    local hx = x:to_table()
    for i = 1, n - 1 do assert.equal(2 * hx[i], got[i + 1]) end
    -- the same process launches again, checked and not
    for _, checked in ipairs { true, false } do
      local z = poison(cute.tensor(cute.f32, n))
      doubled(checked) { grid = n / 128, block = 128 }(x, z, cute.i32(n))
      local hz = z:to_table()
      for i = 1, n do assert.equal(hx[i] * 2, hz[i]) end
    end
  end)

  it("stop cute.bench at an out-of-bounds access mid-run; the same process then launches correctly #gpu", function()
    local n = 1024
    local x = cute.tensor(cute.f32, n):uniform(-50, 50)
    local y = cute.tensor(cute.f32, 2 * n):fill(-1):view(cute.make_layout(n))
    local good, bad = doubled(true), shifted()
    local calls = 0
    local ok, msg = pcall(cute.bench, function(i)
      calls = calls + 1
      if i == 30 then bad { grid = n / 128, block = 128 }(x, y, cute.i32(n))
      else good { grid = n / 128, block = 128 }(x, y, cute.i32(n)) end
    end, { warmup_ms = 2, min_time_ms = 20, min_reps = 60 })
    assert.is_false(ok)
    assert.is_true(calls >= 30)
    assert.matches("kernel 'shifted': out%-of%-bounds store of 4 bytes at [^ ]*checked_spec%.lua:" .. SHIFTED_LINE, msg)
    assert.is_false(cute.device_lost())
    -- the next launches in this process, checked and not, compute the right answer on fresh data
    local hx = x:to_table()
    for _, checked in ipairs { true, false } do
      local z = poison(cute.tensor(cute.f32, n))
      doubled(checked) { grid = n / 128, block = 128 }(x, z, cute.i32(n))
      local hz = z:to_table()
      for i = 1, n do assert.equal(hx[i] * 2, hz[i]) end
    end
  end)

  it("report out-of-bounds loads and atomics with their argument #gpu", function()
    local k = cute.kernel(function(x, y)
      local i = cute.thread_idx().x
      y[i] = x[i + 64] -- x has 64 elements
    end, { name = "reads_past", checked = true })
    local x, y = cute.tensor(cute.f32, 64):fill(1), poison(cute.tensor(cute.f32, 64))
    local ok, msg = pcall(function() k { grid = 1, block = 64 }(x, y) end)
    assert.is_false(ok)
    assert.matches("out%-of%-bounds load of 4 bytes", msg)
    assert.matches("of argument 'x', which has 256 bytes %(64 out%-of%-bounds accesses in all", msg)
    -- the loads went to the scratch area: y was written, with whatever it held
    for _, v in ipairs(y:to_table()) do assert.is_true(v == v) end
    local a = cute.kernel(function(c)
      cute.atomic_add(c:ptr_at(cute.thread_idx().x), 1)
    end, { name = "atomics_past", checked = true })
    local c = cute.tensor(cute.i32, 32):fill(0)
    ok, msg = pcall(function() a { grid = 1, block = 40 }(c) end)
    assert.is_false(ok)
    assert.matches("out%-of%-bounds atomic add of 4 bytes .* of argument 'c', which has 128 bytes %(8 out", msg)
    for _, v in ipairs(c:to_table()) do assert.equal(1, v) end
  end)

  it("report shared memory overruns and failed assertions without trapping #gpu", function()
    local s = cute.kernel(function(y)
      local t = cute.thread_idx().x
      local sm = cute.make_smem_tensor(cute.f32, cute.make_layout(128))
      sm[t + 1] = 1.0
      cute.sync_threads()
      y[t] = sm[t]
    end, { name = "smem_past", checked = true })
    local y = poison(cute.tensor(cute.f32, 128))
    local ok, msg = pcall(function() s { grid = 1, block = 128 }(y) end)
    assert.is_false(ok)
    assert.matches("out%-of%-bounds store of 4 bytes .*thread %(127,0,0%): byte offset 512 of a shared memory array, "
      .. "which has 512 bytes", msg)
    local a = cute.kernel(function(x)
      local i = cute.thread_idx().x
      cute.assert_(x[i]:lt(10.0), "x must stay below 10")
    end, { name = "asserts", checked = true })
    local x = cute.tensor(cute.f32, 32):copy_from((function()
      local v = {}
      for i = 1, 32 do v[i] = i == 20 and 99 or i / 4 end
      return v
    end)())
    ok, msg = pcall(function() a { grid = 1, block = 32 }(x) end)
    assert.is_false(ok)
    assert.matches("kernel 'asserts': cute.assert_ failed at [^ ]*checked_spec%.lua:%d+: x must stay below 10, "
      .. "in block %(0,0,0%) thread %(19,0,0%)", msg)
    assert.is_false(cute.device_lost())
  end)

  it("find no false out-of-bounds accesses in the GEMM's predicated edges #gpu", function()
    local old = cute.set_checked(true)
    local ok, e = pcall(function()
      local m, n, k = 77, 90, 53
      local A = cute.tensor(cute.bf16, { m, k }, "row"):uniform(-1, 1)
      local B = cute.tensor(cute.bf16, { k, n }, "row"):uniform(-1, 1)
      local C = poison(cute.tensor(cute.f32, { m, n }, "row"))
      cute.gemm(A, B, C)
      local a, b, c = A:to_host():doubles(), B:to_host():doubles(), C:to_host():doubles()
      for i = 0, m - 1 do
        for j = 0, n - 1 do
          local ref, mag = 0, 0
          for kk = 0, k - 1 do
            local p = a[i + m * kk] * b[kk + k * j]
            ref, mag = ref + p, mag + math.abs(p)
          end
          local g = c[i + m * j]
          assert(math.abs(g - ref) <= 1e-5 * math.max(mag, 1), string.format("C[%d,%d] = %.9g, expected %.9g", i, j,
            g, ref))
        end
      end
    end)
    cute.set_checked(old)
    assert(ok, e)
  end)
end)
