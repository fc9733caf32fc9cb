--- cute.trace.ops: arithmetic, comparisons, conversions and math on traced values.
--
-- Operators: + - * / % ^ and unary minus work on values (and Lua numbers
-- mixed with them, under the promotion rules of cute.trace.core). Integer /
-- and % follow C (truncate toward zero; the remainder has the sign of the
-- dividend), as the GPU does, not Lua (floor). LuaJIT cannot overload <, <=,
-- ==, and, or, not or the bit operators, so those are methods and functions:
-- a:lt(b), a:eq(b), cute.and_(p, q), a:band(b), ... Using <, <=, > or >= on a
-- value, or == between a value and a number, raises: in Lua code it would
-- decide at compile time what the GPU must decide at run time.
local core = require "cute.trace.core"
local dtype = require "cute.dtype"
local err = require "cute._err"

local M = {}

local Value, VMT = core.Value, core.VMT
local ffi = require "ffi"
local emit, is_value, type_of = core.emit, core.is_value, core.type_of
local common, coerce, describe = core.common_type, core.coerce, core.describe

-- The storage-only types (bf16, tf32, fp8: no arithmetic), from the IR's
-- table (read when first needed: loading cute.ir costs a process ~1 ms).
local storage_set
local function storage_only(name)
  storage_set = storage_set or require("cute.ir").enums.storage_only
  return storage_set[name]
end

local function arith_type(a, b, opname)
  local t = common(a, b, opname)
  if storage_only(t.name) then
    err.raise("%s on %s values: %s is a storage type; convert to f32 first (x:to(cute.f32))", opname, t.name, t.name)
  end
  if t.kind == "bool" or t.kind == "ptr" or t.kind == "vec" or t.kind == "struct" then
    err.raise("%s on a %s value is not defined", opname, t.name)
  end
  return t
end

local function is_int(t) return t.kind == "int" or t.kind == "uint" end

-- x as a value of type t: numbers become constants; a narrower value of the
-- same kind is widened (the promotion rules of cute.trace.core).
local function promote(x, t, what)
  if is_value(x) then
    local tx = type_of(x)
    if tx ~= t and tx.kind == t.kind and tx.bits < t.bits then
      local r = emit(t.kind == "uint" and "cvtu" or "cvt", t, x)
      r.div = x.div
      return r
    end
  end
  return coerce(x, t, what)
end
M.promote = promote

-- Both sides as values of type t.
local function both(a, b, t) return promote(a, t), promote(b, t) end

local pow2 = core.pow2_divisor
local function is_int_type(t) return t.kind == "int" or t.kind == "uint" end

-- Known power-of-two divisors of integer results (for the alignment of
-- addresses computed by the layout algebra).
local function with_div(r, d)
  if is_int_type(type_of(r)) then r.div = math.min(d, 30) end
  return r
end

local function add(a, b)
  local t = arith_type(a, b, "+")
  local d = math.min(pow2(a), pow2(b))
  a, b = both(a, b, t)
  return with_div(emit("add", t, a, b), d)
end

local function sub(a, b)
  local t = arith_type(a, b, "-")
  local d = math.min(pow2(a), pow2(b))
  a, b = both(a, b, t)
  return with_div(emit("sub", t, a, b), d)
end

local function mul(a, b)
  local t = arith_type(a, b, "*")
  local d = pow2(a) + pow2(b)
  a, b = both(a, b, t)
  return with_div(emit("mul", t, a, b), d)
end

local function div(a, b)
  local t = arith_type(a, b, "/")
  if b == 0 and is_int(t) then err.raise("integer division by the constant 0") end
  a, b = both(a, b, t)
  if t.kind == "float" then return emit("fdiv", t, a, b) end
  return emit(t.kind == "uint" and "udiv" or "sdiv", t, a, b)
end

local function mod(a, b)
  local t = arith_type(a, b, "%")
  if t.kind == "float" then err.raise("%% on float values: use cute.fmod(a, b) or integer values") end
  if b == 0 then err.raise("integer remainder by the constant 0") end
  a, b = both(a, b, t)
  return emit(t.kind == "uint" and "urem" or "srem", t, a, b)
