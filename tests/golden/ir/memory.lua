-- Loads and stores (scalar, vector, volatile, relaxed/acquire/release with
-- scopes, cache hints), local variables (static and dynamic indices), static and
-- dynamic shared memory, atomics and compare-and-swap.
return {
  sm = 80,
  ptx = { "ld.global.v4.f32", "st.global.v4.f32", "ld.volatile.global", "ld.relaxed.gpu.global.b32",
    "ld.acquire.cta.global.b32", "st.release.sys.global.b32", "ld.global.cg.v4.f32", "ld.global.nc.f32",
    "st.global.cs.f32", "ld.global.cs.v2.f32", "st.global.wt.v4.f32", "ld.shared.v2.f32", "st.shared.f32",
    "atom.global.add.f32", "atom.acq_rel.gpu.global.add.u32", "atom.shared.max.s32", "atom.global.inc.u32",
    "atom.relaxed.cta.global.exch.b64", "atom.global.cas.b32", "atom.global.add.f64", "ld.local", "st.local",
    "__cl_dsmem", "ld.global.v4.b32", "st.global.v4.b32" },
  build = function(_, m)
    m:set_loc("memory.lua", 1, "memory")
    local k = m:kernel("memory", { maxntid = 256 })
    local p = k:param("ptr<f32, global, 16>")
    local q = k:param("ptr<i32, global, 4>")
    local w = k:param("ptr<i64, global, 8>")
    local dp = k:param("ptr<f64, global, 8>")
    local i = k:param("i32")
    local x = k:param("f32")
    local tid = k:op("sreg", nil, { "tid.x" })
    m:set_loc("memory.lua", 2, "memory")
    local v4 = k:op("load", "<4 x f32>", p)
    k:op("store", nil, k:op("gep", nil, p, k:const("i32", 4)), v4)
    local vol = k:op("load", nil, q, { "volatile" })
    k:op("store", nil, q, vol, { "volatile" })
    local rl = k:op("load", nil, q, { "relaxed", "gpu" })
    local aq = k:op("load", nil, k:op("gep", nil, q, k:const("i32", 1)), { "acquire", "cta" })
    k:op("store", nil, k:op("gep", nil, q, k:const("i32", 2)), k:op("add", nil, rl, aq), { "release", "sys" })
    m:set_loc("memory.lua", 3, "memory")
    local cg = k:op("load", "<4 x f32>", k:op("gep", nil, p, k:const("i32", 8)), { "weak", "gpu", "cg" })
    local nc = k:op("load", nil, k:op("gep", nil, p, i), { "weak", "gpu", "nc" })
    local cs = k:op("load", "<2 x f32>", k:op("ptrcast", "ptr<f32, global, 8>", p), { "weak", "gpu", "cs" })
    k:op("store", nil, k:op("gep", nil, p, k:const("i32", 12)), cg, { "weak", "gpu", "wt" })
    k:op("store", nil, k:op("gep", nil, p, k:const("i32", 16)), nc, { "weak", "gpu", "cs" })
    k:op("store", nil, k:op("gep", "ptr<f32, global, 8>", p, k:const("i32", 18)), cs)
    m:set_loc("memory.lua", 4, "memory")
    -- shared memory: a static array and the dynamic area
    local s = k:op("smem", "ptr<f32, shared, 16>", { 4096, 16 })
    local ds = k:op("smem.dyn", "ptr<f32, shared, 16>", { 16 })
    local st = k:op("gep", nil, s, tid)
    k:op("store", nil, st, x)
    k:op("barrier", nil)
    local pair = k:op("gep", "ptr<f32, shared, 8>", s, k:op("mul", nil, tid, k:const("i32", 2)))
    local two = k:op("load", "<2 x f32>", pair)
    k:op("store", nil, k:op("gep", nil, ds, tid), k:op("extract", nil, two, { 1 }))
    m:set_loc("memory.lua", 5, "memory")
    -- local variables: promoted when indexed statically, in memory when not
    local acc = k:var("f32", 4)
    for j = 0, 3 do k:var_store(acc, j, x) end
    local sum = k:op("add", nil, k:var_load(acc, 0), k:var_load(acc, 3))
    local tab = k:var("i32", 8)
    k:var_store(tab, { k:op("and", nil, tid, k:const("i32", 7)) }, tid)
    local picked = k:var_load(tab, { k:op("and", nil, i, k:const("i32", 7)) })
    k:op("store", nil, k:op("gep", nil, q, k:const("i32", 3)), picked)
    k:op("store", nil, k:op("gep", nil, p, k:const("i32", 20)), sum)
    m:set_loc("memory.lua", 6, "memory")
    -- atomics
    local fp = k:op("ptrcast", "ptr<f32, global, 4>", p)
    k:op("store", nil, k:op("gep", nil, p, k:const("i32", 21)), k:op("atom", nil, fp, x, { "add" }))
    local ia = k:op("atom", nil, q, i, { "add", "acq_rel", "gpu" })
    local ssm = k:op("smem", "ptr<i32, shared, 4>", { 64, 4 })
    local mx = k:op("atom", nil, ssm, ia, { "max" })
    local inc = k:op("atom", nil, q, mx, { "inc" })
    local ex = k:op("atom", nil, w, k:op("cvt", "i64", inc), { "exch", "relaxed", "cta" })
    local old = k:op("atom.cas", nil, q, i, k:op("cvt", "i32", ex))
    k:op("atom", nil, dp, k:op("cvt", "f64", x), { "add" })
    for _, op in ipairs { "min", "umin", "umax", "dec", "and", "or", "xor" } do
      old = k:op("atom", nil, q, old, { op })
    end
    k:op("store", nil, k:op("gep", nil, q, k:const("i32", 5)), old)
    m:set_loc("memory.lua", 7, "memory")
    -- 16-bit data: a 16-byte bf16 vector moves as four words (ld/st.v4.b32),
    -- into a paired variable whole (var.storev) and out of it by element and
    -- as a vector (var.loadv)
    local hp = k:op("ptrcast", "ptr<bf16, global, 16>", p)
    local h8 = k:op("load", "<8 x bf16>", k:op("ptrcast", "ptr<<8 x bf16>, global, 16>", hp))
    local hv = k:var("bf16", 8)
    k:var_storev(hv, 0, h8)
    k:var_store(hv, 3, k:var_load(hv, 6))
    local back = k:var_loadv(hv, 0, 8)
    k:op("store", nil, k:op("ptrcast", "ptr<<8 x bf16>, global, 16>", k:op("gep", nil, hp, k:const("i32", 64))), back)
    local odd = k:var_loadv(hv, 3, 2)
    k:op("store", nil, k:op("ptrcast", "ptr<<2 x bf16>, global, 4>", k:op("gep", nil, hp, k:const("i32", 80))), odd)
  end,
}
