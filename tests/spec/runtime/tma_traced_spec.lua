-- A traced kernel loads a tile through a TMA descriptor: cp.async.bulk.tensor
-- completing on an mbarrier, written with the inline-PTX escape hatch
-- (cute.asm) until the Hopper ops are IR ops. Compiled on the CPU; run and
-- checked on the GPU (sm_90).
local cute = require "cute"

-- Loads the 32 x 32 f32 box at (x0, y0) and writes it to out (x fastest).
local function tma_kernel()
  return cute.kernel("tma_tile", function(desc, out, x0, y0)
    local tile = cute.make_smem_tensor(cute.f32, cute.make_layout({ 1024 }), 128)
    local bar = cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8)
    local tid = cute.thread_idx().x
    local bar_addr = bar:ptr_at(0):addr()
    local tile_addr = tile:ptr_at(0):addr()
    local desc_addr = desc.ptr:cast("generic"):addr()
    cute.if_(tid:eq(0), function()
      cute.asm("mbarrier.init.shared::cta.b64 [$0], 1;", "r", { bar_addr })
      cute.asm("fence.mbarrier_init.release.cluster;", "", {})
    end)
    cute.sync_threads()
    cute.if_(tid:eq(0), function()
      cute.asm("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], 4096;", "r", { bar_addr }, { memory = true })
      cute.asm("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        .. " [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r", { tile_addr, desc_addr, x0, y0, bar_addr }, { memory = true })
    end)
    -- every thread waits for the transaction to complete (phase 0)
    local done = cute.var(cute.i32, 0)
    cute.while_(function() return done.value:eq(0) end, function()
      done.value = cute.asm("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], 0;"
        .. " selp.u32 $0, 1, 0, p; }", "=r,r", { bar_addr }, { ret = cute.i32, sideeffect = true, memory = true })
    end)
    for j = 0, 1023, 128 do
      local i = tid + j
      cute.if_(i:lt(1024), function() out[i] = tile[i] end)
    end
  end)
end

describe("TMA through a traced kernel", function()
  it("compiles without a GPU #tma", function()
    local desc = require("ffi").new("CuteTmaDesc")
    local h = tma_kernel():with { arch = "sm_90a" }:compile(desc, cute.fake_tensor(cute.f32, 1024), cute.u32(0),
      cute.u32(0))
    local ptx = h:ptx()
    assert.matches("cp%.async%.bulk%.tensor%.2d", ptx)
    assert.matches("%.param %.align 64 %.b8 tma_tile_param_0%[128%]", ptx)
    assert.matches("mbarrier%.try_wait", ptx)
  end)

  it("loads tiles, zero-filling outside the tensor #gpu", function()
    local info = cute.device_info()
    if info.compute_capability[1] < 9 then
      pending("TMA needs sm_90")
      return
    end
    local W, H = 100, 70 -- row-major W x H: x (dimension 0 of the descriptor) contiguous
    local src = cute.tensor(cute.f32, { W, H }):uniform(-10, 10)
    local vals = src:to_table()
    local desc = cute.tma_descriptor { dtype = cute.f32, address = src, dims = { W, H }, strides = { W * 4 },
      box = { 32, 32 }, oob = "zero" }
    local k = tma_kernel()
    local out = cute.tensor(cute.f32, 1024)
    for _, o in ipairs { { 0, 0 }, { 40, 20 }, { 80, 50 } } do
      out:fill(0 / 0)
      k { grid = 1, block = 128 }(desc, out, cute.u32(o[1]), cute.u32(o[2]))
      local got = out:to_table()
      for y = 0, 31 do
        for x = 0, 31 do
          local gx, gy = o[1] + x, o[2] + y
          local want = (gx < W and gy < H) and vals[gy * W + gx + 1] or 0
          if got[y * 32 + x + 1] ~= want then
            error(string.format("origin (%d,%d), (%d,%d): %g, expected %g", o[1], o[2], x, y, got[y * 32 + x + 1],
              want))
          end
        end
      end
    end
  end)
end)
