-- Memory-bound kernels of cute.lib against the copy bandwidth of cuMemcpyDtoD
-- measured in the same run (bytes read + written): copy, a*x + b, add with
-- broadcast, sum and max over a vector, row reductions, transpose. Every
-- kernel is checked against a CPU reference on fresh random inputs, its
-- output poisoned first.
local cute = require "cute"
local ffi = require "ffi"
local ew = require "cute.lib.elementwise"
local red = require "cute.lib.reduce"
local tr = require "cute.lib.transpose"

local GIB = 1024 ^ 3

-- Every element of t must have been written (no NaN poison left).
local function written(t)
  local h = t:to_host():doubles()
  local n = t:size()
  for i = 0, n - 1 do
    if h[i] ~= h[i] then return false, "element " .. i .. " was not written", h end
  end
  return true, nil, h
end

local function poison(t) return t:fill(0 / 0) end

return function(h)
  local seed = 100
  local function next_seed()
    seed = seed + 1
    return seed
  end

  -- copy and a*x + b, f32 and bf16, 1 GiB each way
  for _, dt in ipairs { cute.f32, cute.bf16 } do
    local n = h:size(GIB / dt.bytes, 16 * 1024 * 1024 / dt.bytes + 333)
    local shape = string.format("%.0f MiB", n * dt.bytes / 1024 ^ 2)
    h:case {
      name = "copy (16-byte vectors)", shape = shape, dtype = dt.name, bytes = 2 * n * dt.bytes, peer = "copy",
      goal = 0.95,
      setup = function()
        local s = { x = cute.tensor(dt, n):uniform(-1, 1, next_seed()), y = poison(cute.tensor(dt, n)) }
        return s
      end,
      run = function(s) ew.copy(s.x, s.y) end,
      check = function(s)
        local ok, msg, hy = written(s.y)
        if not ok then return false, msg end
        local hx = s.x:to_host():doubles()
        for i = 0, n - 1 do
          if hx[i] ~= hy[i] then return false, "element " .. i end
        end
        return true
      end,
      teardown = function(s) s.x:free(); s.y:free() end,
    }
    h:case {
      name = "a*x + b", shape = shape, dtype = dt.name, bytes = 2 * n * dt.bytes, peer = "copy", goal = 0.95,
      setup = function()
        return { x = cute.tensor(dt, n):uniform(-1, 1, next_seed()), y = poison(cute.tensor(dt, n)) }
      end,
      run = function(s) ew.axpb(s.x, s.y, 1.5, -0.25) end,
      check = function(s)
        local ok, msg, hy = written(s.y)
        if not ok then return false, msg end
        local hx = s.x:to_host():doubles()
        -- f32: within one rounding of the exact result (fused or not); bf16: one bf16 rounding
        local tol = dt == cute.f32 and 2 ^ -22 or 2 ^ -7
        for i = 0, n - 1 do
          local want = 1.5 * hx[i] - 0.25
          if math.abs(hy[i] - want) > tol * (math.abs(want) + 2 ^ -6) then
            return false, string.format("element %d: %.8g, expected %.8g", i, hy[i], want)
          end
        end
        return true
      end,
      teardown = function(s) s.x:free(); s.y:free() end,
    }
  end

  -- add with broadcast: c[i, j] = a[i, j] + b[j]
  do
    local N = 4096
    local Mrows = h:size(GIB / 4 / N, 1025)
    h:case {
      name = "add with broadcast", shape = Mrows .. "x" .. N, dtype = "f32", bytes = 2 * Mrows * N * 4, peer = "copy",
      goal = 0.95,
      setup = function()
        return { a = cute.tensor(cute.f32, { Mrows, N }, "row"):uniform(-1, 1, next_seed()),
          b = cute.tensor(cute.f32, N):uniform(-1, 1, next_seed()),
          c = poison(cute.tensor(cute.f32, { Mrows, N }, "row")) }
      end,
      run = function(s) ew.add_broadcast(s.a, s.b, s.c) end,
      check = function(s)
        local ok, msg, hc = written(s.c)
        if not ok then return false, msg end
        local ha, hb = s.a:to_host(), s.b:to_host():doubles()
        local ad = ha:doubles()
        -- coordinate order of a row-major (M, N) tensor: i + j * M
        for j = 0, N - 1, 7 do
          for i = 0, Mrows - 1, 13 do
            local want = tonumber(ffi.new("float", ad[i + j * Mrows] + hb[j]))
            if hc[i + j * Mrows] ~= want then return false, string.format("(%d,%d)", i, j) end
          end
        end
        return true
      end,
      teardown = function(s) s.a:free(); s.b:free(); s.c:free() end,
    }
  end

  -- sum and max over a vector
  for _, op in ipairs { "sum", "max" } do
    local n = h:size(GIB / 4, 16 * 1024 * 1024 + 777)
    h:case {
      name = op .. " of a vector", shape = string.format("%.0f MiB", n * 4 / 1024 ^ 2), dtype = "f32", bytes = n * 4,
      peer = "copy", goal = 0.90,
      setup = function()
        local s = { x = cute.tensor(cute.f32, n):uniform(-1, 1, next_seed()) }
        s.partial = cute.tensor(cute.f32, red.blocks(n, cute.f32))
        s.out = poison(cute.tensor(cute.f32, 1))
        return s
      end,
      run = function(s) red.launch(s.x, op, s.partial, s.out) end,
      check = function(s)
        local hx = s.x:to_host():doubles()
        local ref, mag = op == "sum" and 0 or -math.huge, 0
        for i = 0, n - 1 do
          if op == "sum" then
            ref = ref + hx[i]
            mag = mag + math.abs(hx[i])
          else
            ref = math.max(ref, hx[i])
          end
        end
        local got = s.out:to_table()[1]
        if op == "max" then return got == ref, string.format("%.9g vs %.9g", got, ref) end
        -- f32 partial sums: the error is bounded by a few ulps of the sum of magnitudes
        return math.abs(got - ref) <= 1e-6 * mag, string.format("%.9g vs %.9g (magnitudes %.3g)", got, ref, mag)
      end,
      teardown = function(s) s.x:free(); s.partial:free(); s.out:free() end,
    }
  end

  -- row reductions of a 32768 x 4096 matrix
  do
    local Mr, N = h:size(32768, 513), 4096
    h:case {
      name = "row sums", shape = Mr .. "x" .. N, dtype = "f32", bytes = Mr * N * 4 + Mr * 4, peer = "copy",
      goal = 0.90,
      setup = function()
        return { x = cute.tensor(cute.f32, { Mr, N }, "row"):uniform(-1, 1, next_seed()),
          y = poison(cute.tensor(cute.f32, Mr)) }
      end,
      run = function(s) red.rows(s.x, s.y, "sum") end,
      check = function(s)
        local ok, msg, hy = written(s.y)
        if not ok then return false, msg end
        local hx = s.x:to_host():doubles()
        for i = 0, Mr - 1, math.max(1, math.floor(Mr / 300)) do
          local ref, mag = 0, 0
          for j = 0, N - 1 do
            ref = ref + hx[i + j * Mr]
            mag = mag + math.abs(hx[i + j * Mr])
          end
          if math.abs(hy[i] - ref) > 1e-6 * mag then return false, string.format("row %d: %g vs %g", i, hy[i], ref) end
        end
        return true
      end,
      teardown = function(s) s.x:free(); s.y:free() end,
    }
  end

  -- transpose 8192 x 8192 f32 through swizzled shared memory: 64 x 64 tiles
  -- with 16-byte accesses (cute.lib's), and the simple 32 x 32 scalar kernel
  local variants = { { "transpose (swizzled smem)", tr.transpose }, { "transpose, 32x32 scalar", tr.transpose32 } }
  for _, variant in ipairs(variants) do
    local Mr, N = h:size(8192, 1000), h:size(8192, 777)
    local run = variant[2]
    h:case {
      name = variant[1], shape = Mr .. "x" .. N, dtype = "f32", bytes = 2 * Mr * N * 4,
      peer = "copy", goal = 0.85,
      setup = function()
        return { a = cute.tensor(cute.f32, { Mr, N }, "row"):uniform(-1, 1, next_seed()),
          b = poison(cute.tensor(cute.f32, { N, Mr }, "row")) }
      end,
      run = function(s) run(s.a, s.b) end,
      check = function(s)
        local ok, msg, hb = written(s.b)
        if not ok then return false, msg end
        local ha = s.a:to_host():doubles()
        -- a (Mr, N) in coordinate order: a[i, j] at i + j * Mr; b (N, Mr): b[j, i] at j + i * N
        for i = 0, Mr - 1 do
          for j = 0, N - 1 do
            if hb[j + i * N] ~= ha[i + j * Mr] then return false, string.format("(%d,%d)", i, j) end
          end
        end
        return true
      end,
      teardown = function(s) s.a:free(); s.b:free() end,
    }
  end
end
