-- TMA and bulk copies in kernels, on the CPU: every form's PTX with its
-- operands (1-5D loads, multicast, stores, reductions, prefetches,
-- prefetch.tensormap, non-tensor bulk copies, commit/wait), the cubins for
-- sm_90a, SASS where an nvdisasm exists, a TMA atom as a grid-constant
-- kernel argument (cute.copy and cute.prefetch with it), and every rejection:
-- the IR's rules, the target features, the Lua checks at the user's line.
local cute = require "cute"
local ffi = require "ffi"
local ir = require "cute.ir"
local H = require "tests.spec.trace.helper"

local cpasync = cute.nvgpu.cpasync

local function desc() return ffi.new("CuteTmaDesc") end

local function smem(bytes, align)
  return cute.make_smem_tensor(cute.u8, cute.make_layout({ bytes }), align or 128)
end

local function bar_ptr() return cute.make_smem_tensor(cute.u64, cute.make_layout({ 1 }), 8):ptr_at(0) end

local function coords_of(rank)
  local c = {}
  for i = 1, rank do c[i] = cute.thread_idx().x + i end
  return c
end

local function compile(body, args, arch)
  return (H.compile(body, args, { arch = arch or "sm_90a", cache = false }))
end

-- the PTX instruction lines that contain `what`
local function lines(ptx, what)
  local out = {}
  for l in ptx:gmatch("[^\n]+") do
    if l:find(what, 1, true) then out[#out + 1] = l:gsub("^%s+", "") end
  end
  return out
end

local function sass_of(h)
  local ok, sass = pcall(h.sass, h)
  if not ok then return nil, tostring(sass):match("^[^\n]*") end
  return sass
end

describe("TMA in kernels: the PTX of each form", function()
  for rank = 1, 5 do
    it("loads, stores, reduces and prefetches " .. rank .. "-D boxes", function()
      local h = compile(function(d, x)
        local t = smem(1024)
        local c = coords_of(rank)
        cute.arch.tma_load(d, t:ptr_at(0), bar_ptr(), c)
        cute.arch.tma_store(d, t:ptr_at(0), c)
        cute.arch.tma_store(d, t:ptr_at(0), c, "add")
        cute.arch.tma_prefetch(d, c)
        x[0] = 1
      end, { desc(), H.f32(4) })
      local ptx = h:ptx()
      local braces = "{" .. string.rep("%%r%d+, ", rank - 1) .. "%%r%d+}"
      local ld = lines(ptx, "cp.async.bulk.tensor." .. rank .. "d.shared::cluster.global.tile")
      assert.equal(1, #ld)
      assert.matches("%.mbarrier::complete_tx::bytes %[%%r%d+%], %[%%rd%d+, " .. braces .. "%], %[%%r%d+%];", ld[1])
      local st = lines(ptx, "cp.async.bulk.tensor." .. rank .. "d.global.shared::cta.tile.bulk_group")
      assert.equal(1, #st)
      assert.matches("%[%%rd%d+, " .. braces .. "%], %[%%r%d+%];", st[1])
      assert.equal(1, #lines(ptx, "cp.reduce.async.bulk.tensor." .. rank .. "d.global.shared::cta.add.tile.bulk_group"))
      assert.equal(1, #lines(ptx, "cp.async.bulk.prefetch.tensor." .. rank .. "d.L2.global.tile"))
      -- the descriptor is the generic address of the grid-constant parameter
      assert.matches("%.param %.align 64 %.b8 k%d+_param_0%[128%]", ptx)
      assert.matches("cvta%.param%.u64", ptx)
      assert.equal("\127ELF", h:cubin():sub(1, 4))
    end)
  end

  it("multicasts a load with a 16-bit CTA mask (sm_90a)", function()
    local h = compile(function(d, x)
      local t = smem(4096)
      cute.arch.tma_load(d, t:ptr_at(0), bar_ptr(), { 0, cute.block_idx().x }, 3)
      x[0] = 1
    end, { desc(), H.f32(4) })
    local l = lines(h:ptx(), ".multicast::cluster")
    assert.equal(1, #l)
    assert.matches("^cp%.async%.bulk%.tensor%.2d%.shared::cluster%.global%.tile%.mbarrier::complete_tx::bytes"
      .. "%.multicast::cluster %[%%r%d+%], %[%%rd%d+, {%%r%d+, %%r%d+}%], %[%%r%d+%], %%rs%d+;", l[1])
    assert.equal("\127ELF", h:cubin():sub(1, 4))
  end)

  it("is UTMALDG (.MULTICAST), UTMASTG, UTMAREDG, UTMAPF, UTMACCTL.PF in the SASS (where nvdisasm exists)", function()
    local h = compile(function(d, x)
      local t = smem(4096)
      cute.arch.prefetch_descriptor(d)
      cute.arch.tma_load(d, t:ptr_at(0), bar_ptr(), { 0, cute.block_idx().x })
      cute.arch.tma_load(d, t:ptr_at(0), bar_ptr(), { 0, cute.block_idx().y }, 3)
      cute.arch.tma_store(d, t:ptr_at(0), { 0, 0, cute.block_idx().x })
      cute.arch.tma_store(d, t:ptr_at(0), { 0, cute.block_idx().x }, "add")
      cute.arch.tma_prefetch(d, { 0, cute.block_idx().x })
      cute.arch.cp_async_bulk_commit_group()
      cute.arch.cp_async_bulk_wait_group(0, true)
      x[0] = 1
    end, { desc(), H.f32(4) })
    local sass, why = sass_of(h)
    if not sass then
      pending("no nvdisasm or cuobjdump here: " .. why)
      return
    end
    assert.matches("UTMALDG%.2D %[", sass)
    assert.matches("UTMALDG%.2D%.MULTICAST", sass)
    assert.matches("UTMASTG%.3D", sass)
    assert.matches("UTMAREDG%.2D%.ADD", sass)
    assert.matches("UTMAPF%.L2%.2D", sass)
    assert.matches("UTMACCTL%.PF", sass)
    assert.matches("UTMACMDFLUSH", sass)
  end)

  it("reduces with every op of cp.reduce.async.bulk.tensor", function()
    local h = compile(function(d, x)
      local t = smem(1024)
      for _, r in ipairs { "add", "min", "max", "inc", "dec", "and", "or", "xor" } do
        cute.arch.tma_store(d, t:ptr_at(0), { 0, 0 }, r)
      end
      x[0] = 1
    end, { desc(), H.f32(4) })
    local ptx = h:ptx()
    for _, r in ipairs { "add", "min", "max", "inc", "dec", "and", "or", "xor" } do
      assert.equal(1, #lines(ptx, "cp.reduce.async.bulk.tensor.2d.global.shared::cta." .. r .. ".tile"), r)
    end
  end)

  it("copies bulk bytes, prefetches the descriptor, commits and waits", function()
    local h = compile(function(d, x)
      local t = smem(1024, 16)
      local gp = x:ptr_at(0)
      cute.arch.prefetch_descriptor(d)
      cute.arch.cp_async_bulk_g2s(t:ptr_at(0), gp, 256, bar_ptr())
      cute.arch.cp_async_bulk_s2g(gp, t:ptr_at(0), 512)
      cute.arch.cp_async_bulk_prefetch(gp, 1024)
      cute.arch.cp_async_bulk_commit_group()
      cute.arch.cp_async_bulk_wait_group(0, true)
      cute.arch.cp_async_bulk_wait_group(2)
    end, { desc(), H.f32(1024) })
    local ptx = h:ptx()
    assert.equal(1, #lines(ptx, "prefetch.tensormap [%rd"))
    assert.matches("cp%.async%.bulk%.shared::cluster%.global%.mbarrier::complete_tx::bytes %[%%r%d+%], %[%%rd%d+%], "
      .. "%%r%d+, %[%%r%d+%];", ptx)
    assert.matches("cp%.async%.bulk%.global%.shared::cta%.bulk_group %[%%rd%d+%], %[%%r%d+%], %%r%d+;", ptx)
    assert.matches("cp%.async%.bulk%.prefetch%.L2%.global %[%%rd%d+%], %%r%d+;", ptx)
    assert.equal(1, #lines(ptx, "cp.async.bulk.commit_group;"))
    assert.equal(1, #lines(ptx, "cp.async.bulk.wait_group.read 0;"))
    assert.equal(1, #lines(ptx, "cp.async.bulk.wait_group 2;"))
    local sass, why = sass_of(h)
    if not sass then
      pending("no nvdisasm or cuobjdump here: " .. why)
      return
    end
    assert.matches("UBLKCP%.S%.G", sass)
    assert.matches("UBLKCP%.G%.S", sass)
  end)
end)

-- A 2-D f32 tensor of W x H (x contiguous), a 32 x 16 tile, 2 boxes of 16 x 16.
local W, HT = 100, 70
local function atom_of(op, num_multicast)
  local A = cute.fake_tensor(cute.f32, { W, HT }, { 1, 112 })
  local sl = cute.make_layout({ 32, 16 })
  return (cpasync.make_tiled_tma_atom(op, A, sl, { 32, 16 }, num_multicast)), sl
end

describe("TMA atoms as kernel arguments", function()
  it("load through cute.copy: one instruction per box, at the partition's coordinates", function()
    local at, sl = atom_of(cpasync.CopyBulkTensorTileG2SOp())
    local h = compile(function(a, x)
      local sA = cute.make_smem_tensor(cute.f32, sl, 128)
      local part = cpasync.tma_partition(a, 0, cute.make_layout(1), sl)
      cute.copy(a, part:gmem_tile({ cute.block_idx().x, 2 }), part:smem_tile(sA), { tma_bar_ptr = bar_ptr() })
      cute.prefetch(a, part:gmem_tile({ 1, 1 }))
      x[0] = sA[0]
    end, { at, H.f32(4) })
    local ptx = h:ptx()
    assert.equal(at.num_boxes, #lines(ptx, "cp.async.bulk.tensor.2d.shared::cluster"))
    assert.equal(at.num_boxes, #lines(ptx, "cp.async.bulk.prefetch.tensor.2d"))
    assert.matches("%.param %.align 64 %.b8 k%d+_param_0%[128%]", ptx)
    -- the IR: the second box 32 * 16 * 4 / 2 bytes after the first, its y coordinate 16 further
    local irt = h:ir()
    assert.equal(at.num_boxes, H.count(irt, "tma.load"))
    assert.equal("\127ELF", h:cubin():sub(1, 4))
  end)

  it("stores and reduces through cute.copy, multicasts with the mask", function()
    local st = atom_of(cpasync.CopyBulkTensorTileS2GOp())
    local red = atom_of(cpasync.CopyReduceBulkTensorTileS2GOp("max"))
    local mc, sl = atom_of(cpasync.CopyBulkTensorTileG2SMulticastOp(), 2)
    local h = compile(function(s, r, m, x)
      local sA = cute.make_smem_tensor(cute.f32, sl, 128)
      local ps = cpasync.tma_partition(s, 0, cute.make_layout(1), sl)
      cute.copy(s, ps:smem_tile(sA), ps:gmem_tile({ 0, 0 }))
      local pr = cpasync.tma_partition(r, 0, cute.make_layout(1), sl)
      cute.copy(r, pr:smem_tile(sA), pr:gmem_tile({ 1, 0 }))
      local rank = cute.arch.block_idx_in_cluster and 0 or 0
      local pm = cpasync.tma_partition(m, rank, cute.make_layout(2), sl)
      cute.copy(m, pm:gmem_tile({ 0, 1 }), pm:smem_tile(sA), { tma_bar_ptr = bar_ptr(), mcast_mask = 3 })
      cute.arch.cp_async_bulk_commit_group()
      cute.arch.cp_async_bulk_wait_group(0)
      x[0] = sA[0]
    end, { st, red, mc, H.f32(4) })
    local ptx = h:ptx()
    assert.equal(st.num_boxes, #lines(ptx, "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"))
    assert.equal(red.num_boxes, #lines(ptx, "cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile"))
    assert.equal(mc.boxes_per_cta, #lines(ptx, ".multicast::cluster"))
    assert.matches("%.param %.align 64 %.b8 k%d+_param_2%[128%]", ptx)
  end)

  it("loads into the stage of a staged layout (a traced stage) with a mask computed in the kernel", function()
    local A = cute.fake_tensor(cute.f32, { W, HT }, { 1, 112 })
    local sl3 = cute.make_layout({ 32, 16, 3 })
    local mc = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), A, sl3, { 32, 16 }, 2)
    local h = compile(function(a, x)
      local sA = cute.make_smem_tensor(cute.f32, sl3, 128)
      local rank = cute.block_idx().x % 2
      local part = cpasync.tma_partition(a, rank, cute.make_layout(2), sl3)
      local stage = cute.block_idx().y % 3
      local mask = (rank + 1) * 3 / (rank + 1) -- 3, traced (i32)
      cute.copy(a, part:gmem_tile({ 0, 1 }), part:smem_tile(sA, stage), { tma_bar_ptr = bar_ptr(), mcast_mask = mask })
      x[0] = sA[0]
    end, { mc, H.f32(4) })
    local ptx = h:ptx()
    assert.equal(mc.boxes_per_cta, #lines(ptx, ".multicast::cluster"))
    assert.equal("\127ELF", h:cubin():sub(1, 4))
    -- a stage stride that breaks the boxes' alignment is refused
    local odd = cute.make_layout({ 32, 16, 3 }, { 1, 32, 520 })
    local at = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), A, odd, { 32, 16 })
    local msg = H.error_of(function()
      compile(function(a, x)
        local sA = cute.make_smem_tensor(cute.f32, cute.make_layout({ 2048 }), 128)
        local part = cpasync.tma_partition(a, 0, cute.make_layout(1), odd)
        cute.copy(a, part:gmem_tile({ 0, 0 }), part:smem_tile(sA, cute.block_idx().x), { tma_bar_ptr = bar_ptr() })
        x[0] = 1
      end, { at, H.f32(4) })
    end)
    assert.matches("the stage mode's stride 520 (elements) does not keep the boxes 128-byte aligned", msg, 1, true)
  end)

  it("specialises on the atom's static facts, not on its tensor", function()
    local A1 = cute.fake_tensor(cute.f32, { W, HT }, { 1, 112 })
    local A2 = cute.fake_tensor(cute.f32, { 64, 64 }, { 1, 64 })
    local sl = cute.make_layout({ 32, 16 })
    local op = cpasync.CopyBulkTensorTileG2SOp()
    local k = require("cute.kernel_args")
    local a1 = cpasync.make_tiled_tma_atom(op, A1, sl, { 32, 16 })
    local a2 = cpasync.make_tiled_tma_atom(op, A2, sl, { 32, 16 })
    local a3 = cpasync.make_tiled_tma_atom(op, A2, cute.make_layout({ 32, 8 }), { 32, 8 })
    assert.equal(k.tma_atom_key(a1), k.tma_atom_key(a2))
    assert.are_not.equal(k.tma_atom_key(a1), k.tma_atom_key(a3))
    -- the launch path: one grid-constant parameter, a guard that takes an atom of the same key only
    local kern = cute.kernel("tma_guard", function(a, x)
      cute.arch.prefetch_descriptor(a)
      x[0] = 1
    end)
    local x = H.f32(4)
    local spec = kern:with { arch = "sm_90a" }:_specialise(2, a1, x)
    assert.same({ "CuteTmaDesc", "tma_atom" }, { spec.params[1].ctype, spec.params[1].what })
    local guard = require("cute.kernel_launch").codegen(spec, { a1, x })
    assert.is_true(guard(2, a1, x))
    assert.is_true(guard(2, a2, x))
    assert.is_false(guard(2, a3, x))
    assert.is_false(guard(2, 5, x))
    assert.is_false(guard(2, {}, x))
    assert.is_false(guard(2, require("ffi").new("CuteTmaDesc"), x))
  end)
end)

describe("TMA: rejections", function()
  it("refuses TMA on sm_80 and multicast on sm_90, naming the feature", function()
    local body = function(d, x)
      cute.arch.tma_load(d, smem(1024):ptr_at(0), bar_ptr(), { 0, 0 })
      x[0] = 1
    end
    local msg = H.error_of(function() compile(body, { desc(), H.f32(4) }, "sm_80") end)
    assert.matches("tma.load needs TMA, which sm_80 lacks", msg, 1, true)
    local mbody = function(d, x)
      cute.arch.tma_load(d, smem(1024):ptr_at(0), bar_ptr(), { 0, 0 }, 1)
      x[0] = 1
    end
    msg = H.error_of(function() compile(mbody, { desc(), H.f32(4) }, "sm_90") end)
    assert.matches("tma.load.multicast needs TMA_MULTICAST, which sm_90 lacks", msg, 1, true)
    msg = H.error_of(function()
      compile(function(x) cute.arch.cp_async_bulk_commit_group(); x[0] = 1 end, { H.f32(4) }, "sm_80")
    end)
    assert.matches("bulk.commit needs BULK_COPY, which sm_80 lacks", msg, 1, true)
  end)

  -- the IR's rules, built raw
  local function rule_error(build)
    local m = ir.module { target = "sm_90a" }
    local k = m:kernel("k")
    local d = k:param_blob(128, 64)
    local ok, msg = pcall(build, k, d)
    m:free()
    assert.is_false(ok, "no error")
    return tostring(msg)
  end
  local function sh(k, bytes, align)
    return k:op("smem", string.format("ptr<i8, shared, %d>", align), { bytes, align })
  end

  it("checks the operands of the bulk tensor ops", function()
    local function i32(k, v) return k:const("i32", v) end
    assert.matches("2 coordinates for a rank-3 box", rule_error(function(k, d)
      k:op("tma.load", nil, sh(k, 1024, 128), d, sh(k, 8, 8), i32(k, 0), i32(k, 0), { 3 })
    end), 1, true)
    assert.matches("rank 6: a tensor map has 1 to 5 dimensions", rule_error(function(k, d)
      k:op("tma.prefetch", nil, d, i32(k, 0), { 6 })
    end), 1, true)
    assert.matches("coordinate 1 (operand 5) is i64, expected i32", rule_error(function(k, d)
      k:op("tma.load", nil, sh(k, 1024, 128), d, sh(k, 8, 8), i32(k, 0), k:const("i64", 0), { 2 })
    end), 1, true)
    assert.matches("the destination (operand 1) is ptr<i8, global, 128>, expected a shared pointer", rule_error(
      function(k, d)
        local g = k:param("ptr<i8, global, 128>")
        k:op("tma.load", nil, g, d, sh(k, 8, 8), i32(k, 0), { 1 })
      end), 1, true)
    assert.matches("the destination (operand 1) ptr<i8, shared, 16> is 16-byte aligned; it must be 128-byte aligned",
      rule_error(function(k, d) k:op("tma.load", nil, sh(k, 1024, 16), d, sh(k, 8, 8), i32(k, 0), { 1 }) end), 1,
      true)
    assert.matches("a tensor map is 64-byte aligned", rule_error(function(k, d)
      k:op("tma.store", nil, k:op("ptrcast", "ptr<i8, param, 16>", d), sh(k, 1024, 128), i32(k, 0), { 1 })
    end), 1, true)
    assert.matches("the descriptor (operand 1) is ptr<i8, shared, 128>, expected a pointer to the 128-byte tensor map",
      rule_error(function(k)
        k:op("tma.prefetch_desc", nil, sh(k, 128, 128))
      end), 1, true)
    assert.matches("the mbarrier (operand 3) ptr<i8, shared, 4> is 4-byte aligned", rule_error(function(k, d)
      k:op("tma.load", nil, sh(k, 1024, 128), d, sh(k, 8, 4), i32(k, 0), { 1 })
    end), 1, true)
    assert.matches("the CTA mask (operand 5) is i32, expected i16", rule_error(function(k, d)
      k:op("tma.load.multicast", nil, sh(k, 1024, 128), d, sh(k, 8, 8), i32(k, 0), i32(k, 3), { 1 })
    end), 1, true)
    assert.matches("reduction exch: cp.reduce.async.bulk.tensor has add", rule_error(function(k, d)
      k:op("tma.reduce", nil, d, sh(k, 1024, 128), i32(k, 0), { 1, "exch" })
    end), 1, true)
  end)

  it("checks the operands of the bulk copies and waits", function()
    assert.matches("24 bytes: a bulk copy moves a positive multiple of 16 bytes", rule_error(function(k)
      local g = k:param("ptr<i8, global, 16>")
      k:op("bulk.store", nil, g, sh(k, 64, 16), k:const("i32", 24))
    end), 1, true)
    assert.matches("the global address (operand 2) ptr<i8, global, 8> is 8-byte aligned", rule_error(function(k)
      local g = k:param("ptr<i8, global, 8>")
      k:op("bulk.load", nil, sh(k, 64, 16), g, k:const("i32", 16), sh(k, 8, 8))
    end), 1, true)
    assert.matches("the source (operand 2) is ptr<i8, global, 16>, expected a shared pointer", rule_error(function(k)
      local g = k:param("ptr<i8, global, 16>")
      k:op("bulk.store", nil, g, g, k:const("i32", 16))
    end), 1, true)
    assert.matches("64 pending groups: 0 to 63", rule_error(function(k) k:op("bulk.wait", nil, { 64, 0 }) end), 1,
      true)
    assert.matches("read is 0 (complete) or 1", rule_error(function(k) k:op("bulk.wait", nil, { 0, 2 }) end), 1, true)
  end)

  it("refuses bad Lua-side uses at the user's line", function()
    local at, sl = atom_of(cpasync.CopyBulkTensorTileG2SOp())
    local mc = atom_of(cpasync.CopyBulkTensorTileG2SMulticastOp(), 2)
    local function in_kernel(args, f) return H.error_of(function() compile(f, args) end) end
    local msg = in_kernel({ at, H.f32(4) }, function(a, x)
      local sA = cute.make_smem_tensor(cute.f32, sl, 128)
      local part = cpasync.tma_partition(a, 0, cute.make_layout(1), sl)
      cute.copy(a, part:gmem_tile({ 0, 0 }), part:smem_tile(sA)) -- line: no barrier
      x[0] = 1
    end)
    assert.matches("tma_ptx_spec.lua:%d+: .*a TMA load completes on an mbarrier: pass { tma_bar_ptr", msg)
    msg = in_kernel({ mc, H.f32(4) }, function(a, x)
      local sA = cute.make_smem_tensor(cute.f32, sl, 128)
      local part = cpasync.tma_partition(a, 0, cute.make_layout(2), sl)
      cute.copy(a, part:gmem_tile({ 0, 0 }), part:smem_tile(sA), { tma_bar_ptr = bar_ptr() })
      x[0] = 1
    end)
    assert.matches("CopyBulkTensorTileG2SMulticastOp needs { mcast_mask", msg, 1, true)
    msg = in_kernel({ H.f32(4) }, function(x)
      local sA = cute.make_smem_tensor(cute.f32, sl, 128)
      local part = cpasync.tma_partition(at, 0, cute.make_layout(1), sl)
      cute.copy(at, part:gmem_tile({ 0, 0 }), part:smem_tile(sA), { tma_bar_ptr = bar_ptr() })
      x[0] = 1
    end)
    assert.matches("this TMA atom is not a kernel argument", msg, 1, true)
    msg = in_kernel({ at, H.f32(4) }, function(a, x)
      local sA = cute.make_smem_tensor(cute.f32, sl, 16)
      local part = cpasync.tma_partition(a, 0, cute.make_layout(1), sl)
      cute.copy(a, part:gmem_tile({ 0, 0 }), part:smem_tile(sA), { tma_bar_ptr = bar_ptr() })
      x[0] = 1
    end)
    assert.matches("the shared-memory tensor is 16-byte aligned; the atom's boxes need 128", msg, 1, true)
    msg = in_kernel({ H.f32(4) }, function(x)
      cute.arch.cp_async_bulk_s2g(x:ptr_at(0), smem(64, 16):ptr_at(0), 40)
    end)
    assert.matches("40 bytes: a bulk copy moves a positive multiple of 16 bytes", msg, 1, true)
    local line = debug.getinfo(1, "l").currentline + 3
    msg = H.error_of(function()
      compile(function(d, x)
        cute.arch.tma_load(d, smem(1024):ptr_at(0), bar_ptr(), { 0, 0, 0, 0, 0, 0 })
        x[0] = 1
      end, { desc(), H.f32(4) })
    end)
    assert.matches("tma_ptx_spec.lua:" .. line .. ": cute.arch.tma_load: the coordinates are a list of 1 to 5 "
      .. "integers (one per TMA dimension), got 6", msg, 1, true)
  end)

  it("refuses, before any launch, tensors that break TMA's rules (at the user's line)", function()
    local sl = cute.make_layout({ 32, 16 })
    local op = cpasync.CopyBulkTensorTileG2SOp()
    local msg = H.error_at(function()
      cpasync.make_tiled_tma_atom(op, cute.fake_tensor(cute.f32, { 100, 70 }, { 1, 101 }), sl, { 32, 16 })
    end, 1)
    assert.matches("stride of 404 bytes; TMA needs strides that are multiples of 16 bytes", msg, 1, true)
    msg = H.error_at(function()
      cpasync.make_tiled_tma_atom(op, cute.fake_tensor(cute.f32, { 2, 2, 2, 2, 2, 2 }), cute.make_layout(2), { 2 })
    end, 1)
    assert.matches("TMA moves tensors of 1 to 5 dimensions", msg, 1, true)
    msg = H.error_at(function()
      cpasync.make_tiled_tma_atom(op, cute.fake_tensor(cute.f32, { 100, 70 }, { 1, 112 }, { align = 8 }), sl,
        { 32, 16 })
    end, 1)
    assert.matches("16-byte aligned base", msg, 1, true)
    -- stores and reductions write whole 16-byte chunks of the contiguous mode
    -- (on an H100, past a 150-element u16 row's edge): an extent that is no
    -- multiple of 16 bytes is refused for them, not for loads
    local g = cute.fake_tensor(cute.u16, { 100, 150 }, { 152, 1 })
    for _, st in ipairs { cpasync.CopyBulkTensorTileS2GOp(), cpasync.CopyReduceBulkTensorTileS2GOp("add") } do
      local sl2 = cute.make_layout({ 64, 32 }, { 32, 1 })
      msg = H.error_at(function() cpasync.make_tiled_tma_atom(st, g, sl2, { 64, 32 }) end, 0)
      assert.matches("writes whole 16-byte chunks of the contiguous mode 1, which has 150 elements (300 bytes", msg, 1,
        true)
    end
    assert.is_truthy(cpasync.make_tiled_tma_atom(op, g, cute.make_layout({ 64, 32 }, { 32, 1 }), { 64, 32 }))
    assert.is_truthy(cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(),
      cute.fake_tensor(cute.u16, { 100, 144 }, { 152, 1 }), cute.make_layout({ 64, 32 }, { 32, 1 }), { 64, 32 }))
    msg = H.error_at(function()
      cpasync.make_tiled_tma_atom(cpasync.CopyReduceBulkTensorTileS2GOp("xor"), cute.fake_tensor(cute.f32, { 64, 16 }),
        sl, { 32, 16 })
    end, 1)
    assert.matches("the reduction xor is for integers, not f32", msg, 1, true)
    msg = H.error_at(function() cpasync.CopyReduceBulkTensorTileS2GOp("mul") end)
    assert.matches("the reduction is one of add, min, max, inc, dec, and, or, xor, got mul", msg, 1, true)
  end)
end)
