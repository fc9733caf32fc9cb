--- cute.trace.core: the heart of the tracer.
--
-- A kernel body is a Lua function run once with proxy values; every operation
-- on a proxy appends an op to the C IR (src/ir) through the FFI. This module
-- holds the state of the trace in progress, the tracer's types, the proxy
-- value type and the one function that appends ops (`emit`), which records
-- the user's Lua line on each op.
--
-- Values are FFI structs (CuteValue): comparing one with a Lua number through
-- `==`, `<`, ... reaches our metamethods (tables would compare false
-- silently), so the tracer can say that such a comparison decides at compile
-- time. Each value records the trace and the dynamic region it was made in:
-- using it in another kernel, or after its region closed, is an error at the
-- user's line, not a miscompile.
local ffi = require "ffi"
local err = require "cute._err"
local dtype = require "cute.dtype"

local M = {}

local ir -- the C IR's function table, bound on first trace (cute._c.ir)

-- ---------------------------------------------------------------------------
-- Types
--
-- A tracer type is an interned Lua table:
--   scalars  {kind = "int"|"uint"|"float"|"bool", bits, dtype, name, ir}
--   pointers {kind = "ptr", elem, space, align, name, ir}
--   vectors  {kind = "vec", elem, n, name, ir}
--   structs  {kind = "struct", fields, name, ir}
-- `ir` is the printed IR type, parsed once per module into an IrType id.

local types, type_by_key = {}, {}

local function intern(t)
  local old = type_by_key[t.name]
  if old then return old end
  t.id = #types + 1
  types[t.id] = t
  type_by_key[t.name] = t
  return t
end

--- The tracer type of a dtype (cute.f32 -> f32).
function M.scalar(dt)
  dt = dtype.get(dt)
  local t = type_by_key[dt.name]
  if t then return t end
  -- the values a Lua number may take to be a constant of it (dtype.check_value)
  return intern { kind = dt.kind, bits = dt.bits, dtype = dt, name = dt.name, ir = dt.ir, lo = dt.lo, hi = dt.hi,
    fmax = dt.fmax, inf_at = dt.inf_at }
end

local spaces -- the IR's address spaces, by name (from C: cute.ir, read when first needed)

--- A pointer type: elem (a tracer type or dtype), space ("global", "shared", ...), align (bytes).
function M.ptr(elem, space, align)
  if dtype.is_dtype(elem) then elem = M.scalar(elem) end
  space = space or "generic"
  spaces = spaces or require("cute.ir").enums.space
  if not spaces[space] then err.raise("unknown address space %s", tostring(space)) end
  align = align or (elem.bits and math.max(1, elem.bits / 8) or 1)
  local name = string.format("ptr<%s, %s, %d>", elem.name, space, align)
  return intern { kind = "ptr", elem = elem, space = space, align = align, name = name,
    ir = string.format("ptr<%s, %s, %d>", elem.ir, space, align) }
end

function M.vec(elem, n)
  if dtype.is_dtype(elem) then elem = M.scalar(elem) end
  local name = string.format("<%d x %s>", n, elem.name)
  return intern { kind = "vec", elem = elem, n = n, name = name, ir = string.format("<%d x %s>", n, elem.ir) }
end

--- A struct of the given field types (e.g. the 4 f32 of an mma.sync accumulator).
function M.struct(fields)
  local names, irs = {}, {}
  for i, f in ipairs(fields) do
    if dtype.is_dtype(f) then
      f = M.scalar(f)
      fields[i] = f
    end
    names[i] = f.name
    irs[i] = f.ir
  end
  return intern { kind = "struct", fields = fields, name = "{" .. table.concat(names, ", ") .. "}",
    ir = "{" .. table.concat(irs, ", ") .. "}" }
end

M.bool = M.scalar(dtype.bool)
M.i32 = M.scalar(dtype.i32)
M.i64 = M.scalar(dtype.i64)
M.u32 = M.scalar(dtype.u32)
M.u64 = M.scalar(dtype.u64)
M.f32 = M.scalar(dtype.f32)

function M.type_by_id(id) return types[id] end

-- ---------------------------------------------------------------------------
-- The trace in progress

local T = nil    -- the current trace, or nil
local serial = 0 -- trace ids (the fid of values)

function M.current() return T end

local function no_trace(what)
  err.raise("%s can only be used while tracing a kernel (inside the function given to cute.kernel)", what)
end

--- Raises, at the user's line, unless a kernel is being traced: "<what> can
-- only be used while tracing a kernel" (the guard of every GPU-only function).
function M.need_trace(what)
  if not T then err.raise("%s can only be used while tracing a kernel", what) end
