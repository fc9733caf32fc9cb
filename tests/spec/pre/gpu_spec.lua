-- Plain-Lua kernels (the preprocessor) on the GPU, each result checked
-- against the same Lua code run on the CPU: loops with carried values,
-- merges after if/elseif, break and continue, repeat ... until.
local cute = require "cute"

local function poison(t)
  t:fill(0 / 0)
  return t
end

local function randoms(n, lo, hi)
  local v = {}
  for i = 1, n do v[i] = lo + (hi - lo) * math.random() end
  return v
end

-- |a - b| within f32 rounding of a sum of n terms of size up to s
local function close(a, b, tol) return math.abs(a - b) <= tol end

describe("plain Lua kernels on the GPU", function()
  it("compute a masked dot product with a carried sum in a run-time loop #gpu", function()
    local dot = cute.kernel(function(x, y, out, n)
      local acc = 0.0
      for k = 0, n - 1 do
        if x[k] ~= 0 and y[k] > 0 then acc = acc + x[k] * y[k] end
      end
      out[0] = acc
    end)
    local n = 1000
    local xv, yv = randoms(n, -1, 1), randoms(n, -1, 1)
    for i = 1, n, 7 do xv[i] = 0 end
    local x, y = cute.tensor(cute.f32, n):copy_from(xv), cute.tensor(cute.f32, n):copy_from(yv)
    local out = poison(cute.tensor(cute.f32, 1))
    dot { grid = 1, block = 1 }(x, y, out, cute.i32(n))
    local hx, hy = x:to_table(), y:to_table() -- the f32 values
    local want = 0
    for i = 1, n do
      if hx[i] ~= 0 and hy[i] > 0 then want = want + hx[i] * hy[i] end
    end
    assert.is_true(close(out:to_table()[1], want, 1e-2), out:to_table()[1] .. " against " .. want)
  end)

  it("merge after if/elseif/else, and break and continue in nested loops, per thread #gpu", function()
    local k = cute.kernel(function(x, out, n, m)
      local i = cute.block_idx().x * cute.block_dim().x + cute.thread_idx().x
      if i >= n then return end
      local s = 0.0
      local steps = 0
      for r = 0, m - 1 do
        local v = x[(i + r) % n]
        if v < -0.5 then break end
        if v < 0 then goto continue end
        local w
        if v < 0.25 then w = 1.0 elseif v < 0.5 then w = v * 2 else w = v end
        s = s + w
        steps = steps + 1
        ::continue::
      end
      local j = 0
      while j < steps and j < 3 do j = j + 1 end
      out[i] = s + j:to(cute.f32) * 1000
    end)
    local n, m = 777, 40
    local xv = randoms(n, -0.6, 1)
    local x, out = cute.tensor(cute.f32, n):copy_from(xv), poison(cute.tensor(cute.f32, n))
    k { grid = cute.ceil_div(n, 128), block = 128 }(x, out, cute.i32(n), cute.i32(m))
    local hx, ho = x:to_table(), out:to_table()
    for i = 0, n - 1 do
      local s, steps = 0, 0
      for r = 0, m - 1 do
        local v = hx[(i + r) % n + 1]
        if v < -0.5 then break end
        if v >= 0 then
          s = s + (v < 0.25 and 1 or (v < 0.5 and v * 2 or v))
          steps = steps + 1
        end
      end
      local want = s + math.min(steps, 3) * 1000
      if not close(ho[i + 1], want, 1e-2) then error(string.format("out[%d] = %g, expected %g", i, ho[i + 1], want)) end
    end
  end)

  it("run repeat ... until with a run-time condition at least once #gpu", function()
    local k = cute.kernel(function(out, n)
      local i = cute.thread_idx().x
      local c = 0
      repeat
        c = c + 2
      until c >= n + i
      out[i] = c:to(cute.f32)
    end)
    local out = poison(cute.tensor(cute.f32, 64))
    k { grid = 1, block = 64 }(out, cute.i32(-10))
    for i, v in ipairs(out:to_table()) do
      local c = 0
      repeat c = c + 2 until c >= -10 + (i - 1)
      assert.equal(c, v)
    end
  end)
end)
