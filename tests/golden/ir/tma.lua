-- The TMA and bulk-copy family (src/emit/emit_tma.c): loads of 1 and 5
-- dimensions, a multicast load, a store, a reduction, prefetches of a box
-- and of the descriptor, non-tensor bulk copies both ways and an L2
-- prefetch, the bulk group's commit and waits. The descriptor is a by-value
-- grid_constant parameter addressed in place (cvta.param).
return {
  sm = 90,
  archs = { "sm_90a" },
  ptx = { ".param .align 64 .b8 tma_param_0[128]", "cvta.param.u64",
    "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster",
    "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group",
    "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group",
    "cp.async.bulk.prefetch.tensor.4d.L2.global.tile", "prefetch.tensormap",
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
    "cp.async.bulk.global.shared::cta.bulk_group", "cp.async.bulk.prefetch.L2.global",
    "cp.async.bulk.commit_group;", "cp.async.bulk.wait_group.read 0;", "cp.async.bulk.wait_group 1;" },
  build = function(_, m)
    m:set_target("sm_90a") -- the multicast load needs TMA_MULTICAST
    m:set_loc("tma.lua", 1, "tma")
    local k = m:kernel("tma", { maxntid = 128 })
    local d = k:param_blob(128, 64)
    local g = k:param("ptr<i8, global, 16>")
    local tile = k:op("smem", "ptr<i8, shared, 1024>", { 8192, 1024 })
    local bar = k:op("smem", "ptr<i8, shared, 8>", { 8, 8 })
    local x = k:op("sreg", nil, { "ctaid.x" })
    local z = k:const("i32", 0)
    k:op("tma.prefetch_desc", nil, d)
    k:op("tma.load", nil, tile, d, bar, x, { 1 })
    k:op("tma.load", nil, tile, d, bar, x, z, z, z, x, { 5 })
    k:op("tma.load.multicast", nil, tile, d, bar, z, x, k:const("i16", 3), { 2 })
    m:set_loc("tma.lua", 2, "tma")
    k:op("tma.store", nil, d, tile, x, z, z, { 3 })
    k:op("tma.reduce", nil, d, tile, z, x, { 2, "add" })
    k:op("tma.prefetch", nil, d, x, z, z, x, { 4 })
    m:set_loc("tma.lua", 3, "tma")
    k:op("bulk.load", nil, tile, g, k:const("i32", 256), bar)
    k:op("bulk.store", nil, g, tile, k:op("mul", nil, x, k:const("i32", 16)))
    k:op("bulk.prefetch", nil, g, k:const("i32", 4096))
    k:op("bulk.commit", nil)
    k:op("bulk.wait", nil, { 0, 1 })
    k:op("bulk.wait", nil, { 1, 0 })
  end,
}
