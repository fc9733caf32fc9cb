--- cute.trace.control: run-time control flow and mutable state in kernels.
--
-- Plain Lua control flow runs at trace time: `for i = 1, 4 do` unrolls, `if
-- cfg.stages > 2 then` picks code. Decisions the GPU makes at run time go
-- through these constructs, which become structured IR regions:
--
--   for i in cute.range(lo, hi, step, {unroll = n}) do ... end
--   cute.range(lo, hi, step, function(i) ... end)       -- the same, callback form
--   cute.if_(cond, function() ... end, function() ... end)
--   cute.while_(function() return cond end, function() ... end)
--   cute.break_(), cute.continue_(), cute.return_()     -- inside them
--
-- The body of a dynamic loop is traced once. Values made inside a region
-- cannot be read after it (the error names the region); state that outlives
-- a region lives in a cute.var or a register fragment.
local core = require "cute.trace.core"
local dtype = require "cute.dtype"
local err = require "cute._err"

local M = {}

-- The iterators of `for i in cute.range(...)` not yet started: their bounds (cute.pre.rt).
M.range_iterators = setmetatable({}, { __mode = "k" })

local is_value, type_of = core.is_value, core.type_of

local function ir_call(ok, what)
  if ok ~= 0 then core.ir_error(what) end
end

-- The loop bounds as values of one integer type (i32 unless a bound is an i64 value).
local function bounds(lo, hi, step)
  local t = core.i32
  local any_value, wide = false, false
  for _, x in ipairs { lo, hi, step } do
    if is_value(x) then
      local tx = type_of(x)
      if tx.kind ~= "int" and tx.kind ~= "uint" then
        err.raise("cute.range: bounds must be integers, got %s", tx.name)
      end
      if tx.bits > t.bits then t = tx end
      any_value = true
    elseif type(x) ~= "number" or x ~= math.floor(x) then
      err.raise("cute.range: bounds must be integers or integer values, got %s", core.describe(x))
    elseif x < -2 ^ 31 or x >= 2 ^ 31 then
      wide = true
    end
  end
  -- Lua numbers alone beyond i32: an i64 loop (with values, their type rules)
  if wide and not any_value then t = core.i64 end
  -- a narrower value widens when no value can change (i32 -> i64, u32 -> i64 or u64):
  -- `cute.range(tid, cute.size(t), step)` is an i64 loop over a tensor of 2^31 elements or more
  local function widen(x)
    if not is_value(x) then return x end
    local tx = type_of(x)
    if tx.bits < t.bits and (tx.kind == t.kind or (tx.kind == "uint" and t.kind == "int")) then return x:to(t.dtype) end
    return x
  end
  return core.coerce(widen(lo), t, "cute.range start"), core.coerce(widen(hi), t, "cute.range end"),
    core.coerce(widen(step), t, "cute.range step"), t
end

local function for_begin(lo, hi, step, unroll)
  if type(step) == "number" and step == 0 then err.raise("cute.range: step 0 would never end") end
  local t
  lo, hi, step, t = bounds(lo, hi, step)
  core.update_loc()
  local u = unroll == true and -1 or (unroll == false and 1 or (unroll or 0))
  local T = core.current()
  local iv = core.ir().for_begin(T.f, core.use(lo), core.use(hi), core.use(step), u)
  if iv == 0 then core.ir_error("cute.range") end
  core.push_region("loop")
  return core.value(iv, t)
end

local function region_end(what)
  core.update_loc()
  ir_call(core.ir().region_end(core.current().f), what)
  core.pop_region()
end

