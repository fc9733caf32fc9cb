-- Local variables as SSA values (ir_emit_promote.c): a packed bf16 fragment
-- and an f32 accumulator carried around a k-loop with phis, fragments moved
-- as split vectors (var.loadv -> bitcast -> extract -> mma -> pack ->
-- var.storev without building a vector), a counter changed in an if without
-- else, in a nested loop with break and continue, and through a while; an
-- optimisation barrier on a promoted variable; a variable indexed at run time
-- stays in memory; an unpacked pair bitcast to a 32-bit lane is built whole
-- where that needs it. The PTX has no local memory but for the one table.
return {
  sm = 80,
  ptx = { "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "ld.local", "st.local" },
  build = function(_, m)
    m:set_loc("promote.lua", 1, "promote")
    local k = m:kernel("promote", { maxntid = 32 })
    local out = k:param("ptr<f32, global, 16>")
    local oi = k:param("ptr<i32, global, 4>")
    local n = k:param("i32")
    local zero, one = k:const("i32", 0), k:const("i32", 1)
    local lane = k:op("sreg", nil, { "laneid" })
    local a = k:var("bf16", 8)   -- packed: four 32-bit words
    local acc = k:var("f32", 4)
    local cnt = k:var("i32")
    local tab = k:var("i32", 4)  -- indexed at run time: an alloca
    local fz = k:const("f32", 0)
    for i = 0, 3 do k:var_store(acc, i, fz) end
    k:var_store(cnt, 0, zero)
    local h = k:op("bitcast", "bf16", k:op("cvt", "i16", lane))
    for i = 0, 7 do k:var_store(a, i, h) end
    m:set_loc("promote.lua", 2, "promote")
    local kk = k:for_(zero, n, one, 1)
      -- A as a split vector: four words straight into the mma
      local av = k:op("bitcast", "<4 x i32>", k:var_loadv(a, 0, 8))
      local ar = {}
      for q = 1, 4 do ar[q] = k:op("extract", nil, av, { q - 1 }) end
      local bv = k:op("bitcast", "<2 x i32>", k:var_loadv(a, 2, 4))
      local b1, b2 = k:op("extract", nil, bv, { 0 }), k:op("extract", nil, bv, { 1 })
      local cv = k:var_loadv(acc, 0, 4)
      local cr = {}
      for q = 1, 4 do cr[q] = k:op("extract", nil, cv, { q - 1 }) end
      local d = k:op("mma", nil, k:op("pack", "{4 x i32}", unpack(ar)), k:op("pack", "{2 x i32}", b1, b2),
        k:op("pack", "{4 x f32}", unpack(cr)), { "m16n8k16", "bf16", "bf16", "f32", "f32" })
      local dr = {}
      for q = 1, 4 do dr[q] = k:op("extract", nil, d, { q - 1 }) end
      k:var_storev(acc, 0, k:op("pack", "<4 x f32>", unpack(dr)))
      -- one element of the packed variable changes every other step
      k:if_(k:op("icmp", nil, k:op("and", nil, kk, one), zero, { "eq" }))
        k:var_store(a, 5, k:op("bitcast", "bf16", k:op("cvt", "i16", kk)))
      k:end_()
      k:var_opaque(a)
      -- a nested loop with continue and break
      local j = k:for_(zero, k:const("i32", 8), one, 1)
        k:if_(k:op("icmp", nil, j, kk, { "eq" }))
          k:continue_()
        k:end_()
        k:var_store(cnt, 0, k:op("add", nil, k:var_load(cnt, 0), j))
        k:if_(k:op("icmp", nil, k:var_load(cnt, 0), k:const("i32", 100), { "sgt" }))
          k:break_()
        k:end_()
      k:end_()
      k:var_store(tab, { k:op("and", nil, kk, k:const("i32", 3)) }, k:var_load(cnt, 0))
    k:end_()
    m:set_loc("promote.lua", 3, "promote")
    k:while_()
      local c = k:var_load(cnt, 0)
      k:cond(k:op("icmp", nil, c, k:const("i32", 1000), { "slt" }))
      k:var_store(cnt, 0, k:op("shl", nil, c, one))
    k:end_()
    k:op("store", nil, k:op("gep", "ptr<f32, global, 16>", out, k:op("mul", nil, lane, k:const("i32", 4))),
      k:var_loadv(acc, 0, 4))
    k:op("store", nil, k:op("gep", nil, oi, lane), k:op("add", nil, k:var_load(cnt, 0),
      k:var_load(tab, { k:op("and", nil, lane, k:const("i32", 3)) })))
    -- an odd count of bf16: not packed; four of them bitcast to two 32-bit
    -- lanes cannot stay split, and are built where the bitcast needs them
    local odd = k:var("bf16", 5)
    for i = 0, 4 do k:var_store(odd, i, h) end
    local pair = k:op("bitcast", "<2 x i32>", k:var_loadv(odd, 1, 4))
    local at64 = k:op("gep", nil, oi, k:op("add", nil, lane, k:const("i32", 64)))
    k:op("store", nil, at64, k:op("extract", nil, pair, { 0 }))
    local w = k:op("bitcast", "i16", k:var_load(a, 5))
    k:op("store", nil, k:op("gep", nil, oi, k:op("add", nil, lane, k:const("i32", 32))), k:op("cvtu", "i32", w))
  end,
}
