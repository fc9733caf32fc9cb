--- cute.ir: the C IR (src/ir) as Lua objects, for tests, tools and the tracer.
--
--   local ir = require "cute.ir"
--   local m = ir.module { sm = 80 }                 -- options: fold, check, sm
--   local k = m:kernel("scale", { maxntid = 256 })  -- or m:func(name, ret)
--   local x, n = k:param("ptr<f32, global, 4>"), k:param("i32")
--   local i = k:op("sreg", nil, { "tid.x" })
--   k:if_(k:op("icmp", nil, i, n, { "slt" }))
--     local p = k:op("gep", nil, x, i)
--     k:op("store", nil, p, k:op("mul", nil, k:op("load", nil, p), k:const("f32", 2)))
--   k:end_()
--   m:verify()                      -- raises with every violation
--   print(m)                        -- the IR as text
--   local ll = m:emit_nvvm { line_info = true }
--
-- Values are the C refs (integers); types are interned ids, named by their
-- printed form ("f32", "<4 x f16>", "ptr<f32, global, 16>", "{4 x f32}").
-- Op names, their immediates and the names of enumerated immediates all come
-- from the C op table (ir_ops.h); nothing here is a second list. A builder
-- call that C rejects raises its diagnostic at the caller's line.
local ffi = require "ffi"
local C = require("cute._c").ir
local err = require "cute._err"

local M = {}

-- The op table, read from C once.
local OPS, OP_NAMES, OP_IMMS = {}, {}, {}
for i = 0, C.op_count() - 1 do
  local name = ffi.string(C.op_name(i))
  OPS[name] = i
  OP_NAMES[i] = name
  OP_IMMS[i] = ffi.string(C.op_imms(i))
end
M.ops = OPS

--- The documentation line of an op (operands and immediates), or nil.
function M.op_doc(name)
  local id = OPS[name]
  return id and ffi.string(C.op_doc(id)) or nil
end

--- The immediates an op takes, one letter per immediate (see docs/ir.md).
function M.op_imms(name)
  local id = OPS[name]
  return id and OP_IMMS[id] or nil
end

local KIND_NUM = { kernel = 0, device = 1 }

