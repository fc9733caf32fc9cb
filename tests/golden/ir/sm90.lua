-- sm_89/sm_90 features: fp8 and f64 mma shapes, stmatrix, clusters (attribute,
-- special registers, scope, shared::cluster accesses), a by-value 128-byte
-- grid_constant parameter, and the other kernel attributes.
return {
  sm = 90,
  archs = { "sm_90a" },
  ptx = { "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32", "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64",
    "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "%cluster_ctarank", "%clusterid.x", "%cluster_nctaid.y",
    ".reqnctapercluster 2, 1, 1", ".maxnreg 128", "fence.acq_rel.cluster", "ld.shared::cluster.b32",
    "st.relaxed.cluster.shared::cluster.f32", "atom.relaxed.cluster.global.add.u32",
    ".param .align 64 .b8 sm90_param_1[128]",
    ".maxntid 128, 1, 1" },
  build = function(_, m)
    m:set_loc("sm90.lua", 1, "sm90")
    local k = m:kernel("sm90", { maxntid = 128, cluster = { 2, 1, 1 }, maxnreg = 128, dynamic_smem = 4096 })
    local out = k:param("ptr<i32, global, 16>")
    local tmap = k:param_blob(128, 64)
    local of = k:param("ptr<f32, global, 16>")
    local n = 0
    local function sink(v)
      k:op("store", nil, k:op("gep", nil, out, k:const("i32", n)), v)
      n = n + 1
    end
    for _, r in ipairs { "cluster_ctarank", "cluster_nctarank", "clusterid.x", "nclusterid.y", "cluster_ctaid.z",
      "cluster_nctaid.y" } do
      sink(k:op("sreg", nil, { r }))
    end
    m:set_loc("sm90.lua", 2, "sm90")
    -- the descriptor stays in param space: read a word of it
    sink(k:op("load", nil, k:op("ptrcast", "ptr<i32, param, 64>", tmap)))
    k:op("fence", nil, { "acq_rel", "cluster" })
    k:op("atom", nil, out, k:const("i32", 1), { "add", "relaxed", "cluster" })
    -- shared::cluster addresses (32-bit) are reached through ld/st.shared::cluster
    local rank = k:op("sreg", nil, { "cluster_ctarank" })
    local remote = k:op("inttoptr", "ptr<i32, shared_cluster, 4>", k:op("shl", nil, rank, k:const("i32", 10)))
    sink(k:op("load", nil, remote))
    local remote_f = k:op("ptrcast", "ptr<f32, shared_cluster, 4>", remote)
    k:op("store", nil, remote_f, k:const("f32", 1), { "relaxed", "cluster" })
    m:set_loc("sm90.lua", 3, "sm90")
    local s = k:op("smem", "ptr<i8, shared, 128>", { 4096, 128 })
    local lane = k:op("sreg", nil, { "laneid" })
    local p = k:op("gep", "ptr<i8, shared, 16>", s, k:op("mul", nil, lane, k:const("i32", 16)))
    local a = k:op("ldmatrix", nil, p, { 4 })
    k:op("stmatrix", nil, k:op("gep", "ptr<i8, shared, 16>", p, k:const("i32", 1024)), a, { 4, { "trans" } })
    local b = k:op("pack", "{2 x i32}", k:op("extract", nil, a, { 0 }), k:op("extract", nil, a, { 1 }))
    local z = k:const("f32", 0)
    local c = k:op("pack", "{4 x f32}", z, z, z, z)
    local d = k:op("mma", nil, a, b, c, { "m16n8k32", "e4m3", "e5m2", "f32", "f32" })
    local v = {}
    for q = 1, 4 do v[q] = k:op("extract", nil, d, { q - 1 }) end
    k:op("store", nil, k:op("gep", "ptr<<4 x f32>, global, 16>", k:op("ptrcast", "ptr<<4 x f32>, global, 16>", of),
      lane), k:op("pack", "<4 x f32>", unpack(v)))
    m:set_loc("sm90.lua", 4, "sm90")
    local x = k:op("cvt", "f64", v[1])
    local ad, bd = {}, {}
    for q = 1, 8 do ad[q] = x end
    for q = 1, 4 do bd[q] = x end
    local d64 = k:op("mma", nil, k:op("pack", "{8 x f64}", unpack(ad)), k:op("pack", "{4 x f64}", unpack(bd)),
      k:op("pack", "{4 x f64}", unpack(bd)), { "m16n8k16", "f64", "f64", "f64", "f64" })
    sink(k:op("cvt", "i32", k:op("extract", nil, d64, { 3 })))
  end,
}
