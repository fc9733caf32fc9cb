-- What the emitted code looks like where it decides speed: 16-bit data moves
-- and sits in registers as 32-bit words. Checked on PTX and ptxas's resource
-- report (no GPU needed).
local cute = require "cute"

describe("16-bit data", function()
  it("moves in 16-byte accesses of 32-bit words, not split in two", function()
    local k = cute.kernel("copy8_bf16", function(x, y)
      local tid = cute.thread_idx().x
      local f = cute.local_tile(x, { 8 }, { tid }):load()
      cute.local_tile(y, { 8 }, { tid }):store(f)
    end)
    for _, dt in ipairs { cute.bf16, cute.f16, cute.i16 } do
      local x, y = cute.fake_tensor(dt, 1024), cute.fake_tensor(dt, 1024)
      local ptx = k:compile(x, y):ptx()
      assert.matches("ld%.global%.v4%.b32", ptx, dt.name)
      assert.matches("st%.global%.v4%.b32", ptx, dt.name)
      assert.is_nil(ptx:find("v4%.[ubs]16"), dt.name .. ": a 16-byte access was split")
    end
    -- 8-bit elements too
    local x, y = cute.fake_tensor(cute.u8, 4096), cute.fake_tensor(cute.u8, 4096)
    local k8 = cute.kernel("copy16_u8", function(a, b)
      local tid = cute.thread_idx().x
      cute.local_tile(b, { 16 }, { tid }):store(cute.local_tile(a, { 16 }, { tid }):load())
    end)
    assert.matches("ld%.global%.v4%.b32", k8:compile(x, y):ptx())
  end)

  it("keeps two elements a register: 64 bf16 held across a barrier fit in 64 registers", function()
    -- 1024 threads: at most 64 registers a thread. 64 bf16 values one a
    -- register would spill; as 32 words they fit.
    local k = cute.kernel("hold64", function(x, y)
      cute.launch_bounds(1024)
      local tid = cute.thread_idx().x
      local f = cute.make_rmem_tensor({ 64 }, cute.bf16)
      for c = 0, 7 do cute.copy(cute.local_tile(x, { 8 }, { tid * 8 + c }), cute.local_tile(f, { 8 }, { c })) end
      local s = 0
      for i = 0, 63 do s = s + f[i]:to(cute.f32) end
      local sh = cute.make_smem_tensor(cute.f32, cute.make_layout(1024), 16)
      sh[tid] = s
      cute.sync_threads()
      local t = sh[tid:bxor(1)]
      local out = cute.make_rmem_tensor({ 64 }, cute.bf16)
      for i = 0, 63 do out[i] = cute.where(t:gt(0), f[i], f[63 - i]) end
      for c = 0, 7 do cute.copy(cute.local_tile(out, { 8 }, { c }), cute.local_tile(y, { 8 }, { tid * 8 + c })) end
    end)
    local x, y = cute.fake_tensor(cute.bf16, 65536 * 8), cute.fake_tensor(cute.bf16, 65536 * 8)
    local r = k:compile(x, y):resources().hold64
    assert.is_true(r.registers <= 64)
    assert.equal(0, r.spill_stores, "spilled: the fragment is not packed")
  end)

  it("agrees on where element i lives between constant and run-time indexes #gpu", function()
    -- constant indexes go through 32-bit words, run-time ones through local
    -- memory: a fragment written one way and read the other must agree
    local k = cute.kernel("dyn_index", function(x, y, j)
      local tid = cute.thread_idx().x
      local f = cute.make_rmem_tensor({ 8 }, cute.bf16)
      cute.copy(cute.local_tile(x, { 8 }, { tid }), f)
      local g = cute.make_rmem_tensor({ 8 }, cute.bf16)
      for i = 0, 7 do g[i] = f[(j + i):band(7)] end -- rotate by j: run-time reads
      g[5] = f[2] -- a constant write into a word
      g[j] = f[0] -- a run-time write
      cute.copy(g, cute.local_tile(y, { 8 }, { tid }))
    end)
    local n = 32 * 8
    local x = cute.tensor(cute.bf16, n):uniform(-4, 4)
    local y = cute.tensor(cute.bf16, n)
    local hx = x:to_table()
    for _, j in ipairs { 0, 3, 7 } do
      y:fill(0 / 0)
      k { grid = 1, block = 32 }(x, y, cute.i32(j))
      local hy = y:to_table()
      for t = 0, 31 do
        for i = 0, 7 do
          local want = hx[t * 8 + (j + i) % 8 + 1]
          if i == 5 then want = hx[t * 8 + 3] end
          if i == j then want = hx[t * 8 + 1] end
          assert.equal(want, hy[t * 8 + i + 1], string.format("j=%d thread %d element %d", j, t, i))
        end
      end
    end
  end)
end)

describe("cute.opaque", function()
  it("puts a barrier on a fragment, and refuses anything else", function()
    local k = cute.kernel("opq", function(x)
      local f = cute.make_rmem_tensor({ 4 }, cute.f32)
      f:fill(1)
      cute.opaque(f)
      x[0] = f[0] + f[3]
    end)
    local h = k:compile(cute.fake_tensor(cute.f32, 4))
    assert.matches("var%.opaque %$1", h:ir())
    assert.matches('asm sideeffect ""', h:ll())
    local bad = cute.kernel("opq_bad", function(x) cute.opaque(x) end)
    local ok, msg = pcall(bad.compile, bad, cute.fake_tensor(cute.f32, 4))
    assert.is_false(ok)
    assert.matches("codegen_spec%.lua:%d+: cute.opaque: expected a register fragment", msg)
  end)
end)

describe("cute.lib.rowwise", function()
  it("keeps bf16 rows of 4096 and 32768 in at most 64 registers a thread, without spilling", function()
    local rw = require "cute.lib.rowwise"
    for _, n in ipairs { 4096, 32768 } do
      local cfg = rw.config(n, cute.bf16)
      assert.is_true(cfg.exact)
      local x, w = cute.fake_tensor(cute.bf16, { 64, n }, "row"), cute.fake_tensor(cute.bf16, n)
      local hs = {
        softmax_rows = rw.kernels.softmax:compile(x, x, cute.constexpr(cfg)),
        rmsnorm_rows = rw.kernels.rmsnorm:compile(x, w, x, cute.f32(1e-6), cute.constexpr(cfg)),
        layernorm_rows = rw.kernels.layernorm:compile(x, w, w, x, cute.f32(1e-5), cute.constexpr(cfg)),
      }
      for name, h in pairs(hs) do
        local r = h:resources()[name]
        assert.is_true(r.registers <= 64, name .. " " .. n)
        assert.equal(0, r.spill_stores, name .. " " .. n .. " spills")
      end
    end
  end)
end)
