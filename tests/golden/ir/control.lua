-- Structured control flow: for (constant, negative and run-time steps; unroll
-- hints), if/else, while, break, continue, early return; values carried through
-- variables; device functions and calls; printf, trap and inline PTX.
return {
  sm = 80,
  ptx = { "vprintf", "trap;", "add.cc.u32", ".func", "call.uni", "bra" },
  build = function(_, m)
    m:set_loc("control.lua", 1, "clamp")
    -- a device function: clamp(x, lo, hi), with two returns
    local clamp = m:func("clamp", "i32")
    local x, lo, hi = clamp:param("i32"), clamp:param("i32"), clamp:param("i32")
    clamp:if_(clamp:op("icmp", nil, x, lo, { "slt" }))
      clamp:ret(lo)
    clamp:end_()
    clamp:ret(clamp:op("smin", nil, x, hi))

    m:set_loc("control.lua", 10, "control")
    local k = m:kernel("control")
    local out = k:param("ptr<i32, global, 4>")
    local n = k:param("i32")
    local step = k:param("i32")
    local zero, one = k:const("i32", 0), k:const("i32", 1)
    local tid = k:op("sreg", nil, { "tid.x" })
    -- early return
    k:if_(k:op("icmp", nil, tid, k:const("i32", 512), { "sge" }))
      k:ret()
    k:end_()
    local acc = k:var("i32")
    k:var_store(acc, 0, zero)
    m:set_loc("control.lua", 11, "control")
    -- for with a constant step, unrolled by 4; continue and break inside
    local i = k:for_(zero, n, one, 4)
      k:if_(k:op("icmp", nil, k:op("and", nil, i, one), one, { "eq" }))
        k:continue_()
      k:end_()
      k:if_(k:op("icmp", nil, i, k:const("i32", 100), { "sgt" }))
        k:break_()
      k:end_()
      k:var_store(acc, 0, k:op("add", nil, k:var_load(acc, 0), i))
    k:end_()
    m:set_loc("control.lua", 12, "control")
    -- counting down, fully unrolled; and a run-time step that may be negative
    local j = k:for_(k:const("i32", 8), zero, k:const("i32", -2), -1)
      k:var_store(acc, 0, k:op("xor", nil, k:var_load(acc, 0), j))
    k:end_()
    local q = k:for_(n, zero, step, 1)
      k:var_store(acc, 0, k:op("sub", nil, k:var_load(acc, 0), q))
    k:end_()
    m:set_loc("control.lua", 13, "control")
    -- while with its condition region, and if/else inside
    k:while_()
      local v = k:var_load(acc, 0)
      k:cond(k:op("icmp", nil, v, k:const("i32", 1000), { "ult" }))
      k:if_(k:op("icmp", nil, v, zero, { "eq" }))
        k:var_store(acc, 0, one)
      k:else_()
        k:var_store(acc, 0, k:op("shl", nil, v, one))
      k:end_()
    k:end_()
    m:set_loc("control.lua", 14, "control")
    local r = k:call(clamp, k:var_load(acc, 0), zero, n)
    -- inline PTX: a carry chain
    local sum = k:op("asm", "{i32, i32}", r, tid, { "add.cc.u32 $0, $2, $3; addc.u32 $1, 0, 0;", "=r,=r,r,r" })
    k:op("store", nil, k:op("gep", nil, out, tid), k:op("extract", nil, sum, { 0 }))
    k:op("printf", nil, tid, r, k:const("f32", 0.5), { "tid %d r %d x %f\n" })
    k:if_(k:op("icmp", nil, r, k:const("i32", -1), { "eq" }))
      k:op("trap", nil)
    k:end_()
  end,
}
