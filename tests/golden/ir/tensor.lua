-- Tensor cores and asynchronous copies on sm_80: mma.sync in each family
-- (f16 with f32 and f16 accumulators, bf16, tf32, s8, u4, b1, f64), ldmatrix
-- x1/x2/x4 (and transposed), cp.async (ca, cg, zero-fill) with groups.
return {
  sm = 80,
  ptx = { "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32",
    "mma.sync.aligned.m16n8k64.row.col.s32.u4.u4.s32", "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc",
    "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
    "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16", "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
    "cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group 1",
    "cp.async.wait_group 0", "st.global.v4.f32" },
  build = function(_, m)
    m:set_loc("tensor.lua", 1, "tensor")
    -- a device function that takes and returns whole fragments
    local step = m:func("mma_step", "{4 x f32}")
    local fa, fb, fc = step:param("{4 x i32}"), step:param("{2 x i32}"), step:param("{4 x f32}")
    step:ret(step:op("mma", nil, fa, fb, fc, { "m16n8k16", "f16", "f16", "f32", "f32" }))
    local k = m:kernel("tensor", { maxntid = 128 })
    local g = k:param("ptr<i8, global, 16>")
    local out = k:param("ptr<f32, global, 16>")
    local oi = k:param("ptr<i32, global, 16>")
    local od = k:param("ptr<f64, global, 16>")
    local lane = k:op("sreg", nil, { "laneid" })
    local s = k:op("smem", "ptr<i8, shared, 128>", { 8192, 128 })
    local off = k:op("mul", nil, lane, k:const("i32", 16))
    m:set_loc("tensor.lua", 2, "copy")
    -- global -> shared, 16 bytes per lane, in two groups
    local sdst = k:op("gep", "ptr<i8, shared, 16>", s, off)
    local gsrc = k:op("gep", "ptr<i8, global, 16>", g, off)
    k:op("cp.async", nil, sdst, gsrc, { 16, "cg" })
    k:op("cp.async", nil, k:op("gep", "ptr<i8, shared, 16>", sdst, k:const("i32", 512)),
      k:op("gep", "ptr<i8, global, 16>", gsrc, k:const("i32", 512)), { 8 })
    k:op("cp.async.commit", nil)
    k:op("cp.async", nil, k:op("gep", "ptr<i8, shared, 16>", sdst, k:const("i32", 1024)),
      k:op("gep", "ptr<i8, global, 16>", gsrc, k:const("i32", 1024)), k:const("i32", 4), { 16, "ca" })
    k:op("cp.async.commit", nil)
    k:op("cp.async.wait", nil, { 1 })
    k:op("cp.async.wait", nil, { 0 })
    k:op("barrier", nil)
    m:set_loc("tensor.lua", 3, "fragments")
    local a4 = k:op("ldmatrix", nil, sdst, { 4 })
    local b2 = k:op("ldmatrix", nil, k:op("gep", "ptr<i8, shared, 16>", sdst, k:const("i32", 2048)), { 2, { "trans" } })
    local x1 = k:op("ldmatrix", nil, k:op("gep", "ptr<i8, shared, 16>", sdst, k:const("i32", 4096)), { 1 })
    local function part(frag, from, count)
      local regs = {}
      for q = 1, count do regs[q] = k:op("extract", nil, frag, { (from + q - 1) % 4 }) end
      if count == 1 then return regs[1] end
      local ts = {}
      for q = 1, count do ts[q] = "i32" end
      return k:op("pack", m:struct(ts), unpack(regs))
    end
    local z = k:const("f32", 0)
    local c4 = k:op("pack", "{4 x f32}", z, z, z, z)
    m:set_loc("tensor.lua", 4, "mma")
    local n = 0
    local function sink(ptr, d, t, count)
      local regs = {}
      for q = 1, count do regs[q] = k:op("extract", nil, d, { q - 1 }) end
      local vt = m:vec(t, count)
      k:op("store", nil, k:op("gep", nil, ptr, k:const("i32", n * 4)), k:op("pack", vt, unpack(regs)))
      n = n + 1
    end
    local d = k:call(step, a4, b2, c4)
    sink(out, d, "f32", 4)
    local h0 = k:op("extract", nil, a4, { 0 })
    local dh = k:op("mma", nil, part(a4, 0, 2), x1, k:op("pack", "{2 x i32}", h0, h0), { "m16n8k8", "f16", "f16", "f16",
      "f16" })
    sink(oi, dh, "i32", 2)
    sink(out, k:op("mma", nil, a4, b2, d, { "m16n8k16", "bf16", "bf16", "f32", "f32" }), "f32", 4)
    sink(out, k:op("mma", nil, a4, b2, d, { "m16n8k8", "tf32", "tf32", "f32", "f32" }), "f32", 4)
    sink(out, k:op("mma", nil, part(a4, 1, 2), x1, d, { "m16n8k4", "tf32", "tf32", "f32", "f32" }), "f32", 4)
    local ci = k:op("pack", "{4 x i32}", h0, h0, h0, h0)
    sink(oi, k:op("mma", nil, a4, b2, ci, { "m16n8k32", "s8", "u8", "s32", "s32", { "sat" } }), "i32", 4)
    sink(oi, k:op("mma", nil, a4, b2, ci, { "m16n8k64", "u4", "u4", "s32", "s32" }), "i32", 4)
    sink(oi, k:op("mma", nil, a4, b2, ci, { "m16n8k256", "b1", "b1", "s32", "s32" }), "i32", 4)
    local a64 = k:op("cvt", "f64", k:op("bitcast", "f32", h0))
    local c64 = k:op("pack", "{2 x f64}", a64, a64)
    local d64 = k:op("mma", nil, a64, a64, c64, { "m8n8k4", "f64", "f64", "f64", "f64" })
    k:op("store", nil, k:op("gep", "ptr<<2 x f64>, global, 16>",
      k:op("ptrcast", "ptr<<2 x f64>, global, 16>", od), lane),
      k:op("pack", "<2 x f64>", k:op("extract", nil, d64, { 0 }), k:op("extract", nil, d64, { 1 })))
  end,
}
