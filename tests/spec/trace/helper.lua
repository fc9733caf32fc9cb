-- Helpers for the tracer specs: trace a kernel body and get its IR or PTX.
local cute = require "cute"

local H = {}

local serial = 0

--- The compiled handle of a kernel with body fn, for fake f32 tensors of n
-- elements (nargs of them) and extra arguments.
function H.compile(fn, args, opts)
  serial = serial + 1
  local k = cute.kernel("k" .. serial, fn, opts)
  return k:compile(unpack(args)), k
end

function H.ir(fn, args, opts) return (H.compile(fn, args, opts)):ir() end
function H.ptx(fn, args, opts) return (H.compile(fn, args, opts)):ptx() end

function H.f32(n, spec) return cute.fake_tensor(cute.f32, n or 1024, spec) end

-- the simulated architecture the process started with (CUTELUA_SIM_ARCH or sm_80)
local SIM_ARCH = require("cute.sim.memory").arch()

--- The CPU simulator as the device of a describe block's tests (set_device's
-- options: {arch = "sm_90a"} for a Hopper device; without, the architecture the
-- process started with), the previous device and architecture put back after
-- them: `local sim = H.simulator(); setup(sim.enter); teardown(sim.leave)`. (The
-- simulator's architecture outlives set_device: one spec file's sm_90a would
-- otherwise reach the next file's tests when busted runs several in one process.)
function H.simulator(opts)
  local old, old_arch
  return {
    enter = function()
      old, old_arch = cute.current_device(), require("cute.sim.memory").arch()
      local o = {}
      for k, v in pairs(opts or {}) do o[k] = v end
      o.arch = o.arch or SIM_ARCH
      cute.set_device("sim", o)
    end,
    leave = function()
      require("cute.sim.memory").set_arch(old_arch)
      cute.set_device(old)
    end,
  }
end

--- Random GEMM operands on the current device: A (M x K [x L]) row-major, B
-- (K x N [x L]) column-major, C (M x N [x L]) row-major and not filled (or, with
-- a_layout and b_layout, one matrix each in those layouts: "row" or "col"); u8
-- inputs in 0..1, others in -1..1; seed optional (A's, B's is seed + 1).
function H.gemm_operands(dt, m, n, k, l, cdt, seed, a_layout, b_layout)
  local A, B, C
  if a_layout then
    A = cute.tensor(dt, { m, k }, a_layout)
    B = cute.tensor(dt, { k, n }, b_layout)
    C = cute.tensor(cdt, { m, n }, "row")
  elseif l then
    A = cute.tensor(dt, { m, k, l }, { k, 1, m * k })
    B = cute.tensor(dt, { k, n, l }, { 1, k, k * n })
    C = cute.tensor(cdt, { m, n, l }, { n, 1, m * n })
  else
    A = cute.tensor(dt, { m, k }, "row")
    B = cute.tensor(dt, { k, n }, "col")
    C = cute.tensor(cdt, { m, n }, "row")
  end
  local lo = dt.name == "u8" and 0 or -1 -- (unsigned: 0..1)
  A:uniform(lo, 1, seed)
  B:uniform(lo, 1, seed and seed + 1)
  return A, B, C
end

--- Row i of A times column j of B (0-based), and the sum of the products'
-- magnitudes (for a tolerance), from the lists of A (M x K) and B (K x N)
-- that Tensor:to_table() gives (column by column, whatever the storage).
function H.dot(a, b, m, k, i, j)
  local s, mag = 0, 0
  for kk = 0, k - 1 do
    local p = a[i + m * kk + 1] * b[kk + k * j + 1]
    s, mag = s + p, mag + math.abs(p)
  end
  return s, mag
end

--- The error message of f(), which must fail.
function H.error_of(f)
  local ok, msg = pcall(f)
  assert(not ok, "expected an error")
  return tostring(msg)
end

--- The error message of f(), which must fail at the caller's file and line
-- + offset (0: the line of the H.error_at call): the user's line.
function H.error_at(f, offset)
  local info = debug.getinfo(2, "Sl")
  local msg = H.error_of(f)
  local where = info.short_src:match("[^/]+$") .. ":" .. (info.currentline + (offset or 0)) .. ":"
  assert(msg:find(where, 1, true), "expected the error at " .. where .. ", got: " .. msg)
  return msg
end

--- Counts the occurrences of a plain substring.
function H.count(s, sub)
  local n, pos = 0, 1
  while true do
    local a, b = s:find(sub, pos, true)
    if not a then return n end
    n = n + 1
    pos = b + 1
  end
end

return H
