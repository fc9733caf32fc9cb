-- setmaxnreg: a module that uses it compiles with the toolkit's ptxas run
-- whole-program (nvJitLink drops it with C7504), needs a register cap at
-- entry, and any "'setmaxnreg' ignored" from ptxas is a compile error. Its
-- effect is visible on the CPU: a consumer warpgroup that needs ~200
-- registers spills under the 168-register entry cap without setmaxnreg and
-- does not with setmaxnreg.inc 232; on the GPU the same kernel computes
-- the right numbers.
local cute = require "cute"
local bit = require "bit"
local H = require "tests.spec.trace.helper"
local A = cute.arch

local N = 200 -- i32 values each consumer thread keeps live

-- Warpgroup 0 gives registers back, warpgroups 1 and 2 take them and fold
-- src into N accumulators (acc[i] = (acc[i] * 3 ~ acc[i + 1]) + v, 32-bit).
local function regs_kernel(use, opts)
  opts = opts or { max_threads = 384, min_blocks = 1 }
  return cute.kernel("regs", function(src, out, iters)
    local tid = cute.thread_idx().x
    local wg = tid / 128
    local function work()
      local c = tid - 128
      local acc = cute.make_rmem_tensor(cute.make_layout(N), cute.i32)
      for i = 0, N - 1 do acc[i] = src[i] end
      cute.range(0, iters, function(it)
        local v = src[it * 256 + c]
        for i = 0, N - 1 do acc[i] = (acc[i] * 3):bxor(acc[(i + 1) % N]) + v end
      end)
      for i = 0, N - 1 do out[c * N + i] = acc[i] end
    end
    cute.if_(wg:eq(0), function()
      if use then A.setmaxnreg_dec(40) end
    end, function()
      if use then A.setmaxnreg_inc(232) end
      work()
    end)
  end, opts)
end

local ARGS = { cute.fake_tensor(cute.i32, 64 * 256), cute.fake_tensor(cute.i32, 256 * N), cute.i32(5) }

local function reference(vals, iters)
  local out = {}
  for c = 0, 255 do
    local acc = {}
    for i = 0, N - 1 do acc[i] = vals[i + 1] end
    for it = 0, iters - 1 do
      local v = vals[it * 256 + c + 1]
      for i = 0, N - 1 do acc[i] = bit.tobit(bit.bxor(bit.tobit(acc[i] * 3), acc[(i + 1) % N]) + v) end
    end
    for i = 0, N - 1 do out[c * N + i + 1] = acc[i] end
  end
  return out
end

