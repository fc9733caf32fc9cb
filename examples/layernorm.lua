-- Tutorial: layer normalisation, forward and backward (after Triton's tutorial
-- 05), the cutelua way.
--   cutelua examples/layernorm.lua [ROWS COLS]
--
-- Forward, per row x of length n:  mean = sum(x) / n,  rstd = 1 / sqrt(var + eps),
--   xhat = (x - mean) * rstd,  y = xhat * w + b;  mean and rstd are kept for
--   the backward pass.
-- Backward, given dy:  dxhat = dy * w,
--   dx = rstd * (dxhat - (sum(dxhat) + xhat * sum(dxhat * xhat)) / n)   per row,
--   dw = sum over rows of dy * xhat,  db = sum over rows of dy.
-- dx is a row-wise kernel like the forward one (one block a row, block
-- reductions). dw and db sum over rows: the block of row r adds its dy * xhat
-- and dy into row r % G of a G x n partial buffer with atomic adds (G rows
-- spread the contention: ROWS / G blocks meet on each), then a second small
-- kernel sums the G partials of each column (Triton's tutorial uses a lock
-- per group instead; the atomics make the last bits of dw and db depend on
-- the order the blocks ran in).
-- Everything is plain Lua (the preprocessor turns the loops over run-time
-- bounds into GPU loops).
--
-- 1. The three kernels, compiled (no GPU needed).
-- 2. With a GPU (or, without one, on the CPU simulator: small, untimed): y,
--    dx, dw, db checked against float64 on the CPU, and the
--    forward timed against the copy bandwidth.
local cute = require "cute"
local common = require "cute.lib.common"

local ROWS = tonumber(arg and arg[1]) or 1024
local COLS = tonumber(arg and arg[2]) or 2048
local THREADS, G = 256, 64
local EPS = 1e-5

local forward = cute.kernel("layernorm_fwd", function(x, w, b, y, mean, rstd, eps)
  local r, t = cute.block_idx().x, cute.thread_idx().x
  local n = x.layout.shape[2]
  local s = 0.0
  for j = t, n - 1, THREADS do s = s + x[{ r, j }]:to(cute.f32) end
  local mu = common.block_reduce(s, common.add, 0.0, THREADS) / n:to(cute.f32)
  local v = 0.0
  for j = t, n - 1, THREADS do
    local d = x[{ r, j }]:to(cute.f32) - mu
    v = v + d * d
  end
  local rs = cute.rsqrt(common.block_reduce(v, common.add, 0.0, THREADS) / n:to(cute.f32) + eps)
  for j = t, n - 1, THREADS do
    local xhat = (x[{ r, j }]:to(cute.f32) - mu) * rs
    y[{ r, j }] = (xhat * w[j]:to(cute.f32) + b[j]:to(cute.f32)):to(y.dtype)
  end
  if t == 0 then
    mean[r] = mu
    rstd[r] = rs
  end
end, { max_threads = THREADS })

-- dx for row r, and row r's dy * xhat and dy added into partial group r % G
local backward = cute.kernel("layernorm_bwd", function(x, w, dy, mean, rstd, dx, pdw, pdb)
  local r, t = cute.block_idx().x, cute.thread_idx().x
  local n = x.layout.shape[2]
  local mu, rs = mean[r], rstd[r]
  local s1, s2 = 0.0, 0.0
  for j = t, n - 1, THREADS do
    local xhat = (x[{ r, j }]:to(cute.f32) - mu) * rs
    local g = dy[{ r, j }]:to(cute.f32) * w[j]:to(cute.f32)
    s1 = s1 + g
    s2 = s2 + g * xhat
  end
  s1 = common.block_reduce(s1, common.add, 0.0, THREADS) / n:to(cute.f32)
  s2 = common.block_reduce(s2, common.add, 0.0, THREADS) / n:to(cute.f32)
  local grp = r % G
  for j = t, n - 1, THREADS do
    local xhat = (x[{ r, j }]:to(cute.f32) - mu) * rs
    local d = dy[{ r, j }]:to(cute.f32)
    dx[{ r, j }] = (rs * (d * w[j]:to(cute.f32) - s1 - xhat * s2)):to(dx.dtype)
    cute.atomic_add(pdw:ptr_at({ grp, j }), d * xhat)
    cute.atomic_add(pdb:ptr_at({ grp, j }), d)
  end
end, { max_threads = THREADS })

-- dw[j] = sum of the G partials of column j (and db likewise)
local reduce = cute.kernel("layernorm_bwd_dwdb", function(pdw, pdb, dw, db)
  local j = cute.block_idx().x * THREADS + cute.thread_idx().x
  local n = dw.layout.shape[1]
  if j < n then
    local sw, sb = 0.0, 0.0
    for g in cute.range(G, { unroll = 4 }) do -- (a loop on the GPU, not G unrolled loads)
      sw = sw + pdw[{ g, j }]
      sb = sb + pdb[{ g, j }]
    end
    dw[j] = sw:to(dw.dtype)
    db[j] = sb:to(db.dtype)
  end
end, { max_threads = THREADS })

