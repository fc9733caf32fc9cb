-- cute.tensor's host side: coordinate order for every layout (row-major,
-- permuted, with holes), fills that touch only the tensor's elements, and
-- host arrays beyond LuaJIT's own size limit.
local cute = require "cute"
local tensor = require "cute.tensor"

-- Layouts covering the cases: identity, row-major, a permutation of the
-- span (dense), nested modes, holes, broadcast (stride 0) and size-1 modes.
local LAYOUTS = {
  cute.make_layout({ 5, 7 }),
  cute.make_layout({ 5, 7 }, { 7, 1 }),
  cute.make_layout({ 3, { 2, 4 } }, { 8, { 1, 2 } }),
  cute.make_layout({ { 2, 3 }, 4 }, { { 12, 4 }, 1 }),
  cute.make_layout({ 4, 3 }, { 1, 10 }),
  cute.make_layout({ 1, 6, 1 }, { 99, 1, 7 }),
  cute.make_layout(9),
}

describe("cute.tensor on the host", function()
  it("walks offsets in coordinate order as the layout maps them", function()
    local all = { unpack(LAYOUTS) }
    all[#all + 1] = cute.make_layout({ 4, 3 }, { 0, 1 })
    all[#all + 1] = cute.make_layout({ { 2, 2 }, { 3, 2 } }, { { 1, 12 }, { 2, 6 } })
    for _, l in ipairs(all) do
      local got = {}
      tensor._each_offset(l, function(i, off) got[i + 1] = off end)
      assert.equal(cute.size(l), #got, tostring(l))
      for i = 0, cute.size(l) - 1 do assert.equal(l(i), got[i + 1], tostring(l) .. " at " .. i) end
    end
  end)

  it("gives host arrays past 2 GiB", function()
    local n = 2 ^ 31 / 8 + 16 -- just over 2 GiB of doubles: beyond ffi.new
    local a = tensor._host_array("double", n)
    a[n - 1] = 42.5
    a[0] = -1
    assert.equal(42.5, a[n - 1])
    assert.equal(-1, a[0])
  end)
end)

describe("integer fills out of the dtype's range", function()
  local sim = require("tests.spec.trace.helper").simulator()
  setup(sim.enter)
  teardown(sim.leave)

  -- every path refuses alike, before writing: a compact layout (the host's direct
  -- encoding), a permuted one and one with holes (staged element by element); the
  -- device's fill takes the same check (the #gpu test below)
  local layouts = { cute.make_layout(300), cute.make_layout({ 20, 15 }, { 15, 1 }),
    cute.make_layout({ 20, 15 }, { 1, 32 }) }

  it("are refused by iota, uniform and normal, naming the first value that does not fit", function()
    for _, l in ipairs(layouts) do
      local t = cute.tensor(cute.u8, l)
      t:fill(9)
      local cases = {
        { function() t:iota(-7, 1) end, "iota: the value %-7 at index 0 does not fit u8 %(integers 0%.%.255%)" },
        { function() t:iota(0, 1) end, "iota: the value 256 at index 256 does not fit u8" },
        { function() t:iota(250, -1) end, "iota: the value %-1 at index 251 does not fit u8" },
        { function() t:iota(3, 0.5) end, "iota: the value 3%.5 at index 1 does not fit u8" },
        { function() t:iota(1.5, 0) end, "iota: the value 1%.5 at index 0 does not fit u8" },
        { function() t:uniform(-3, 5, 1) end, "uniform: integers in %[%-3, 5%) do not fit u8 %(integers 0%.%.255%)" },
        { function() t:uniform(0, 257, 1) end, "uniform: integers in %[0, 257%) do not fit u8" },
        { function() t:normal(0, 1, 1) end, "normal: u8 is an integer dtype" },
        { function() t:uniform("0", 1) end, "uniform: the bounds must be numbers, got string and number" },
        { function() t:iota(0, {}) end, "iota: start and step must be numbers, got number and table" },
      }
      for _, c in ipairs(cases) do
        local ok, msg = pcall(c[1])
        assert.is_false(ok, tostring(l))
        assert.matches(c[2], tostring(msg), 1)
        assert.matches("tensor_host_spec%.lua:%d+:", tostring(msg)) -- (the caller's line)
      end
      for _, v in ipairs(t:to_table()) do assert.equal(9, v) end -- nothing written
      -- the edges themselves fit
      t:iota(255, 0)
      for _, v in ipairs(t:to_table()) do assert.equal(255, v) end
      t:uniform(254, 256, 5)
      for _, v in ipairs(t:to_table()) do assert.is_true(v == 254 or v == 255) end
      t:free()
    end
    local e = cute.tensor(cute.u8, 256)
    e:iota(255, -1) -- 255 down to 0: every value of u8
    local d = e:to_host():doubles()
    for i = 0, 255 do assert.equal(255 - i, d[i]) end
    e:free()
    local w = cute.tensor(cute.i32, 300)
    local ok, msg = pcall(function() w:iota(2 ^ 31 - 5, 1) end)
    assert.is_false(ok)
    assert.matches("iota: the value 2147483648 at index 5 does not fit i32", msg, 1, true)
    w:iota(-150, 1):free()
  end)
end)

describe("host tensors and fills refuse what they cannot do", function()
  local sim = require("tests.spec.trace.helper").simulator()
  setup(sim.enter)
  teardown(sim.leave)

  it("names the index, the value, the bound or the seed that is wrong, at the caller's line", function()
    local t = cute.tensor(cute.f32, 4):iota(1, 1)
    local h = t:to_host()
    local b = cute.tensor(cute.bool, 3)
    for _, c in ipairs {
      { function() return h[4] end, "host tensor: index 4 is outside its 4 elements %(0 to 3%)" },
      { function() return h[-1] end, "host tensor: index %-1 is outside its 4 elements" },
      { function() return h[1.5] end, "host tensor: index 1%.5 is outside its 4 elements" },
      { function() h[0] = 7 end, "host tensor: h%[0%] = %.%.%. : a host tensor is a read%-only copy" },
      { function() t:fill("x") end, "fill: expected a number, got string" },
      { function() t:fill() end, "fill: expected a number, got nil" },
      { function() t:fill(true) end, "fill: expected a number, got the boolean true %(for a f32 tensor%)" },
      { function() b:fill("1") end, "fill: expected a number or a boolean, got string" },
      { function() t:uniform(0, 1, "s") end,
        "uniform: the seed must be a whole number from 0 %(or a 64%-bit integer%), got s" },
      { function() t:uniform(0, 1, 1.5) end, "uniform: the seed must be a whole number from 0" },
      { function() t:normal(0, 1, -1) end, "normal: the seed must be a whole number from 0" },
      { function() t:uniform(1, 0) end, "uniform: lo %(1%) is above hi %(0%); the values are in %[lo, hi%)" },
      { function() t:uniform(0 / 0, 1) end, "uniform: the bounds must be finite, got nan and 1" },
      { function() t:normal(0, -2) end, "normal: std must be 0 or more, got %-2" },
      { function() t:normal(0, math.huge) end, "normal: the mean and std must be finite" },
      -- host pointers at NULL or in the first page (they crashed the copy)
      { function() t:copy_to(require("ffi").cast("float *", 0)) end, "copy to host: the host pointer is NULL" },
      { function() t:copy_from(require("ffi").cast("float *", 8)) end,
        "copy to device: the host pointer 8 is below 65536: no memory there" },
      { function() cute.host_tensor(cute.f32, 4, nil, require("ffi").cast("float *", 16)) end,
        "cute%.host_tensor: the host pointer 16 is below 65536" },
    } do
      local ok, msg = pcall(c[1])
      assert.is_false(ok)
      assert.matches(c[2], tostring(msg))
      assert.matches("tensor_host_spec%.lua:%d+:", tostring(msg))
    end
    -- nothing was written, and what is right still works
    assert.same({ 1, 2, 3, 4 }, t:to_table())
    assert.equal(4, h[3])
    b:fill(true)
    assert.same({ 1, 1, 1 }, b:to_table())
    t:uniform(2, 2, require("ffi").new("uint64_t", 7)) -- (a 64-bit seed)
    assert.same({ 2, 2, 2, 2 }, t:to_table())
    t:free()
    b:free()
  end)
end)

describe("cute.tensor on the GPU", function()
  it("keeps CuTe's coordinate order through copy_from, to_table, doubles and iota for every layout #gpu", function()
    for _, l in ipairs(LAYOUTS) do
      local n = cute.size(l)
      local t = cute.tensor(cute.f32, l)
      local vals = {}
      for i = 1, n do vals[i] = math.random(-1000, 1000) / 8 end
      t:copy_from(vals)
      local back, d = t:to_table(), t:to_host():doubles()
      for i = 1, n do
        assert.equal(vals[i], back[i], tostring(l))
        assert.equal(vals[i], d[i - 1], tostring(l))
        -- and the element sits where the layout puts it
        assert.equal(vals[i], t:to_host()[i - 1], tostring(l))
      end
      t:iota(3, 2)
      d = t:to_host():doubles()
      for i = 0, n - 1 do assert.equal(3 + 2 * i, d[i], tostring(l)) end
      t:free()
    end
  end)

  it("fills and randomises only the tensor's elements, never the holes between them #gpu", function()
    for _, l in ipairs(LAYOUTS) do
      local span = cute.cosize(l)
      local whole = cute.tensor(cute.f32, span)
      whole:fill(-7)
      local t = tensor.from_ptr(whole:data_ptr(), cute.f32, l)
      t:fill(0.5)
      local mine = {}
      for i = 0, cute.size(l) - 1 do mine[l(i)] = true end
      local w = whole:to_table()
      for off = 0, span - 1 do assert.equal(mine[off] and 0.5 or -7, w[off + 1], tostring(l) .. " offset " .. off) end
      whole:fill(-7)
      t:uniform(1, 2, 77)
      w = whole:to_table()
      local d = t:to_host():doubles()
      for off = 0, span - 1 do
        if mine[off] then
          assert.is_true(w[off + 1] >= 1 and w[off + 1] < 2, tostring(l))
        else
          assert.equal(-7, w[off + 1], tostring(l))
        end
      end
      for i = 0, cute.size(l) - 1 do assert.equal(w[l(i) + 1], d[i]) end
      whole:free()
    end
  end)
end)

describe("fills on the device", function()
  local rt = require("cute._c").rt
  local ffi = require "ffi"

  -- the host generator's values for n elements, encoded to dt and back
  local function host_values(dt, n, normal, a, b, seed)
    local vals = ffi.new("double[?]", n)
    rt.host_random(vals, cute.f64.code, n, normal and 1 or 0, a, b, seed)
    if dt.is_integer and not normal then
      for i = 0, n - 1 do vals[i] = math.floor(vals[i]) end
    end
    local cell = ffi.new(dt.storage_array, n)
    rt.from_doubles(cell, dt.code, vals, n)
    local out = ffi.new("double[?]", n)
    rt.to_doubles(out, cell, dt.code, n)
    return out
  end

  it("give the host generator's values, in coordinate order, for every layout kind and dtype #gpu", function()
    local layouts = { cute.make_layout(70001), cute.make_layout({ 300, 250 }, { 250, 1 }) }
    for _, dt in ipairs { cute.f32, cute.bf16, cute.f16, cute.f64, cute.i32, cute.u8 } do
      for _, l in ipairs(layouts) do
        local n = cute.size(l)
        local t = cute.tensor(dt, l)
        local lo, hi = -3, 5
        if dt == cute.u8 then lo, hi = 0, 200 end
        -- uniform: exactly the host's values (one rounding from f64)
        t:fill(0)
        t:uniform(lo, hi, 1234)
        local got, want = t:to_host():doubles(), host_values(dt, n, false, lo, hi, 1234)
        for i = 0, n - 1 do
          if got[i] ~= want[i] then
            error(string.format("%s %s uniform element %d: %.17g, host %.17g", dt.name, tostring(l), i, got[i],
              want[i]))
          end
          assert(got[i] >= lo and got[i] <= hi)
        end
        -- normal: the host's values up to the last bits of log and cos
        if dt.is_float then
          t:normal(1, 2, 99)
          got, want = t:to_host():doubles(), host_values(dt, n, true, 1, 2, 99)
          local ulp = ({ f32 = 2 ^ -22, bf16 = 2 ^ -7, f16 = 2 ^ -10, f64 = 2 ^ -40 })[dt.name]
          local sum, sq = 0, 0
          for i = 0, n - 1 do
            if math.abs(got[i] - want[i]) > ulp * math.max(1, math.abs(want[i])) then
              error(string.format("%s normal element %d: %.17g, host %.17g", dt.name, i, got[i], want[i]))
            end
            sum, sq = sum + got[i], sq + got[i] ^ 2
          end
          local mean = sum / n
          assert.is_true(math.abs(mean - 1) < 0.05, dt.name .. " mean " .. mean)
          assert.is_true(math.abs(math.sqrt(sq / n - mean ^ 2) - 2) < 0.05, dt.name .. " std")
        end
        -- iota, in coordinate order (u8 holds no 65536 different values: a constant
        -- there, and the values that do not fit refused before the kernel runs)
        local start, step = -7, 1
        if dt == cute.u8 then
          start, step = 200, 0
          local ok, msg = pcall(function() t:iota(-7, 1) end)
          assert.is_false(ok)
          assert.matches("iota: the value %-7 at index 0 does not fit u8", msg)
          ok, msg = pcall(function() t:uniform(-3, 5, 1) end)
          assert.is_false(ok)
          assert.matches("uniform: integers in %[%-3, 5%) do not fit u8", msg)
        end
        if dt == cute.i32 then
          local ok, msg = pcall(function() t:normal(0, 1, 1) end)
          assert.is_false(ok)
          assert.matches("normal: i32 is an integer dtype", msg)
        end
        t:iota(start, step)
        got = t:to_host():doubles()
        for i = 0, n - 1, 97 do
          local want_i = start + i * step
          if dt == cute.bf16 or dt == cute.f16 then
            local c = ffi.new(dt.storage_array, 1)
            rt.from_doubles(c, dt.code, ffi.new("double[1]", want_i), 1)
            local d = ffi.new("double[1]")
            rt.to_doubles(d, c, dt.code, 1)
            want_i = d[0]
          end
          assert.equal(want_i, got[i], dt.name .. " iota " .. i)
        end
        t:free()
      end
    end
  end)
end)