--- A dynamic loop: `for i in cute.range(n) do`, `cute.range(lo, hi)`,
-- `cute.range(lo, hi, step)`, with an optional options table {unroll = n |
-- true (full) | false (none)} and an optional body function (callback form).
-- The loop variable is a run-time value (i32, or i64 when a bound is i64).
-- @param a n, or lo (with b)
-- @param b optional: hi
-- @param c optional: step, or the options, or the body
-- @param d optional: the options or the body
-- @param e optional: the body
-- @return an iterator for a generic for (or nothing, with a body function)
-- @usage for i in cute.range(0, n, 32, {unroll = 4}) do x[i] = 0 end
function M.range(a, b, c, d, e)
  if not core.current() then err.raise("cute.range can only be used while tracing a kernel") end
  local args = { a, b, c, d, e }
  local body, opts
  local n = 0
  for i = 1, 5 do
    local x = args[i]
    if type(x) == "function" then
      body = x
    elseif type(x) == "table" and not is_value(x) then
      opts = x
    elseif x ~= nil then
      n = i
    end
  end
  local lo, hi, step
  if n <= 1 then
    lo, hi, step = 0, a, 1
  elseif n == 2 then
    lo, hi, step = a, b, 1
  else
    lo, hi, step = a, b, c
  end
  if hi == nil then err.raise("cute.range: give an upper bound: cute.range(n) or cute.range(lo, hi[, step])") end
  local unroll = opts and opts.unroll
  if opts then
    for key in pairs(opts) do
      if key ~= "unroll" then
        err.raise("cute.range: unknown option '%s'%s (the options are: unroll)", tostring(key),
          err.did_you_mean(key, { "unroll" }))
      end
    end
    if unroll ~= nil and type(unroll) ~= "boolean" and not (type(unroll) == "number" and unroll == math.floor(unroll)
        and unroll >= 1 and unroll <= 2 ^ 31 - 1) then
      err.raise("cute.range: unroll must be a whole number of iterations from 1 (no unrolling) to 2147483647, true "
        .. "(unroll fully) or false (never), got %s", type(unroll) == "number" and core.show_number(unroll)
        or tostring(unroll))
    end
  end
  if body then
    local iv = for_begin(lo, hi, step, unroll)
    body(iv)
    region_end("cute.range")
    return
  end
  -- generic-for form: the first call opens the loop and yields the variable,
  -- the second (after the body) closes it
  local state = 0
  local it = function()
    if state == 0 then
      state = 1
      return for_begin(lo, hi, step, unroll)
    end
    if state == 1 then
      state = 2
      region_end("cute.range")
    end
    return nil
  end
  -- the preprocessor (cute.pre) runs `for i in cute.range(...)` through the callback form
  M.range_iterators[it] = { lo = lo, hi = hi, step = step, opts = opts }
  return it
end

local function cond_value(c, what)
  if is_value(c) then
    if type_of(c).kind ~= "bool" then
      err.raise("%s: the condition must be a bool value (a comparison such as i:lt(n)), got a %s", what,
        type_of(c).name)
    end
    return c
  end
  err.raise("%s: the condition must be a bool value or a Lua boolean, got %s", what, core.describe(c))
end

--- if cond then then_fn() else else_fn() end, decided on the GPU. A Lua
-- boolean condition (or one the IR folded to a constant) picks the branch now.
-- @param cond a bool value (or a Lua boolean)
-- @param then_fn the function traced into the taken branch
-- @param else_fn optional: the function traced into the other branch
-- @usage cute.if_(i:lt(n), function() y[i] = x[i] end)
function M.if_(cond, then_fn, else_fn)
  if type(then_fn) ~= "function" then err.raise("cute.if_(cond, then_fn[, else_fn]): then_fn must be a function") end
  if else_fn ~= nil and type(else_fn) ~= "function" then err.raise("cute.if_: else_fn must be a function") end
  if type(cond) == "boolean" then
    if cond then then_fn() elseif else_fn then else_fn() end
    return
  end
  cond = cond_value(cond, "cute.if_")
  local known = core.const_value(cond)
  if known ~= nil then
    if known then then_fn() elseif else_fn then else_fn() end
    return
  end
  core.update_loc()
  local T = core.current()
  local ir = core.ir()
  ir_call(ir.if_begin(T.f, core.use(cond)), "cute.if_")
  core.push_region("if")
  then_fn()
  if else_fn then
    core.update_loc()
    ir_call(ir.else_begin(T.f), "cute.if_ (else)")
    core.pop_region()
    core.push_region("else")
    else_fn()
  end
  region_end("cute.if_")
end