local gpu = cute.gpu_available()
local make = cute.fake_tensor
local x, dy = make(cute.bf16, { ROWS, COLS }, "row"), make(cute.bf16, { ROWS, COLS }, "row")
local y, dx = make(cute.bf16, { ROWS, COLS }, "row"), make(cute.bf16, { ROWS, COLS }, "row")
local w, b = make(cute.f32, { COLS }), make(cute.f32, { COLS })
local mean, rstd = make(cute.f32, { ROWS }), make(cute.f32, { ROWS })
local pdw, pdb = make(cute.f32, { G, COLS }, "row"), make(cute.f32, { G, COLS }, "row")
local dw, db = make(cute.f32, { COLS }), make(cute.f32, { COLS })
local o = gpu and {} or { arch = "sm_90a" }
print(forward:with(o):compile(x, w, b, y, mean, rstd, cute.f32(EPS)):report())
print(backward:with(o):compile(x, w, dy, mean, rstd, dx, pdw, pdb):report())
print(reduce:with(o):compile(pdw, pdb, dw, db):report())
if not gpu then
  print("layernorm: no usable GPU: on the CPU simulator (docs/simulator.md), 128 x 300, no timing")
  cute.set_device("sim")
  ROWS, COLS = tonumber(arg and arg[1]) or 128, tonumber(arg and arg[2]) or 300
end

-- 2. On the GPU (or the simulator)
make = cute.tensor
x, dy = make(cute.bf16, { ROWS, COLS }, "row"), make(cute.bf16, { ROWS, COLS }, "row")
y, dx = make(cute.bf16, { ROWS, COLS }, "row"), make(cute.bf16, { ROWS, COLS }, "row")
w, b = make(cute.f32, { COLS }), make(cute.f32, { COLS })
mean, rstd = make(cute.f32, { ROWS }), make(cute.f32, { ROWS })
pdw, pdb = make(cute.f32, { G, COLS }, "row"), make(cute.f32, { G, COLS }, "row")
dw, db = make(cute.f32, { COLS }), make(cute.f32, { COLS })
x:uniform(-2, 2, 1)
dy:uniform(-1, 1, 2)
w:uniform(0.5, 1.5, 3)
b:uniform(-0.5, 0.5, 4)
y:fill(0 / 0)
dx:fill(0 / 0)
pdw:fill(0)
pdb:fill(0)
local fwd = forward { grid = ROWS, block = THREADS }
fwd(x, w, b, y, mean, rstd, cute.f32(EPS))
backward { grid = ROWS, block = THREADS }(x, w, dy, mean, rstd, dx, pdw, pdb)
reduce { grid = cute.ceil_div(COLS, THREADS), block = THREADS }(pdw, pdb, dw, db)
cute.synchronize()
local hx, hdy, hy, hdx = x:to_host(), dy:to_host(), y:to_host(), dx:to_host()
local hw, hb, hdw, hdb = w:to_table(), b:to_table(), dw:to_table(), db:to_table()
local rdw, rdb = {}, {}
for j = 1, COLS do rdw[j], rdb[j] = 0, 0 end
local worst_y, worst_dx = 0, 0
for r = 0, ROWS - 1 do
  local mu, var = 0, 0
  for j = 0, COLS - 1 do mu = mu + hx[{ r, j }] end
  mu = mu / COLS
  for j = 0, COLS - 1 do var = var + (hx[{ r, j }] - mu) ^ 2 end
  local rs = 1 / math.sqrt(var / COLS + EPS)
  local s1, s2 = 0, 0
  for j = 0, COLS - 1 do
    local xhat = (hx[{ r, j }] - mu) * rs
    local g = hdy[{ r, j }] * hw[j + 1]
    s1, s2 = s1 + g, s2 + g * xhat
    rdw[j + 1], rdb[j + 1] = rdw[j + 1] + hdy[{ r, j }] * xhat, rdb[j + 1] + hdy[{ r, j }]
  end
  s1, s2 = s1 / COLS, s2 / COLS
  if r % 97 == 0 then -- y and dx on every 97th row
    for j = 0, COLS - 1 do
      local xhat = (hx[{ r, j }] - mu) * rs
      worst_y = math.max(worst_y, math.abs(hy[{ r, j }] - (xhat * hw[j + 1] + hb[j + 1])))
      worst_dx = math.max(worst_dx, math.abs(hdx[{ r, j }] - rs * (hdy[{ r, j }] * hw[j + 1] - s1 - xhat * s2)))
    end
  end
end
local worst_dw, worst_db = 0, 0
for j = 1, COLS do
  worst_dw = math.max(worst_dw, math.abs(hdw[j] - rdw[j]) / (1 + math.abs(rdw[j])))
  worst_db = math.max(worst_db, math.abs(hdb[j] - rdb[j]) / (1 + math.abs(rdb[j])))
end
print(string.format("worst errors against float64: y %.3g, dx %.3g (bf16: within 2^-6 of values up to ~4), "
  .. "dw %.3g, db %.3g (relative, f32 sums of %d rows)", worst_y, worst_dx, worst_dw, worst_db, ROWS))
assert(worst_y <= 2 ^ -5 and worst_dx <= 2 ^ -5 and worst_dw <= 1e-4 and worst_db <= 1e-4, "layernorm: WRONG")
if not gpu then os.exit(0, true) end
local bytes = 2 * ROWS * COLS * 2
local mine = cute.bench(function() fwd(x, w, b, y, mean, rstd, cute.f32(EPS)) end, { bytes = bytes })
local copy = cute.bench(function() y:copy_from(x) end, { bytes = bytes })
print(string.format("%s: forward %.0f GB/s, cuMemcpyDtoD %.0f GB/s: ratio %.2f", cute.device_info().name, mine.gbps,
  copy.gbps, mine.gbps / copy.gbps))
