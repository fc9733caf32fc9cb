-- Kernel bodies that Lua would run "successfully" into a wrong kernel are
-- refused at the user's line: a comparison Lua took as true, a value
-- returned from a kernel, a Lua for loop over a traced bound (explained).
local cute = require "cute"

local function compile_error(body, ...)
  local k = cute.kernel("silent", body, { preprocess = false }) -- the tracer's own checks
  local ok, msg = pcall(function(...) return k:with({ arch = "sm_80" }):compile(...) end, ...)
  assert.is_false(ok, "expected the compile to fail")
  return tostring(msg)
end

local X = cute.fake_tensor(cute.f32, 16)

describe("a kernel body", function()
  it("may not use a comparison as a Lua condition (always true)", function()
    local line = debug.getinfo(1, "l").currentline + 3
    local msg = compile_error(function(x, n)
      local i = cute.thread_idx().x
      if i:lt(n) then x[i] = 1 end
    end, X, cute.i32(16))
    assert.matches("silent_spec.lua:" .. line .. ": the result of this comparison is never used", msg, 1, true)
    assert.matches("cute.if_(a:lt(b), function() ... end)", msg, 1, true)
    -- `and`/`not` on comparisons too, the first one named
    line = debug.getinfo(1, "l").currentline + 3
    msg = compile_error(function(x, n)
      local i = cute.thread_idx().x
      local inside = i:ge(0) and i:lt(n)
      if not inside then return end
      x[i] = 1
    end, X, cute.i32(16))
    assert.matches("silent_spec.lua:" .. line .. ": the result of this comparison", msg, 1, true)
  end)

  it("may use comparisons on the GPU, whatever way", function()
    local k = cute.kernel("cmp_ok", function(x, n)
      local i = cute.thread_idx().x
      cute.if_(i:lt(n), function() x[i] = 1 end)
      x[0] = cute.where(i:eq(0), x[2], 3.0)
      local c = i:gt(3) -- used later
      cute.if_(c, function() x[1] = 0 end)
    end)
    assert.matches("setp", k:with({ arch = "sm_80" }):compile(X, cute.i32(16)):ptx())
  end)

  it("may not return a value", function()
    local msg = compile_error(function(x)
      x[0] = 1
      return x
    end, X)
    assert.matches("kernel silent %(.*silent_spec.lua:%d+%) returns a value", msg)
  end)

  it("gets a Lua for over a traced bound explained when the error is shown", function()
    local msg = compile_error(function(x, n)
      for j = 0, n - 1 do x[j] = 1 end
    end, X, cute.i32(16))
    assert.matches("'for' limit must be a number", msg, 1, true)
    local shown = require("cute._err").render(msg)
    assert.matches("for i in cute.range(lo, hi) do", shown, 1, true)
  end)
end)

describe("messages in the user's terms", function()
  it("name the tensor and its rank for an index of the wrong rank, dynamic extents as ?", function()
    local msg = compile_error(function(x)
      local i = cute.thread_idx().x
      x[{ i, i }] = 1
    end, X)
    assert.matches("indexing tensor 'x' (shape 16, f32) with 2 coordinates (?,?): it has rank 1, so give 1", msg, 1,
      true)
    assert.is_nil(msg:find("value %", 1, true))
  end)

  it("print layouts and tensors with cute.printf's {} and %s, as traced", function()
    local k = cute.kernel("printf_layout", function(x)
      cute.printf("L={} x=%s\n", cute.make_layout({ 4, 8 }), x)
    end)
    local ll = k:with({ arch = "sm_80" }):compile(X):ll()
    assert.matches("L=(4,8):(1,4) x=tensor<global f32> o ?:1", ll, 1, true)
    local msg = compile_error(function(x) cute.printf("%d\n", cute.make_layout(4)) x[0] = 1 end, X)
    assert.matches("cute.printf: argument 1 is Layout, which %d cannot print; use {} or %s", msg, 1, true)
  end)

  it("take Lua numbers as cute.asm operands by their constraint, and refuse what cute.asm cannot use", function()
    local k = cute.kernel("asm_const", function(x)
      x[0] = cute.asm("add.u32 $0, $1, $2;", "=r,r,r", { 5, cute.thread_idx().x }, { ret = cute.u32 }):to(cute.f32)
    end)
    local ptx = k:with({ arch = "sm_80" }):compile(X):ptx()
    assert.matches("add%.u32", ptx)
    assert.matches("mov%.[bu]32%s+%%r%d+, 5;", ptx)
    assert.matches("the constraints \"=r,r\" have an output: give its type", compile_error(function(x)
      x[0] = cute.asm("mov.u32 $0, $1;", "=r,r", { 5 })
    end, X), 1, true)
    assert.matches("operand 1 is table", compile_error(function(x)
      x[0] = cute.asm("mov.u32 $0, $1;", "=r,r", { {} }, { ret = cute.u32 }):to(cute.f32)
    end, X), 1, true)
    assert.matches("cute.asm operand 1: the Lua number 1099511627776 is out of range for i32", compile_error(function(x)
      x[0] = cute.asm("mov.u32 $0, $1;", "=r,r", { 2 ^ 40 }, { ret = cute.u32 }):to(cute.f32)
    end, X), 1, true)
  end)

  it("name the Lua line of a ptxas error without line info (compiling again with it, on the error path)", function()
    local line = debug.getinfo(1, "l").currentline + 2
    local k = cute.kernel("bad_asm", function(x)
      x[0] = cute.asm("bogus.instr.u32 $0, $1;", "=r,r", { 5 }, { ret = cute.u32 }):to(cute.f32)
    end)
    local ok, msg = pcall(function() return k:with({ arch = "sm_90a" }):compile(X) end)
    assert.is_false(ok)
    msg = tostring(msg)
    assert.matches("^[^\n]*silent_spec%.lua:" .. line .. ": bad_asm: ptxas could not compile", msg)
    assert.matches("from [^\n]*silent_spec%.lua:" .. line .. ":", msg)
  end)
end)