-- The IR's other enumerations, by name -> number, read from C (ir.h): address
-- spaces, kernel attributes (and their value counts), module options, scalar
-- types (and which are storage-only). No list here is typed by hand.
local function names_of(fn, first)
  local t, list = {}, {}
  for i = first or 0, 255 do
    local p = fn(i)
    if p == nil then break end
    local name = ffi.string(p)
    t[name] = i
    list[#list + 1] = name
  end
  return t, list
end
local SPACES, SPACE_LIST = names_of(C.space_name)
local ATTRS, ATTR_LIST = names_of(C.attr_name)
local OPTIONS = names_of(C.option_name)
local SCALARS = names_of(C.scalar_name, 1)
local _, KIND_LIST = names_of(C.type_kind_name)
local ATTR_ARITY, STORAGE_ONLY = {}, {}
for name, i in pairs(ATTRS) do ATTR_ARITY[name] = C.attr_arity(i) end
for name, i in pairs(SCALARS) do STORAGE_ONLY[name] = C.scalar_storage_only(i) == 1 or nil end
M.attrs = ATTRS
--- The enumerations: space, attr, option, scalar (name -> number); space_list,
-- attr_list (names in order); attr_arity (name -> value count);
-- storage_only (the set of scalar types without arithmetic: bf16, tf32, fp8).
M.enums = { space = SPACES, space_list = SPACE_LIST, attr = ATTRS, attr_list = ATTR_LIST, attr_arity = ATTR_ARITY,
  option = OPTIONS, scalar = SCALARS, storage_only = STORAGE_ONLY }

-- The ops of a lowering family ("MATH": the math functions), in table order.
function M.ops_of_family(family)
  local buf = ffi.new("char[4096]")
  C.ops_in_family(family, buf, 4096)
  local out = {}
  for name in ffi.string(buf):gmatch("%S+") do out[#out + 1] = name end
  return out
end

local Module, Func = {}, {}
Module.__index = Module
Func.__index = Func

-- Raises the module's pending diagnostics (and clears them).
local function raise_diag(m, what)
  local text = ffi.string(C.diag(m.handle))
  C.diag_clear(m.handle)
  if text == "" then text = what .. " failed" end
  err.raise("%s", (text:gsub("\n$", "")))
end

local function live(m)
  if m.handle == nil then err.raise("cute.ir: this module was freed") end
  return m.handle
end

--- A new, empty module. opts: fold (default true), check (default true),
-- target (a name of the target table; default sm_90a) or sm (a compute
-- capability: its plain target, 80 -> sm_80), max_ops (the most
-- instructions it may hold, all functions; default 500000, 0 for no limit).
function M.module(opts)
  opts = opts or {}
  local ptr = C.module_new()
  if ptr == nil then err.raise("cute.ir.module: out of memory") end
  local m = setmetatable({ handle = ffi.gc(ptr, C.module_free), types = {}, funcs = {} }, Module)
  if opts.fold ~= nil then C.module_set(ptr, OPTIONS.fold, opts.fold and 1 or 0) end
  if opts.check ~= nil then C.module_set(ptr, OPTIONS.check, opts.check and 1 or 0) end
  if opts.sm ~= nil then m:set_sm(opts.sm) end
  if opts.target ~= nil then m:set_target(opts.target) end
  if opts.max_ops ~= nil then m:set_max_ops(opts.max_ops) end
  return m
end

--- Releases the module now (also done by the garbage collector); safe twice.
function Module:free()
  if self.handle ~= nil then
    local p = self.handle
    self.handle = nil
    ffi.gc(p, nil)
    C.module_free(p)
  end
end

--- The target the op rules follow: a name of the target table ("sm_90a";
-- sm_90 and sm_90a differ). Raises, naming the known ones, for another.
function Module:set_target(name)
  if type(name) ~= "string" then err.raise("cute.ir: a target is a name (\"sm_90a\"), got %s", tostring(name)) end
  if C.module_set_target(live(self), name) ~= 0 then raise_diag(self, "set_target") end
end

--- The module's target (a name).
function Module:target() return ffi.string(C.module_target(live(self))) end

--- A number: the plain target of that compute capability (80: sm_80, 90:
-- sm_90); a name: set_target.
function Module:set_sm(sm)
  if type(sm) == "string" then return self:set_target(sm) end
  if type(sm) ~= "number" then err.raise("cute.ir: sm must be a number (80) or a name (\"sm_80\")") end
  local before = C.diag_count(live(self))
  C.module_set(live(self), OPTIONS.sm, sm)
  if C.diag_count(live(self)) > before then raise_diag(self, "set_sm") end
end
function Module:set_fold(on) C.module_set(live(self), OPTIONS.fold, on and 1 or 0) end
function Module:set_check(on) C.module_set(live(self), OPTIONS.check, on and 1 or 0) end
--- The most instructions the module may hold (0: no limit).
function Module:set_max_ops(n)
  if type(n) ~= "number" or n ~= math.floor(n) or n < 0 or n > 2 ^ 31 - 1 then
    err.raise("cute.ir: max_ops must be a whole number from 0 (no limit) to 2147483647, got %s", tostring(n))
  end
  C.module_set(live(self), OPTIONS.max_ops, n)
end

--- A type id from a name ("f32", "ptr<f16, shared, 16>") or an id.
function Module:type(t)
  if type(t) == "number" then return t end
  if type(t) ~= "string" then err.raise("cute.ir: a type is a name or an id, got %s", type(t)) end
  local id = self.types[t]
  if not id then
    id = C.type_parse(live(self), t)
    if id == 0 then raise_diag(self, "type") end
    self.types[t] = id
  end
  return id
end

M.spaces = SPACES

function Module:ptr(elem, space, align)
  local s = SPACES[space or "generic"]
  if not s then err.raise("cute.ir: unknown address space '%s'", tostring(space)) end
  local id = C.type_ptr(live(self), self:type(elem), s, align or 0)
  if id == 0 then raise_diag(self, "ptr") end
  return id
end

function Module:vec(elem, n)
  local id = C.type_vec(live(self), self:type(elem), n)
  if id == 0 then raise_diag(self, "vec") end
  return id
end

function Module:struct(fields)
  local arr = ffi.new("IrType[?]", #fields)
  for i, f in ipairs(fields) do arr[i - 1] = self:type(f) end
  local id = C.type_struct(live(self), arr, #fields)
  if id == 0 then raise_diag(self, "struct") end
  return id
end

function Module:array(elem, n)
  local id = C.type_array(live(self), self:type(elem), n)
  if id == 0 then raise_diag(self, "array") end
  return id
end

--- The printed name of a type id.
function Module:type_name(t) return ffi.string(C.type_name(live(self), self:type(t))) end

--- {kind=, bits=, elem=, len=, space=, align=, size=, natural=} of a type.
function Module:type_info(t)
  local info = ffi.new("IrTypeInfo")
  if C.type_info(live(self), self:type(t), info) ~= 0 then err.raise("cute.ir: bad type %s", tostring(t)) end
  return { kind = KIND_LIST[info.kind + 1], bits = info.bits, elem = info.elem, len = info.len,
    space = info.space >= 0 and SPACE_LIST[info.space + 1] or nil, align = info.align, size = info.size,
    natural = info.natural }
end

--- Sets the source location recorded on the following ops.
function Module:set_loc(file, line, fn)
  return C.set_loc(live(self), file, line or 0, fn)
end

local function new_func(m, name, kind, ret, attrs)
  local ptr = C.func_new(live(m), name, kind, ret and m:type(ret) or 0)
  if ptr == nil then raise_diag(m, "func") end
  local f = setmetatable({ m = m, handle = ptr, name = name, index = C.func_index(ptr) }, Func)
  m.funcs[#m.funcs + 1] = f
  for k, v in pairs(attrs or {}) do f:attr(k, v) end
  return f
end

--- A kernel; attrs: maxntid, reqntid, cluster ({x, y, z} or x), minctasm, maxnreg, dynamic_smem.
function Module:kernel(name, attrs) return new_func(self, name, KIND_NUM.kernel, nil, attrs) end
--- A device function returning ret (nil: nothing).
function Module:func(name, ret) return new_func(self, name, KIND_NUM.device, ret) end

--- Checks the whole module; raises with every violation found.
function Module:verify()
  if C.verify(live(self)) > 0 then raise_diag(self, "verify") end
  return self
end

--- The IR as text; opts.locs adds each op's source location.
function Module:print(opts)
  local len = ffi.new("size_t[1]")
  local s = C.print(live(self), (opts and opts.locs) and 1 or 0, len)
  return ffi.string(s, len[0])
end
Module.__tostring = function(m)
  if m.handle == nil then return "cute.ir module (freed)" end
  return m:print()
end

--- NVVM IR text for libnvvm, from the emitter (src/emit). opts: fast_math,
-- ftz, line_info, target (a name, for the emitter). Verifies the module
-- first (the module's own target decides what is valid) and raises with the
-- verifier's report when it is not valid; the module is not changed.
local EMIT_OPTIONS = { fast_math = true, ftz = true, line_info = true, target = true }

function Module:emit_nvvm(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if not EMIT_OPTIONS[k] then
      err.raise("cute.ir: emit_nvvm: unknown option '%s' (fast_math, ftz, line_info, target)%s", tostring(k),
        k == "sm" and "; the target that decides what is valid is the module's (ir.module{sm = ...}, m:set_sm)"
        or "")
    end
  end
  if C.module_verified(live(self)) == 0 then self:verify() end
  local E = require("cute._c").emit
  local target = opts.target
  if target ~= nil and type(target) ~= "string" then
    err.raise("cute.ir: emit_nvvm: target must be a name (\"sm_90a\"), got %s", tostring(target))
  end
  local o = ffi.new("EmOptions", { fast_math = opts.fast_math and 1 or 0, ftz = opts.ftz and 1 or 0,
    line_info = opts.line_info and 1 or 0, target = target })
  local out, e = ffi.gc(E.text_new(), E.text_free), ffi.gc(E.text_new(), E.text_free)
  local len = ffi.new("size_t[1]")
  if E.nvvm(live(self), o, out, e) ~= 0 then
    local msg = E.text(e, len)
    err.raise("%s", (ffi.string(msg, len[0]):gsub("\n$", "")))
  end
  return ffi.string(E.text(out, len), len[0])
end

--- The pending diagnostics as text (builder errors not yet raised).
function Module:diag() return ffi.string(C.diag(live(self))) end

-- --- functions -----------------------------------------------------------------------------

-- The function's C handle, refusing one whose module was freed.
local function fh(f)
  if f.m.handle == nil then err.raise("cute.ir: the module of @%s was freed", f.name) end
  return f.handle
end

local function check(f, r, what)
  if r == 0 or r == -1 then raise_diag(f.m, what) end
  return r
end

function Func:param(t) return check(self, C.param(fh(self), self.m:type(t)), "param") end
--- A by-value blob parameter (e.g. a 128-byte TMA descriptor, align 64) kept in param space.
function Func:param_blob(size, align) return check(self, C.param_blob(fh(self), size, align or 8), "param_blob") end

function Func:attr(name, v)
  local id = ATTRS[name]
  if not id then err.raise("cute.ir: unknown kernel attribute '%s'", tostring(name)) end
  local x, y, z = v, 0, 0
  if type(v) == "table" then x, y, z = v[1], v[2] or 0, v[3] or 0 end
  check(self, C.func_attr(fh(self), id, x, y, z) + 1, "attr")
  return self
end

function Func:const(t, value)
  t = self.m:type(t)
  local tn = self.m:type_info(t)
  if tn.kind == "float" then return check(self, C.const_float(fh(self), t, value), "const") end
  -- integer constants wrap at the type's width (the IR's rule), but must be
  -- whole numbers that an int64 holds (or 64-bit integer cdata)
  if type(value) == "number" and (value ~= math.floor(value) or value < -2 ^ 63 or value >= 2 ^ 64) then
    err.raise("cute.ir: const: %s is not a whole number an integer constant can take",
      require("cute.dtype").show_number(value))
  end
  if type(value) == "number" and value >= 2 ^ 63 then value = ffi.cast("int64_t", ffi.cast("uint64_t", value)) end
  return check(self, C.const_int(fh(self), t, value), "const")
end

--- The type id of a value.
function Func:type_of(v) return C.value_type(fh(self), v) end
--- The op name of a value, or nil.
function Func:op_of(v) return OP_NAMES[C.inst_op(fh(self), v)] end

local args_buf = ffi.new("IrRef[256]")
local imms_buf = ffi.new("int64_t[8]")

-- An immediate from Lua: numbers as they are, names through the C enumerations.
local function imm_value(f, kind, x, op, i)
  if type(x) == "number" then return x end
  if kind == "s" then return C.str(f.m.handle, x) end
  if kind == "f" then
    if type(x) == "table" and x.index then return x.index end
    for _, g in ipairs(f.m.funcs) do if g.name == x then return g.index end end
    err.raise("%s: no function '%s' in this module", op, tostring(x))
  end
  if kind == "F" and type(x) == "table" then
    local bits = 0
    for _, name in ipairs(x) do bits = bit.bor(bits, imm_value(f, "F", name, op, i)) end
    return bits
  end
  if type(x) == "string" then
    local v = C.imm_find(kind:byte(), x)
    if v < 0 then
      local names = {}
      for j = 0, C.imm_count(kind:byte()) - 1 do
        local s = C.imm_name(kind:byte(), kind == "F" and bit.lshift(1, j) or j)
        if s ~= nil and ffi.string(s) ~= "" then names[#names + 1] = ffi.string(s) end
      end
      err.raise("%s: immediate %d is a %s; '%s' is not one (%s)", op, i, ffi.string(C.imm_kind_name(kind:byte())),
        x, table.concat(names, " "))
    end
    return v
  end
  err.raise("%s: immediate %d: expected a number or a name, got %s", op, i, type(x))
end

--- Appends op `name` with result type t (nil: by the op's rule), operands
-- (refs) and, as an optional last argument, a table of immediates.
function Func:op(name, t, ...)
  local id = OPS[name]
  if not id then err.raise("cute.ir: unknown op '%s'", tostring(name)) end
  local n = select("#", ...)
  local imms = nil
  if n > 0 and type(select(n, ...)) == "table" then
    imms = select(n, ...)
    n = n - 1
  end
  if n > 256 then err.raise("%s: at most 256 operands", name) end
  for i = 1, n do
    local a = select(i, ...)
    if type(a) ~= "number" then err.raise("%s: operand %d is a %s, expected a value (ref)", name, i, type(a)) end
    args_buf[i - 1] = a
  end
  local kinds = OP_IMMS[id]
  local nimm = 0
  if imms then
    if #imms > #kinds then
      err.raise("%s: takes %d immediate%s (%s), got %d", name, #kinds, #kinds == 1 and "" or "s", kinds, #imms)
    end
    for i = 1, #imms do imms_buf[i - 1] = imm_value(self, kinds:sub(i, i), imms[i], name, i) end
    nimm = #imms
  end
  return check(self, C.op(fh(self), id, t and self.m:type(t) or 0, args_buf, n, imms_buf, nimm), name)
end

-- Structured control flow.
function Func:for_(lo, hi, step, unroll)
  return check(self, C.for_begin(fh(self), lo, hi, step, unroll or 0), "for")
end
function Func:if_(c) check(self, C.if_begin(fh(self), c) + 1, "if"); return self end
function Func:else_() check(self, C.else_begin(fh(self)) + 1, "else"); return self end
function Func:while_() check(self, C.while_begin(fh(self)) + 1, "while"); return self end
function Func:cond(c) check(self, C.while_cond(fh(self), c) + 1, "while_cond"); return self end
function Func:end_() check(self, C.region_end(fh(self)) + 1, "end"); return self end
function Func:break_() check(self, C.brk(fh(self)) + 1, "break"); return self end
function Func:continue_() check(self, C.cont(fh(self)) + 1, "continue"); return self end
function Func:ret(v) check(self, C.ret(fh(self), v or 0) + 1, "ret"); return self end
function Func:depth() return C.depth(fh(self)) end

-- Local variables: an index is a Lua number (static) or a value (a table {ref}).
function Func:var(t, count) return check(self, C.var_new(fh(self), self.m:type(t), count or 1), "var") end

local function dyn_index(i)
  if type(i) == "table" then return i[1] end
  return nil
end

function Func:var_load(var, i)
  local d = dyn_index(i)
  if d then return check(self, C.var_loadx(fh(self), var, d), "var.loadx") end
  return check(self, C.var_load(fh(self), var, i or 0), "var.load")
end

--- count consecutive elements from static index i, as a vector value.
function Func:var_loadv(var, i, count) return check(self, C.var_loadv(fh(self), var, i, count), "var.loadv") end

--- An optimisation barrier on a variable (values computed from it before are recomputed after).
function Func:var_opaque(var) return check(self, C.var_opaque(fh(self), var) + 1, "var.opaque") end

--- A vector value into consecutive elements from static index i.
function Func:var_storev(var, i, v) return check(self, C.var_storev(fh(self), var, i, v) + 1, "var.storev") end

function Func:var_store(var, i, v)
  local d = dyn_index(i)
  if d then return check(self, C.var_storex(fh(self), var, d, v) + 1, "var.storex") end
  return check(self, C.var_store(fh(self), var, i or 0, v) + 1, "var.store")
end

--- Calls device function g (a Func or its name) with values.
function Func:call(g, ...)
  local args = { ... }
  args[select("#", ...) + 1] = { type(g) == "table" and g.index or g }
  return self:op("call", nil, unpack(args, 1, select("#", ...) + 1))
end

--- The function's IR as text.
function Func:print(opts)
  local len = ffi.new("size_t[1]")
  local s = C.print_func(fh(self), (opts and opts.locs) and 1 or 0, len)
  return ffi.string(s, len[0])
end
Func.__tostring = function(f) return f:print() end

--- One op as text.
function Func:print_op(v)
  local len = ffi.new("size_t[1]")
  return ffi.string(C.print_inst(fh(self), v, len), len[0])
end

return M