end

--- The IR type id of a tracer type in the current module.
local function irtype(t)
  local c = T.irtypes[t.id]
  if c then return c end
  c = ir.type_parse(T.m, t.ir)
  if c == 0 then M.ir_error("bad type " .. t.ir) end
  T.irtypes[t.id] = c
  return c
end
M.irtype = irtype

-- ---------------------------------------------------------------------------
-- Source locations: the first frame outside cutelua is the user's line

local is_internal = err.is_internal
local getinfo = debug.getinfo

-- (the function's name, which costs a lookup, only when a location is new)
local function user_frame()
  local level = 3
  while true do
    local info = getinfo(level, "Sl")
    if not info then return nil end
    if not is_internal(info.source) then return info, level end
    level = level + 1
  end
end

-- Sets the module's current location to the user's line; cached per (source, line).
local function update_loc()
  if T.pinned then return T.pinned end
  local info, level = user_frame()
  if not info then return 0 end
  local src = info.source
  local per = T.locs[src]
  if not per then
    per = {}
    T.locs[src] = per
  end
  local line = info.currentline
  local id = per[line]
  if not id then
    local file = src:sub(1, 1) == "@" and src:sub(2) or info.short_src
    local named = getinfo(level - 1, "n") -- the same frame, counted from here (one level shallower)
    id = ir.set_loc(T.m, file, line, named and named.name or T.name)
    per[line] = id
    T.loc_text[id] = file .. ":" .. line
  elseif id ~= T.last_loc then
    ir.set_loc_id(T.m, id)
  end
  T.last_loc = id
  return id
end
M.update_loc = update_loc

--- Runs fn with every op it emits located at the user's current line, found
-- once (library helpers that emit many ops: cute.gemm, copies with atoms,
-- kernels of cute.lib), rather than by a stack walk per op.
function M.at_user_line(fn, ...)
  if not T then return fn(...) end
  local saved = T.pinned
  if not saved then T.pinned = update_loc() end
  local ok, a, b, c = pcall(fn, ...)
  T.pinned = saved
  if not ok then error(a, 0) end
  return a, b, c
end

--- "file:line" of a location id of the current trace.
function M.loc_text(id) return T and T.loc_text[id] or "?" end

-- ---------------------------------------------------------------------------
-- Values

ffi.cdef [[
typedef struct CuteValue {
  uint32_t ref;     /* IR value ref in the function being traced */
  uint16_t ty;      /* tracer type id */
  uint16_t fid;     /* the trace it belongs to */
  uint32_t region;  /* the dynamic region it was made in */
  uint32_t loc;     /* where (location id) */
  uint8_t div;      /* log2 of a power of two known to divide it (integers; 0: nothing known) */
} CuteValue;
]]

local Value = {}   -- methods (filled by cute.trace.ops and others)
local VMT = { __index = Value }
local ValueCT = ffi.metatype("CuteValue", VMT)
M.Value, M.VMT, M.ValueCT = Value, VMT, ValueCT

local istype = ffi.istype
local function is_value(x) return type(x) == "cdata" and istype(ValueCT, x) end
M.is_value = is_value

--- Wraps an IR ref as a value of tracer type t; div: log2 of a power of two
-- known to divide it (default 0: nothing known).
local function value(ref, t, div)
  return ValueCT(ref, t.id, T.fid, T.region, T.last_loc, div or 0)
end
M.value = value

--- The same value seen as another type of the same size (no op emitted).
function M.retype(v, t)
  M.use(v)
  return ValueCT(v.ref, t.id, v.fid, v.region, v.loc, v.div)
end

--- log2 of the largest power of two known to divide x (a Lua integer or a value), capped at 30.
function M.pow2_divisor(x)
  if type(x) == "number" then
    if x == 0 then return 30 end
    local n, d = math.abs(x), 0
    while d < 30 and n % 2 == 0 do
      n = n / 2
      d = d + 1
    end
    return d
  end
  if is_value(x) then return x.div end
  return 0
end

function M.type_of(v) return types[v.ty] end

--- Checks that v can be used here (same trace, its region still open) and
-- returns its ref.
local function use(v)
  if v.fid ~= T.fid then
    err.raise("a value from another kernel or device function (or an earlier trace) is used here: "
      .. "values live in the trace that made them; pass it as an argument instead")
  end
  if not T.open[v.region] then
    local r = T.region_info[v.region]
    err.raise("a value created inside the dynamic %s at %s is read after that region ended; carry it out in a "
      .. "cute.var or a register fragment (cute.make_rmem_tensor)", r and r.kind or "region",
      r and r.where or "?")
  end
  local unused = T.unused_cmps
  if unused[v.ref] then unused[v.ref] = nil end
  return v.ref
end
M.use = use

--- Notes a comparison (a:lt(b), ...) made in the trace: one that no op ever
-- uses was taken apart by Lua (`if a:lt(b) then`, always true), and
-- M.finish says so.
function M.note_comparison(v)
  T.unused_cmps[v.ref] = v.loc
  return v
end

function M.ir_error(what)
  local diag = ffi.string(ir.diag(T.m)):gsub("\n+$", "")
  ir.diag_clear(T.m)
  local limit = diag:match("past its instruction limit of (%d+)")
  if limit then
    err.raise("the kernel's IR reached its limit of %s instructions: a trace that never ends (Lua recursion or a Lua "
      .. "loop with no exit in the kernel body), or a kernel far larger than usual (cute.lib's largest GEMM has "
      .. "about 7000). If it really is this large, raise the limit: the kernel option max_ir_ops = n, or "
      .. "CUTELUA_MAX_IR_OPS=n (0: none)", limit)
  end
  err.raise("%s%s", what and (what .. ": ") or "", diag)
end

local op_ids = {}

--- The IR op id of an op name (raises for unknown names: an internal error).
local function opid(name)
  local id = op_ids[name]
  if id then return id end
  id = ir.op_find(name)
  if id < 0 then error("internal error: the IR has no op '" .. name .. "'") end
  op_ids[name] = id
  return id
end
M.opid = opid

--- Appends an op with up to three value operands (values or raw refs) and
-- three integer immediates; returns its value of tracer type rt (nil for ops
-- without a result). The user's line is recorded on the op.
local function emit(name, rt, a, b, c, i0, i1, i2)
  if not T then no_trace("'" .. name .. "'") end
  if T.dead then
    err.raise("this code follows a cute.break_(), cute.continue_() or cute.return_() in the same region "
      .. "and would never run")
  end
  update_loc()
  local ra = a and (is_value(a) and use(a) or a) or 0
  local rb = b and (is_value(b) and use(b) or b) or 0
  local rc = c and (is_value(c) and use(c) or c) or 0
  local ref = ir.op3(T.f, opid(name), rt and irtype(rt) or 0, ra, rb, rc, i0 or 0, i1 or 0, i2 or 0)
  if ref == 0 then M.ir_error(name) end
  if rt then return value(ref, rt) end
end
M.emit = emit

--- The same for ops with more operands: args is a list of values or refs.
function M.emitn(name, rt, args, imms)
  if not T then no_trace("'" .. name .. "'") end
  update_loc()
  local n = #args
  local refs = ffi.new("uint32_t[?]", math.max(n, 1))
  for i = 1, n do
    local a = args[i]
    refs[i - 1] = is_value(a) and use(a) or a
  end
  local ni = imms and #imms or 0
  local im = ffi.new("int64_t[?]", math.max(ni, 1))
  for i = 1, ni do im[i - 1] = imms[i] end
  local ref = ir.op(T.f, opid(name), rt and irtype(rt) or 0, refs, n, im, ni)
  if ref == 0 then M.ir_error(name) end
  if rt then return value(ref, rt) end
end

local show_number, range_text = dtype.show_number, dtype.range_text
M.show_number = show_number

local function describe(x)
  if is_value(x) then return types[x.ty].name .. " value" end
  local mt = getmetatable(x)
  if type(mt) == "table" and mt.__describe then return mt.__describe(x) end -- (a tensor: cute.trace.tensor)
  if type(x) == "number" then return "the Lua number " .. show_number(x) end
  return type(x)
end
M.describe = describe

--- Checks that x (a Lua number, boolean or 64-bit integer cdata) can be a
-- constant of scalar type t and returns it as const_int/const_float take it;
-- raises at the user's line otherwise, naming the value, the type and `what`
-- (the rules: dtype.check_value).
local function check_const(t, x, what)
  if not t.dtype then err.raise("%sexpected a %s value, got %s", what and (what .. ": ") or "", t.name, describe(x)) end
  return dtype.check_value(t.dtype, x, what)
end
M.check_const = check_const

local floor = math.floor

--- A constant of tracer type t; what names the operation in errors (a Lua
-- number that the type cannot hold exactly, see check_const, is an error).
function M.const(t, v, what)
  if not T then no_trace("a constant") end
  local ref
  if t.kind == "float" then
    if type(v) ~= "number" or v >= t.inf_at or v <= -t.inf_at then v = check_const(t, v, what) end
    update_loc()
    ref = ir.const_float(T.f, irtype(t), v)
  else
    local lo = t.lo
    if not lo or type(v) ~= "number" or v < lo or v >= t.hi or v ~= floor(v) then v = check_const(t, v, what) end
    update_loc()
    ref = ir.const_int(T.f, irtype(t), v)
  end
  if ref == 0 then M.ir_error("constant") end
  return value(ref, t, (t.kind == "int" or t.kind == "uint") and M.pow2_divisor(v) or 0)
end

--- The static value of v if the IR folded it to a constant, else nil.
function M.const_value(v)
  local iv, dv = ffi.new("int64_t[1]"), ffi.new("double[1]")
  if ir.const_value(T.f, use(v), iv, dv) ~= 1 then return nil end
  local t = types[v.ty]
  if t.kind == "float" then return dv[0] end
  local x = tonumber(iv[0])
  if t.kind == "bool" then return x ~= 0 end
  return x
end

-- ---------------------------------------------------------------------------
-- Mixing Lua numbers and values (the written promotion rules, see docs/tracer.md)

local function rank(t) return t.kind == "float" and 2 or ((t.kind == "int" or t.kind == "uint") and 1 or 0) end

--- The common type of two operands of a binary arithmetic op, or an error.
-- Lua numbers take the other side's type (an integer type needs an integer);
-- two values must agree in kind (int, uint, float), and the wider one wins;
-- mixing signed and unsigned, ints and floats, or floats that do not contain
-- each other (f16 and bf16) is ambiguous: cast explicitly.
function M.common_type(a, b, opname)
  local av, bv = is_value(a), is_value(b)
  if av and bv then
    local ta, tb = types[a.ty], types[b.ty]
    if ta == tb then return ta end
    if ta.kind == tb.kind and ta.kind ~= "float" and ta.kind ~= "bool" then
      return ta.bits >= tb.bits and ta or tb
    end
    if ta.kind == "float" and tb.kind == "float" then
      local big, small = ta, tb
      if tb.bits > ta.bits then big, small = tb, ta end
      if big.bits > small.bits and not (small.name == "bf16" and big.name == "f16") then return big end
    end
    err.raise("%s of a %s and a %s is ambiguous: convert one with :to(cute.<type>)", opname, ta.name, tb.name)
  end
  local t = types[(av and a or b).ty]
  local n = av and b or a
  if type(n) == "cdata" and (t.kind == "int" or t.kind == "uint") and
      (ffi.istype("uint64_t", n) or ffi.istype("int64_t", n)) then
    return t -- a 64-bit integer literal (0x...ULL): its bits, as the value's type
  end
  if type(n) ~= "number" then
    if type(n) == "boolean" and t.kind == "bool" then return t end
    err.raise("%s of a %s value and %s", opname, t.name, describe(n))
  end
  local kind = t.kind
  if kind == "int" or kind == "uint" then
    if n >= t.lo and n < t.hi and n == floor(n) then return t end -- the common case: i + 1
    if n ~= floor(n) then
      err.raise("%s of a %s value and the non-integer %s: convert the value first (x:to(cute.f32))",
        opname, t.name, show_number(n))
    end
    if kind == "uint" and n < 0 then
      err.raise("%s of a %s value and the negative number %s", opname, t.name, show_number(n))
    end
    err.raise("%s of a %s value and the Lua number %s, which is out of range for %s (%s): convert the value to a "
      .. "wider type first (x:to(cute.i64))", opname, t.name, show_number(n), t.name, range_text(t))
  end
  if kind == "float" then
    if n >= t.inf_at or n <= -t.inf_at then check_const(t, n, string.format("%s of a %s value", opname, t.name)) end
    return t
  end
  if kind == "bool" then err.raise("%s of a bool value and a number: arithmetic on bool is not defined", opname) end
  if rank(t) == 0 and kind ~= "ptr" then err.raise("%s on a %s value", opname, t.name) end
  return t
end

--- x as a value of tracer type t (Lua numbers and booleans become constants).
function M.coerce(x, t, what)
  if is_value(x) then
    if x.ty ~= t.id then
      err.raise("%s: expected a %s, got a %s value", what or "operand", t.name, types[x.ty].name)
    end
    return x
  end
  if type(x) == "number" or type(x) == "boolean" then return M.const(t, x, what or "operand") end
  -- 64-bit integer constants beyond 2^53: LuaJIT's 0x...ULL / LL literals
  if type(x) == "cdata" and (t.kind == "int" or t.kind == "uint") and
      (ffi.istype("uint64_t", x) or ffi.istype("int64_t", x)) then
    return M.const(t, check_const(t, x, what or "operand"), what)
  end
  err.raise("%s: expected a %s value or a Lua number, got %s", what or "operand", t.name, describe(x))
end

-- ---------------------------------------------------------------------------
-- Traces and regions

--- Starts tracing a function into module m (an IrModule*), returning the trace.
-- kind: "kernel" or "device".
function M.begin(m, fname, kind, ret_type, opts)
  if not ir then ir = require("cute._c").ir end
  serial = serial % 65535 + 1
  local rett = ret_type and ir.type_parse(m, ret_type.ir) or 0
  local f = ir.func_new(m, fname, kind == "kernel" and 0 or 1, rett)
  if f == nil then
    err.raise("cannot create %s '%s' (bad or duplicate name)", kind, fname)
  end
  local trace = {
    m = m, f = f, fid = serial, name = fname, kind = kind, ret = ret_type,
    irtypes = {}, locs = {}, loc_text = {}, last_loc = 0,
    region = 0, region_stack = { 0 }, open = { [0] = true }, region_info = {}, region_serial = 0,
    dead = false, smem_bytes = 0, smem_align = 16, dyn_smem = nil, opts = opts or {},
    unused_cmps = {}, parent = T,
  }
  T = trace
  return trace
end

--- Ends the trace in progress (after the body returned): every dynamic region
-- must be closed; a Lua `break`, `return` or `goto` out of `for ... in
-- cute.range(...)` leaves one open.
function M.finish()
  local trace = T
  if #trace.region_stack > 1 then
    local r = trace.region_info[trace.region_stack[#trace.region_stack]]
    T = trace.parent
    err.raise("the dynamic %s at %s was never closed: a Lua break, return or goto left `for ... in cute.range()`; "
      .. "use cute.break_(), cute.continue_() or cute.return_() inside dynamic loops", r.kind, r.where)
  end
  -- the first comparison nothing used, in program order
  local first
  for ref in pairs(trace.unused_cmps) do
    if not first or ref < first then first = ref end
  end
  T = trace.parent
  if first then
    error(string.format("%s: the result of this comparison is never used: Lua's `if`, `and`, `or` and `not` take a "
      .. "traced value as true whatever it will be on the GPU, so `if a:lt(b) then` always runs its branch; branch "
      .. "on the GPU with cute.if_(a:lt(b), function() ... end), or pick a value with cute.where(a:lt(b), x, y)",
      trace.loc_text[trace.unused_cmps[first]] or "?"), 0)
  end
  return trace
end

--- The error handler of a traced body (xpcall): a Lua stack overflow (a
-- kernel body or device function that recurses without end, or too deeply)
-- becomes an error at the user's line that says so; other errors pass.
-- It runs where the error was raised, with the stack still there.
function M.on_trace_error(e)
  if type(e) == "string" and e:find("stack overflow", 1, true) and not e:find("recursed too deeply", 1, true) then
    local where = err.where()
    return string.format("%s: the kernel body recursed too deeply (Lua stack overflow): a recursive Lua function "
      .. "in a kernel unrolls at trace time, each call inlined; recurse only to a small depth known when tracing, "
      .. "and loop on the GPU with cute.range or cute.while_", where or "?")
  end
  return e
end

--- Abandons the trace in progress (an error escaped the body).
function M.abort()
  if T then T = T.parent end
end

--- Opens a region record (the IR call has already been made by the caller).
function M.push_region(kind)
  T.region_serial = T.region_serial + 1
  local id = T.region_serial
  local info = user_frame()
  T.region_info[id] = { kind = kind, where = info and (info.short_src .. ":" .. info.currentline) or "?",
    parent = T.region, loop = kind == "loop" or kind == "while loop" }
  T.region_stack[#T.region_stack + 1] = id
  T.open[id] = true
  T.region = id
  T.dead = false
  return id
end

--- Closes the innermost region record.
function M.pop_region()
  local id = table.remove(T.region_stack)
  T.open[id] = nil
  T.region = T.region_stack[#T.region_stack]
  T.dead = false
  return id
end

--- True when a dynamic loop encloses the current point.
function M.in_loop()
  local id = T.region
  while id and id ~= 0 do
    local r = T.region_info[id]
    if r.loop then return true end
    id = r.parent
  end
  return false
end

--- Marks the rest of the current region unreachable (after break/continue/return).
function M.mark_dead() T.dead = true end

--- The C IR table (for the modules of the tracer).
function M.ir()
  if not ir then ir = require("cute._c").ir end
  return ir
end

return M