--- while cond_fn() do body_fn() end, decided on the GPU. cond_fn is traced
-- once into the loop's condition and must return a bool value.
-- @param cond_fn a function returning a bool value
-- @param body_fn the loop body
-- @usage cute.while_(function() return k.value:lt(n) end, function() k.value = k.value + 1 end)
function M.while_(cond_fn, body_fn)
  if type(cond_fn) ~= "function" or type(body_fn) ~= "function" then
    err.raise("cute.while_(cond_fn, body_fn): both must be functions")
  end
  local T = core.current()
  if not T then err.raise("cute.while_ can only be used while tracing a kernel") end
  local ir = core.ir()
  core.update_loc()
  ir_call(ir.while_begin(T.f), "cute.while_")
  core.push_region("while condition")
  local c = cond_fn()
  if type(c) == "boolean" then c = core.const(core.bool, c) end
  c = cond_value(c, "cute.while_")
  core.update_loc()
  ir_call(ir.while_cond(T.f, core.use(c)), "cute.while_")
  core.pop_region()
  core.push_region("while loop")
  body_fn()
  region_end("cute.while_")
end

--- Leaves the innermost dynamic loop.
-- @usage cute.if_(x[i]:eq(0), function() cute.break_() end)
function M.break_()
  if not core.current() or not core.in_loop() then err.raise("cute.break_() outside a dynamic loop") end
  core.update_loc()
  ir_call(core.ir().brk(core.current().f), "cute.break_")
  core.mark_dead()
end

--- Goes to the next iteration of the innermost dynamic loop.
-- @usage cute.if_(x[i]:eq(0), function() cute.continue_() end)
function M.continue_()
  if not core.current() or not core.in_loop() then err.raise("cute.continue_() outside a dynamic loop") end
  core.update_loc()
  ir_call(core.ir().cont(core.current().f), "cute.continue_")
  core.mark_dead()
end

--- Returns from the kernel (or device function, with its value) right here,
-- for the threads that reach it.
-- @param v optional: the device function's result
-- @usage cute.if_(i:ge(n), function() cute.return_() end)
function M.return_(v)
  local T = core.current()
  if not T then err.raise("cute.return_() outside a kernel") end
  local ref = 0
  if v ~= nil then
    if not T.ret then err.raise("cute.return_(value): a kernel returns nothing") end
    ref = core.use(core.coerce(v, T.ret, "cute.return_"))
  end
  core.update_loc()
  ir_call(core.ir().ret(T.f, ref), "cute.return_")
  core.mark_dead()
end

-- ---------------------------------------------------------------------------
-- Variables: mutable run-time state (a local variable of the IR, promoted to
-- registers by the optimiser)

local Var = {}
Var.__index = function(v, k)
  if k == "value" then return v:get() end
  return Var[k]
end
Var.__newindex = function(v, k, x)
  if k == "value" then return v:set(x) end
  err.raise("cute.var: only .value can be assigned")
end

function Var:get()
  local T = core.current()
  if not T or T.fid ~= self.fid then err.raise("a cute.var is used outside the trace that made it") end
  core.update_loc()
  local ref = core.ir().var_load(T.f, self.id, 0)
  if ref == 0 then core.ir_error("var load") end
  return core.value(ref, self.type)
end

function Var:set(x)
  local T = core.current()
  if not T or T.fid ~= self.fid then err.raise("a cute.var is used outside the trace that made it") end
  x = core.coerce(x, self.type, "cute.var assignment")
  core.update_loc()
  if core.ir().var_store(T.f, self.id, 0, core.use(x)) ~= 0 then core.ir_error("var store") end
end

Var.__tostring = function(v) return "cute.var(" .. v.type.name .. ")" end

--- A mutable run-time variable of dtype dt, initialised to init (a number or
-- value): read and write it through .value (v.value = v.value + 1).
-- @param dt the dtype
-- @param init the initial value (a Lua number or a value)
-- @return a variable (read and write v.value)
-- @usage local sum = cute.var(cute.f32, 0)
function M.var(dt, init)
  local T = core.current()
  if not T then err.raise("cute.var can only be used while tracing a kernel") end
  local t = core.scalar(dtype.get(dt))
  local id = core.ir().var_new(T.f, core.irtype(t), 1)
  if id == 0 then core.ir_error("cute.var") end
  local v = setmetatable({ id = id, type = t, fid = T.fid }, Var)
  if init ~= nil then v:set(init) end
  return v
end

return M