describe("setmaxnreg", function()
  it("compiles whole-program: no 'setmaxnreg ignored', the entry cap's 168 registers, no spill", function()
    local h = regs_kernel(true):with { arch = "sm_90a", cache = false }:compile(unpack(ARGS))
    assert.is_nil(h:log():find("setmaxnreg' ignored", 1, true))
    assert.is_nil(h:log():find("C7504", 1, true))
    assert.matches("Used 168 registers", h:log(), 1, true)
    local r = h:resources().regs
    assert.equal(168, r.registers)
    assert.equal(0, r.spill_stores)
    assert.equal(1, H.count(h:ptx(), "setmaxnreg.inc.sync.aligned.u32 232;"))
  end)

  it("takes effect: without it the consumers spill under the same cap", function()
    local h = regs_kernel(false):with { arch = "sm_90a", cache = false }:compile(unpack(ARGS))
    local r = h:resources().regs
    assert.equal(168, r.registers)
    assert.is_true(r.spill_stores > 0, "expected spills without setmaxnreg")
  end)

  it("shows USETMAXREG in the SASS (where nvdisasm exists)", function()
    local h = regs_kernel(true):with { arch = "sm_90a" }:compile(unpack(ARGS))
    local ok, sass = pcall(h.sass, h)
    if not ok then
      pending("no nvdisasm or cuobjdump here: " .. tostring(sass):match("^[^\n]*"))
      return
    end
    assert.matches("USETMAXREG%.TRY_ALLOC%.CTAPOOL UP%d, 0xe8", sass) -- 232
    assert.matches("USETMAXREG%.DEALLOC%.CTAPOOL 0x28", sass) -- 40
  end)

  it("needs a register cap at entry: an error naming the kernel and the fix", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, msg = pcall(function() return regs_kernel(true, {}):with { arch = "sm_90a" }:compile(unpack(ARGS)) end)
    assert.is_false(ok)
    assert.matches("sync_setmaxnreg_spec%.lua:" .. line .. ": ", msg)
    assert.matches("kernel regs uses setmaxnreg but has no register count at entry, so ptxas would ignore it (C7508)",
      msg, 1, true)
    assert.matches("cute.launch_bounds(max_threads, min_blocks)", msg, 1, true)
    -- max_threads alone is not a register count at entry
    ok, msg = pcall(function()
      return regs_kernel(true, { max_threads = 384 }):with { arch = "sm_90a" }:compile(unpack(ARGS))
    end)
    assert.is_false(ok)
    assert.matches("has no register count at entry", msg, 1, true)
  end)

  it("accepts cute.launch_bounds as the cap", function()
    local k = cute.kernel("lb", function(out)
      cute.launch_bounds(256, 1)
      cute.if_((cute.thread_idx().x / 128):eq(0), function() A.setmaxnreg_dec(56) end,
        function() A.setmaxnreg_inc(200) end)
      out[cute.thread_idx().x] = 1
    end)
    local h = k:with { arch = "sm_90a", cache = false }:compile(cute.fake_tensor(cute.i32, 256))
    assert.matches("%.maxntid 256, 1, 1", h:ptx())
    assert.is_nil(h:log():find("ignored", 1, true))
  end)

  it("turns any 'setmaxnreg ignored' from ptxas into an error (here: debug code, C7505)", function()
    local ok, msg = pcall(function()
      return regs_kernel(true):with { arch = "sm_90a", cache = false, ptxas_options = "-g" }:compile(unpack(ARGS))
    end)
    assert.is_false(ok)
    assert.matches("ptxas ignored setmaxnreg (a silent slowdown, refused):", msg, 1, true)
    assert.matches("C7505", msg, 1, true)
  end)

  it("refuses link inputs (a whole-program compile cannot take them)", function()
    local ok, msg = pcall(function()
      return regs_kernel(true):with { arch = "sm_90a", cache = false, link = { "tests/spec/runtime/kernels.ptx" } }
        :compile(unpack(ARGS))
    end)
    assert.is_false(ok)
    assert.matches("kernels.ptx: a module that uses setmaxnreg is compiled whole-program by ptxas", msg, 1, true)
  end)

  it("takes the same path for PTX handed to the compiler", function()
    local compiler = require "cute.compiler"
    local function ptx(directives)
      return table.concat({ ".version 8.0", ".target sm_90a", ".address_size 64",
        ".visible .entry hand()", directives, "{", "  setmaxnreg.dec.sync.aligned.u32 40;", "  ret;", "}", "" }, "\n")
    end
    local opts = compiler.options { arch = "sm_90a", cache = false }
    local cubin, log = compiler.ptx_to_cubin(ptx(".maxnreg 128"), opts)
    assert.equal("\127ELF", cubin:sub(1, 4))
    assert.is_nil(log:find("ignored", 1, true))
    cubin = compiler.ptx_to_cubin(ptx(".maxntid 256, 1, 1\n.minnctapersm 1"), opts)
    assert.equal("\127ELF", cubin:sub(1, 4))
    for _, d in ipairs { "", ".maxntid 256, 1, 1", ".reqntid 256, 1, 1" } do
      local ok, msg = pcall(compiler.ptx_to_cubin, ptx(d), opts)
      assert.is_false(ok, d)
      assert.matches("kernel hand uses setmaxnreg but has no register count at entry", msg, 1, true)
    end
  end)

  it("computes the right numbers with the registers moved between warpgroups #gpu", function()
    local info = cute.device_info()
    if info.compute_capability[1] < 9 then
      pending("setmaxnreg needs sm_90a")
      return
    end
    local iters = 37
    local src = cute.tensor(cute.i32, 64 * 256):uniform(-50000, 50000, os.time())
    local out = cute.tensor(cute.i32, 256 * N):fill(-7)
    local k = regs_kernel(true)
    k { grid = 1, block = 384 }(src, out, cute.i32(iters))
    local want, got = reference(src:to_table(), iters), out:to_table()
    for i = 1, 256 * N do
      if got[i] ~= want[i] then error(string.format("element %d: %d, expected %d", i - 1, got[i], want[i])) end
    end
    assert.equal(168, k:with({}):compile(src, out, cute.i32(iters)):resources().regs.registers)
  end)
end)