end

local function neg(a)
  local t = type_of(a)
  if t.kind == "uint" then err.raise("unary minus on a %s value", t.name) end
  arith_type(a, 0, "unary -")
  return emit("neg", t, a)
end

local function pow(a, b)
  if type(b) == "number" and b == math.floor(b) and b >= 0 and b <= 16 then
    if b == 0 then return core.const(type_of(a), 1) end
    local r = a
    for _ = 2, b do r = mul(r, a) end
    return r
  end
  err.raise("^ on values takes a small non-negative integer exponent (0..16); use cute.exp2/cute.log2 otherwise")
end

-- Lua's == on a value: comparing with nil, or from cutelua's own modules
-- (the layout algebra tests leaves against markers), is identity; from user
-- code it is the compile-time decision explained below.
local rawequal, getinfo, is_internal = rawequal, debug.getinfo, err.is_internal

local function compare_error(op)
  return function(a, b)
    if op == "==" then
      if type(a) == "nil" or type(b) == "nil" then return false end
      local info = getinfo(2, "S")
      if info and is_internal(info.source) then return rawequal(a, b) end
    end
    -- Lua turns a > b into b < a and a >= b into b <= a: name both
    local what = ({ ["=="] = "== (or ~=)", ["<"] = "< (or >)", ["<="] = "<= (or >=)" })[op]
    local use = ({ ["=="] = "a:eq(b) (a:ne(b))", ["<"] = "a:lt(b) (a:gt(b))", ["<="] = "a:le(b) (a:ge(b))" })[op]
    err.raise("%s on a traced value decides at compile time, but its value is known only when the kernel runs; "
      .. "use %s, and cute.if_ / cute.where with the result", what, use)
  end
end

VMT.__add, VMT.__sub, VMT.__mul, VMT.__div, VMT.__mod, VMT.__unm, VMT.__pow = add, sub, mul, div, mod, neg, pow
VMT.__eq, VMT.__lt, VMT.__le = compare_error("=="), compare_error("<"), compare_error("<=")
VMT.__concat = function() err.raise("cannot concatenate a traced value (use cute.printf to print it on the GPU)") end
VMT.__len = function() err.raise("# of a traced value is not defined") end
VMT.__call = function() err.raise("a traced value is not a function") end
-- A value known only when the kernel runs prints as "?" (as CuTe DSL prints
-- dynamic integers): in layouts, shapes and tensors, (?):(1). Its IR name is
-- in the dumps (k:ir()).
VMT.__tostring = function() return "?" end

-- ---------------------------------------------------------------------------
-- Comparisons (results are bool values)

local ICMP = { eq = "eq", ne = "ne", lt = "slt", le = "sle", gt = "sgt", ge = "sge" }
local UCMP = { eq = "eq", ne = "ne", lt = "ult", le = "ule", gt = "ugt", ge = "uge" }
local FCMP = { eq = "oeq", ne = "une", lt = "olt", le = "ole", gt = "ogt", ge = "oge" }

