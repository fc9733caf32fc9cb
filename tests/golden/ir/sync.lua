-- Special registers, clocks, barriers (block, named, warp), fences, warp
-- shuffles, votes and reductions.
return {
  sm = 80,
  ptx = { "%tid.y", "%ctaid.z", "%nctaid.x", "%laneid", "%warpid", "%smid", "%lanemask_lt", "%clock64",
    "%globaltimer", "%dynamic_smem_size", "bar.sync \t0;", "bar.sync %r", "bar.arrive", "bar.warp.sync",
    "fence.acq_rel.gpu", "fence.sc.sys", "fence.acq_rel.cta", "shfl.sync.bfly.b32", "shfl.sync.idx.b32",
    "shfl.sync.up.b32", "shfl.sync.down.b32", "vote.sync.ballot.b32", "vote.sync.all.pred", "vote.sync.any.pred",
    "vote.sync.uni.pred", "redux.sync.add.s32", "redux.sync.min.u32", "redux.sync.xor.b32" },
  build = function(_, m)
    m:set_loc("sync.lua", 1, "sync")
    local k = m:kernel("sync", { reqntid = { 64, 2 }, minctasm = 4 })
    local out = k:param("ptr<i32, global, 4>")
    local of = k:param("ptr<f32, global, 4>")
    local ol = k:param("ptr<i64, global, 8>")
    local x = k:param("f32")
    local n = 0
    local function sink(ptr, v)
      k:op("store", nil, k:op("gep", nil, ptr, k:const("i32", n)), v)
      n = n + 1
    end
    for _, r in ipairs { "tid.x", "tid.y", "tid.z", "ntid.x", "ctaid.z", "nctaid.x", "laneid", "warpid", "nwarpid",
      "smid", "nsmid", "lanemask_eq", "lanemask_lt", "lanemask_le", "lanemask_gt", "lanemask_ge",
      "dynamic_smem_size", "total_smem_size" } do
      sink(out, k:op("sreg", nil, { r }))
    end
    m:set_loc("sync.lua", 2, "sync")
    sink(out, k:op("timer", nil, { "clock" }))
    sink(ol, k:op("timer", nil, { "clock64" }))
    sink(ol, k:op("timer", nil, { "globaltimer" }))
    m:set_loc("sync.lua", 3, "sync")
    local full = k:const("i32", -1)
    local tid = k:op("sreg", nil, { "tid.x" })
    k:op("barrier", nil)
    k:op("barrier.named", nil, k:const("i32", 1), k:const("i32", 64))
    k:op("barrier.named", nil, k:const("i32", 2), k:const("i32", 64), { "arrive" })
    k:op("barrier.named", nil, tid)
    k:op("syncwarp", nil, full)
    k:op("fence", nil)
    k:op("fence", nil, { "sc", "sys" })
    k:op("fence", nil, { "acq_rel", "cta" })
    m:set_loc("sync.lua", 4, "sync")
    local one = k:const("i32", 1)
    local v = k:op("shfl", nil, full, tid, one, { "bfly" })
    v = k:op("add", nil, v, k:op("shfl", nil, full, v, k:const("i32", 0), { "idx" }))
    v = k:op("add", nil, v, k:op("shfl", nil, full, v, one, { "up" }))
    v = k:op("add", nil, v, k:op("shfl", nil, full, v, one, { "down", 16 }))
    sink(out, v)
    sink(of, k:op("shfl", nil, full, x, k:const("i32", 4), { "bfly" }))
    local odd = k:op("icmp", nil, k:op("and", nil, tid, one), one, { "eq" })
    sink(out, k:op("vote", nil, full, odd, { "ballot" }))
    for _, mode in ipairs { "all", "any", "uni" } do
      sink(out, k:op("select", nil, k:op("vote", nil, full, odd, { mode }), one, k:const("i32", 0)))
    end
    for _, op in ipairs { "add", "min", "max", "umin", "umax", "and", "or", "xor" } do
      sink(out, k:op("redux", nil, full, tid, { op }))
    end
  end,
}