local imm_cache = {}
--- The numeric value of an enumerated immediate (kind letter, name), e.g.
-- ('P', 'slt'). Names often come from the user (a fence's scope, an
-- atomic's order): an unknown one is an error at the user's line that names
-- `what` (e.g. "cute.fence scope") and lists the names there are.
local function imm(kind, name, what)
  local v = type(name) == "string" and imm_cache[kind .. name]
  if v then return v end
  local ir = core.ir()
  v = type(name) == "string" and ir.imm_find(string.byte(kind), name) or -1
  if v < 0 then
    local names = {}
    for i = 0, ir.imm_count(string.byte(kind)) - 1 do
      local n = ir.imm_name(string.byte(kind), i)
      if n ~= nil then names[#names + 1] = '"' .. ffi.string(n) .. '"' end
    end
    err.raise("%s: unknown %s %s (one of %s)", what or "cute", ffi.string(ir.imm_kind_name(string.byte(kind))),
      type(name) == "string" and string.format("%q", name) or tostring(name), table.concat(names, ", "))
  end
  imm_cache[kind .. name] = v
  return v
end
M.imm = imm

local function compare(op)
  return function(a, b)
    if not is_value(a) and not is_value(b) then
      err.raise("%s: neither operand is a traced value; compare Lua numbers with Lua operators", op)
    end
    local t = common(a, b, op)
    if storage_only(t.name) then err.raise("%s on %s values: convert to f32 first", op, t.name) end
    a, b = both(a, b, t)
    if t.kind == "float" then return core.note_comparison(emit("fcmp", core.bool, a, b, nil, imm("Q", FCMP[op]))) end
    local tab = (t.kind == "uint" or t.kind == "bool" or t.kind == "ptr") and UCMP or ICMP
    return core.note_comparison(emit("icmp", core.bool, a, b, nil, imm("P", tab[op])))
  end
end

--- a:ge(b): a >= b as a bool value.
-- @function Value:ge
-- @param a a value
-- @param b a value or Lua number
-- @return a bool value
-- @usage cute.if_(i:ge(n), function() cute.return_() end)

--- a:gt(b): a > b as a bool value.
-- @function Value:gt
-- @param a a value
-- @param b a value or Lua number
-- @return a bool value
-- @usage local y = cute.where(x:gt(0), x, 0)

--- a:le(b): a <= b as a bool value.
-- @function Value:le
-- @param a a value
-- @param b a value or Lua number
-- @return a bool value
-- @usage local inside = i:le(n - 1)

--- a:lt(b): a < b as a bool value (Lua's < decides at trace time, so it is refused on values).
-- @function Value:lt
-- @param a a value
-- @param b a value or Lua number
-- @return a bool value
-- @usage cute.if_(i:lt(n), function() x[i] = 0 end)

--- a:ne(b): a ~= b as a bool value.
-- @function Value:ne
-- @param a a value
-- @param b a value or Lua number
-- @return a bool value
-- @usage cute.if_(i:ne(j), function() ... end)

--- a:eq(b): a == b as a bool value (Lua's == cannot return one; see docs/tracer.md).
-- @function Value:eq
-- @param a a value
-- @param b a value or Lua number
-- @return a bool value
-- @usage cute.if_(i:eq(0), function() ... end)

for _, op in ipairs { "eq", "ne", "lt", "le", "gt", "ge" } do Value[op] = compare(op) end

-- ---------------------------------------------------------------------------
-- Logic and bits

local function bool_of(x, what)
  if is_value(x) then
    if type_of(x).kind ~= "bool" then err.raise("%s: expected a bool value (a comparison), got a %s", what,
        type_of(x).name) end
    return x
  end
  if type(x) == "boolean" then return core.const(core.bool, x) end
  err.raise("%s: expected a bool value or a Lua boolean, got %s", what, describe(x))
end

--- The logical and of bool values (Lua booleans are folded now); more than two chain.
-- @param a a bool value or Lua boolean
-- @param b a bool value or Lua boolean
-- @param ... further operands
-- @return a bool value
-- @usage local inside = cute.and_(i:lt(m), j:lt(n))
function M.and_(a, b, ...)
  if type(a) == "boolean" and type(b) == "boolean" then return a and b end
  local r = emit("and", core.bool, bool_of(a, "cute.and_"), bool_of(b, "cute.and_"))
  if ... then return M.and_(r, ...) end
  return r
end

--- The logical or of bool values (Lua booleans are folded now); more than two chain.
-- @param a a bool value or Lua boolean
-- @param b a bool value or Lua boolean
-- @param ... further operands
-- @return a bool value
-- @usage local edge = cute.or_(i:eq(0), i:eq(n - 1))
function M.or_(a, b, ...)
  if type(a) == "boolean" and type(b) == "boolean" then return a or b end
  local r = emit("or", core.bool, bool_of(a, "cute.or_"), bool_of(b, "cute.or_"))
  if ... then return M.or_(r, ...) end
  return r
end

--- The logical not of a bool value (a Lua boolean is folded now).
-- @param a a bool value or Lua boolean
-- @return a bool value
-- @usage cute.if_(cute.not_(done), function() ... end)
function M.not_(a)
  if type(a) == "boolean" then return not a end
  return emit("xor", core.bool, bool_of(a, "cute.not_"), core.const(core.bool, true))
end

Value.and_ = M.and_
Value.or_ = M.or_
Value.not_ = M.not_

local function int_binop(name, irop, uirop)
  return function(a, b)
    local t = common(a, b, name)
    if not is_int(t) and t.kind ~= "bool" then err.raise("%s on a %s value: integers only", name, t.name) end
    a, b = both(a, b, t)
    return emit((t.kind == "uint" and uirop) or irop, t, a, b)
  end
end

--- a:band(b): the bitwise and of integers (and of bools).
-- @function Value:band
-- @param a an integer value
-- @param b an integer value or Lua number
-- @return a value of the common type
-- @usage local low = x:band(0xff)
Value.band = int_binop("band", "and")
--- a:bor(b): the bitwise or of integers (and of bools).
-- @function Value:bor
-- @param a an integer value
-- @param b an integer value or Lua number
-- @return a value of the common type
-- @usage local v = x:bor(1)
Value.bor = int_binop("bor", "or")
--- a:bxor(b): the bitwise exclusive or of integers (and of bools).
-- @function Value:bxor
-- @param a an integer value
-- @param b an integer value or Lua number
-- @return a value of the common type
-- @usage local partner = lane:bxor(1)
Value.bxor = int_binop("bxor", "xor")
local shl_raw = int_binop("shl", "shl")
--- a:shl(b): a shifted left by b bits (integers).
-- @param a an integer value
-- @param b the shift (an integer value or Lua number)
-- @return a value of a's type
-- @usage local m = one:shl(k)
function Value.shl(a, b)
  local r = shl_raw(a, b)
  if type(b) == "number" then with_div(r, pow2(a) + b) end
  return r
end
--- Shift right: arithmetic for signed integers, logical for unsigned.
-- @function Value:shr
-- @param a an integer value
-- @param b the shift (an integer value or Lua number)
-- @return a value of a's type
-- @usage local hi = x:shr(16)
Value.shr = int_binop("shr", "ashr", "lshr")
--- a:bnot(): the bitwise not of an integer.
-- @param a an integer value
-- @return a value of a's type
-- @usage local mask = x:bnot()
function Value.bnot(a)
  local t = type_of(a)
  if not is_int(t) then err.raise("bnot on a %s value: integers only", t.name) end
  return emit("not", t, a)
end

-- ---------------------------------------------------------------------------
-- Conversions

local ROUND = { rn = true, rz = true, rm = true, rp = true, rna = true }

--- x converted to dtype dt; opts.round ("rn" "rz" "rm" "rp" "rna") and
-- opts.sat (saturate) where PTX has them. Integers truncate toward zero when
-- converted from floats; bool converts to 0/1 and from (x ~= 0).
-- @param x a value (or Lua number)
-- @param dt the dtype to convert to
-- @param opts optional: {round = "rn"|"rz"|"rm"|"rp"|"rna", sat = bool}
-- @return a value of dtype dt
-- @usage local h = cute.to(x, cute.f16)  -- or x:to(cute.f16)
function M.to(x, dt, opts)
  local target = core.scalar(dtype.get(dt))
  if not is_value(x) then
    if type(x) == "boolean" and target.kind ~= "bool" then x = x and 1 or 0 end -- explicit: true is 1
    if type(x) == "number" or type(x) == "boolean" then return core.const(target, x, "to(" .. target.name .. ")") end
    err.raise("to(%s): expected a value or a number, got %s", target.name, describe(x))
  end
  local src = type_of(x)
  if src == target then return x end
  if target.kind == "bool" then return compare("ne")(x, 0) end
  if is_int_type(src) and is_int_type(target) and src.bits == target.bits then
    return core.retype(x, target) -- signedness lives in the ops, not in the IR type
  end
  local rnd, flags = 0, 0
  if opts then
    if opts.round then
      if not ROUND[opts.round] then err.raise("to: unknown rounding %s", tostring(opts.round)) end
      rnd = imm("R", opts.round)
    end
    if opts.sat then flags = imm("F", "sat") end
  end
  local op = (src.kind == "uint" or src.kind == "bool") and "cvtu" or "cvt"
  return emit(op, target, x, nil, nil, rnd, flags)
end
Value.to = M.to

--- The same bits as another dtype of the same size.
-- @param x a value
-- @param dt a dtype of x's size in bits
-- @return a value of dtype dt
-- @usage local bits = cute.bitcast(x, cute.u32)
function M.bitcast(x, dt)
  local target = core.scalar(dtype.get(dt))
  return emit("bitcast", target, x)
end
Value.bitcast = M.bitcast

-- ---------------------------------------------------------------------------
-- min, max, select, math

local function minmax(name, sop, uop, fop)
  return function(a, b, ...)
    if not is_value(a) and not is_value(b) then
      local r = math[name](a, b)
      if ... then return M[name](r, ...) end
      return r
    end
    local t = arith_type(a, b, "cute." .. name)
    a, b = both(a, b, t)
    local r
    if t.name == "f16" then -- (the IR's fmin/fmax are f32 and f64: exact through f32, the result one of the two)
      r = M.to(emit(fop, core.f32, M.to(a, dtype.f32), M.to(b, dtype.f32)), dtype.f16)
    else
      r = emit(t.kind == "float" and fop or (t.kind == "uint" and uop or sop), t, a, b)
    end
    if ... then return M[name](r, ...) end
    return r
  end
end
--- The larger of two or more values (Lua numbers are compared now).
-- @function max
-- @param a a value or Lua number
-- @param b a value or Lua number
-- @param ... further operands
-- @return a value of the operands' common type
-- @usage local relu = cute.max(x, 0)

--- The smaller of two or more values (Lua numbers are compared now).
-- @function min
-- @param a a value or Lua number
-- @param b a value or Lua number
-- @param ... further operands
-- @return a value of the operands' common type
-- @usage local lo = cute.min(x, 0)

M.min = minmax("min", "smin", "umin", "fmin")
M.max = minmax("max", "smax", "umax", "fmax")
Value.min, Value.max = M.min, M.max

--- c ? a : b (CuTe DSL's where). With a Lua boolean c the choice is made now.
-- @param c a bool value (or a Lua boolean)
-- @param a the value where c holds
-- @param b the value where it does not
-- @return a value of a's and b's common type
-- @usage local y = cute.where(x:gt(0), x, 0)
function M.where(c, a, b)
  if type(c) == "boolean" then return c and a or b end
  c = bool_of(c, "cute.where")
  local t
  if is_value(a) or is_value(b) then
    t = common(a, b, "cute.where")
  else
    err.raise("cute.where: one of the two choices must be a traced value (or make both values)")
  end
  a, b = both(a, b, t)
  return emit("select", t, c, a, b)
end

local function float_arg(x, name)
  if not is_value(x) then err.raise("cute.%s: expected a float value, got %s", name, describe(x)) end
  local t = type_of(x)
  if t.kind ~= "float" or storage_only(t.name) or t.name == "f16" then
    err.raise("cute.%s: expected an f32 or f64 value, got a %s (convert with :to(cute.f32))", name, t.name)
  end
  return x, t
end

local function math_fn(name, irop)
  return function(x, opts)
    if type(x) == "number" and math[name] then return math[name](x) end
    local v, t = float_arg(x, name)
    -- an explicit {fast = true} is a request (an error on f64, which has no
    -- approximations); the kernel option fast_math applies to f32 only
    if opts ~= nil and type(opts) ~= "table" then
      err.raise("cute.%s(x, opts): opts is %s, expected a table such as {fast = true}", name, type(opts))
    end
    if opts and opts.fast and t ~= core.f32 then
      err.raise("cute.%s: {fast = true} is for f32 values (PTX approximates f32 only); this value is %s: leave fast "
        .. "out, or convert with :to(cute.f32)", name, t.name)
    end
    local fast = (opts and opts.fast) or (t == core.f32 and core.current() and core.current().opts.fast_math)
    return emit(irop or name, t, v, nil, nil, fast and imm("F", "fast") or 0)
  end
end

-- The math functions: the ops of the IR's MATH lowering family, by their op names.
local MATH = {}
do
  local buf = ffi.new("char[1024]")
  require("cute._c").ir.ops_in_family("MATH", buf, 1024)
  for name in ffi.string(buf):gmatch("%S+") do MATH[#MATH + 1] = name end
end
--- x rounded up to an integer (as a float) (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function ceil
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.ceil(x)

--- x rounded down to an integer (as a float) (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function floor
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.floor(x)

--- The error function of x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function erf
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.erf(x)

--- The hyperbolic tangent of x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function tanh
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.tanh(x)

--- The cosine of x (radians) (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function cos
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.cos(x)

--- The sine of x (radians) (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function sin
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.sin(x)

--- The natural logarithm of x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function log
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.log(x)

--- e to the power x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function exp
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.exp(x)

--- The base-2 logarithm of x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function log2
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.log2(x)

--- 2 to the power x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function exp2
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.exp2(x)

--- 1 / x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function rcp
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.rcp(x)

--- 1 / sqrt(x) (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function rsqrt
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.rsqrt(x)

--- The square root of x (f32 or f64; {fast = true}: PTX's f32 approximation); Lua numbers now.
-- @function sqrt
-- @param x an f32 or f64 value (or a Lua number)
-- @param opts optional: {fast = true}
-- @return a value of x's type
-- @usage local y = cute.sqrt(x)

for _, name in ipairs(MATH) do M[name] = math_fn(name) end

--- The absolute value of x (unsigned values are returned as they are).
-- @param x a value or Lua number
-- @return a value of x's type
-- @usage local d = cute.abs(a - b)
function M.abs(x)
  if type(x) == "number" then return math.abs(x) end
  local t = type_of(x)
  if t.kind == "uint" then return x end
  return emit("abs", t, x)
end

--- a * b + c rounded once (floats).
-- @param a a float value (or Lua number)
-- @param b a float value (or Lua number)
-- @param c a float value (or Lua number)
-- @return a value of the operands' type
-- @usage acc = cute.fma(a, b, acc)
function M.fma(a, b, c)
  local first = is_value(a) and a or (is_value(b) and b or c)
  if not is_value(first) then return a * b + c end
  local t = type_of(first)
  if t.kind ~= "float" or storage_only(t.name) then err.raise("cute.fma: f16, f32 or f64 operands only") end
  return emit("fma", t, coerce(a, t, "cute.fma"), coerce(b, t, "cute.fma"), coerce(c, t, "cute.fma"))
end

--- a % b for floats with the sign of a (C's fmod).
-- @param a a value (or Lua number)
-- @param b a value (or Lua number)
-- @return a value of the operands' common type
-- @usage local r = cute.fmod(x, 1.0)
function M.fmod(a, b)
  local t = arith_type(a, b, "cute.fmod")
  if t.kind ~= "float" then return mod(a, b) end
  a, b = both(a, b, t)
  local q = emit("fdiv", t, a, b)
  local tq = emit("cvt", t, emit("cvt", core.i64, q))
  return sub(a, mul(tq, b))
end

-- ---------------------------------------------------------------------------
-- Pointers

local SPACE_BITS = { shared = 32, ["local"] = 32, shared_cluster = 32 }

--- The address of a pointer value as an integer (i64; i32 for shared, local
-- and shared_cluster pointers, as PTX takes them).
-- @param p a pointer value
-- @param bits optional: 32 or 64 (default by the address space)
-- @return a u32 or u64 value
-- @usage local a = t:ptr_at(0):addr()
function Value.addr(p, bits)
  local t = type_of(p)
  if t.kind ~= "ptr" then err.raise("addr: expected a pointer value, got a %s", t.name) end
  bits = bits or SPACE_BITS[t.space] or 64
  return emit("ptrtoint", bits == 32 and core.u32 or core.u64, p)
end

--- The pointer in another address space ("generic", "global", "shared", ...) or
-- with another element dtype: p:cast("generic"), p:cast(nil, cute.u64).
-- @param p a pointer value
-- @param space optional: the address space (default p's)
-- @param dt optional: the element dtype (default p's)
-- @return a pointer value
-- @usage local g = p:cast("generic")
function Value.cast(p, space, dt)
  local t = type_of(p)
  if t.kind ~= "ptr" then err.raise("cast: expected a pointer value, got a %s", t.name) end
  local elem = dt and core.scalar(dtype.get(dt)) or t.elem
  return emit("ptrcast", core.ptr(elem, space or t.space, t.align), p)
end

-- ---------------------------------------------------------------------------
-- Inline PTX, the escape hatch

local ASM_FLAGS = { sideeffect = 0x8, convergent = 0x10, memory = 0x20 }

--- Inline PTX: cute.asm(text, constraints, {operands...}, {ret = dtype,
-- sideeffect = bool, convergent = bool, memory = bool}). $0, $1, ... in text
-- name the result (first, when ret is given) then the operands, in the
-- LLVM constraint syntax ("=r,r,l": an i32 result, an i32 and an i64 input).
-- With no result the asm is a side effect by default.
-- @param text the PTX text, with $0, $1, ... for the operands
-- @param constraints the LLVM constraint string ("=r,r,l")
-- @param operands optional: a list of the input values
-- @param opts optional: {ret = dtype, sideeffect = bool, convergent = bool, memory = bool}
-- @return the result value (with opts.ret), else nothing
-- @usage local lane = cute.asm("mov.u32 $0, %laneid;", "=r", {}, {ret = cute.u32})
function M.asm(text, constraints, operands, opts)
  local T = core.current()
  if not T then err.raise("cute.asm can only be used while tracing a kernel") end
  if type(text) ~= "string" or type(constraints) ~= "string" then
    err.raise("cute.asm(text, constraints, operands, opts): text and constraints are strings")
  end
  opts = opts or {}
  local rt = opts.ret and (dtype.is_dtype(opts.ret) and core.scalar(opts.ret) or opts.ret) or nil
  local flags = 0
  if opts.sideeffect or (opts.sideeffect == nil and not rt) then flags = flags + ASM_FLAGS.sideeffect end
  if opts.convergent then flags = flags + ASM_FLAGS.convergent end
  if opts.memory then flags = flags + ASM_FLAGS.memory end
  if operands ~= nil and type(operands) ~= "table" then
    err.raise("cute.asm: operands are %s, expected a list of values (or Lua numbers)", type(operands))
  end
  -- the input constraints, after the outputs ("=r", ...): a Lua number
  -- operand becomes a constant of its constraint's type
  local inputs, outputs = {}, 0
  for c in constraints:gmatch("[^,]+") do
    c = c:gsub("%s", "")
    if c:sub(1, 1) ~= "=" then inputs[#inputs + 1] = c else outputs = outputs + 1 end
  end
  if outputs == 1 and not rt then
    err.raise("cute.asm: the constraints %q have an output: give its type, as {ret = cute.u32} (or a struct type for "
      .. "several)", constraints)
  elseif outputs == 0 and rt then
    err.raise("cute.asm: ret is given but the constraints %q have no output (\"=r\", ...)", constraints)
  end
  local CONST_TYPE = { r = dtype.i32, l = dtype.i64, h = dtype.i16, f = dtype.f32, d = dtype.f64, n = dtype.i32 }
  local args = {}
  for i, a in ipairs(operands or {}) do
    if is_value(a) then
      args[i] = a
    elseif type(a) == "number" then
      local dt = CONST_TYPE[(inputs[i] or ""):gsub("^[+&]*", ""):sub(1, 1)]
      if not dt then
        err.raise("cute.asm: operand %d is the Lua number %s, and its constraint %q gives no type to make a constant "
          .. "of (r l h f d n do)", i, core.show_number(a), inputs[i] or "(none)")
      end
      args[i] = core.const(core.scalar(dt), a, "cute.asm operand " .. i)
    else
      err.raise("cute.asm: operand %d is %s, expected a traced value or a Lua number", i,
        type(a) == "table" and tostring(a) or type(a))
    end
  end
  if operands and #args ~= select("#", unpack(operands)) then
    err.raise("cute.asm: the operand list has holes (nil at %d)", #args + 1)
  end
  local ir = core.ir()
  return core.emitn("asm", rt, args, { ir.str(T.m, text), ir.str(T.m, constraints), flags })
end

-- ---------------------------------------------------------------------------
-- The layout algebra's dynamic integers (see cute.arith): run-time integer
-- values are leaves of shapes, strides and coordinates.

local function int_only(x, what)
  if is_value(x) and not is_int(type_of(x)) then
    err.raise("layout arithmetic (%s) on a %s value: integer values only", what, type_of(x).name)
  end
end

local OP_ADD, OP_MUL, OP_SHL
--- x as base + c, c a Lua integer: x + c, (x + c1) * c2 (emitting x * c2; c
-- is then c1 c2), (x + c1) << c2, nested; exact in wrapping arithmetic. (0 +
-- x when nothing is constant.) The layout algebra uses it to keep constant
-- offsets out of swizzles, so that they end up as address immediates.
function M.split_const(x)
  if not is_value(x) then return 0, x end
  local ir = core.ir()
  local T = core.current()
  if not T or x.fid ~= T.fid then return x, 0 end
  if not OP_ADD then OP_ADD, OP_MUL, OP_SHL = ir.op_find("add"), ir.op_find("mul"), ir.op_find("shl") end
  local op = ir.inst_op(T.f, x.ref)
  if op ~= OP_ADD and op ~= OP_MUL and op ~= OP_SHL then return x, 0 end
  local ra, rb = ir.inst_arg(T.f, x.ref, 0), ir.inst_arg(T.f, x.ref, 1)
  local iv, dv = ffi.new("int64_t[1]"), ffi.new("double[1]")
  local k, other
  if ir.const_value(T.f, rb, iv, dv) == 1 then
    k, other = tonumber(iv[0]), ra
  elseif op ~= OP_SHL and ir.const_value(T.f, ra, iv, dv) == 1 then
    k, other = tonumber(iv[0]), rb
  else
    return x, 0
  end
  -- the operand, as a value made where x was (it dominates x)
  local base, c = M.split_const(core.ValueCT(other, x.ty, x.fid, x.region, x.loc, 0))
  if op == OP_ADD then return base, c + k end
  if c == 0 then return x, 0 end
  if op == OP_MUL then return base * k, c * k end
  return base:shl(k), c * 2 ^ k
end

Value.__cute_int = {
  add = add,
  sub = sub,
  mul = mul,
  neg = neg,
  div = function(a, b)
    int_only(a, "div")
    int_only(b, "div")
    return div(a, b) -- operands are non-negative in the algebra: truncation is floor
  end,
  mod = function(a, b)
    int_only(a, "mod")
    int_only(b, "mod")
    return mod(a, b)
  end,
  split = function(x) return M.split_const(x) end,
  min = function(a, b) return M.min(a, b) end,
  max = function(a, b) return M.max(a, b) end,
  bxor = function(a, b) return Value.bxor(a, b) end,
  band = function(a, b) return Value.band(a, b) end,
  shr = function(a, b) return Value.shr(a, b) end,
  shl = function(a, b) return Value.shl(a, b) end,
}

return M
