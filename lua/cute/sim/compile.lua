--- cute.sim.compile: a traced kernel's IR compiled to Lua source, which
-- LuaJIT's trace compiler turns into machine code.
--
-- One Lua function per IR function: the kernel is function(P, B, T) (P its
-- parameters, B the block, T the thread), a device function takes the same
-- and its arguments. Every SSA value becomes a Lua local (or, past the
-- local limit, a slot of a per-thread table); vectors and structs are
-- scalarised into one name per element; local variables indexed only by
-- constants are scalarised too. Structured control flow maps to Lua's (a
-- for is a while loop, continue a goto). Memory accesses call the helpers of
-- cute.sim.machine, which check them. Warp-synchronous ops and barriers
-- yield to the scheduler (cute.sim.exec), which runs the threads of a block
-- as coroutines; a kernel without them runs each thread as a plain call.
-- f32 arithmetic is rounded to f32 after each op; an f32 (or f64) mul whose
-- only use is an add or sub in the same block is contracted to an fma, as
-- the NVVM compile (-fma=1) does.
local ffi = require "ffi"
local err = require "cute._err"
local machine = require "cute.sim.machine"
local N = require "cute.sim.num"

local ir = require("cute._c").ir

local C = {}

local OPN = {} -- op id -> name
for i = 0, ir.op_count() - 1 do OPN[i] = ffi.string(ir.op_name(i)) end

local function imm_name(letter, v)
  local s = ir.imm_name(letter:byte(), v)
  return s ~= nil and ffi.string(s) or tostring(v)
end

-- Yield kinds (the scheduler's protocol, cute.sim.exec)
C.Y = { BAR = 1, NAMED = 2, SYNCWARP = 3, SHFL = 4, VOTE = 5, REDUX = 6, LDMATRIX = 7, MMA = 8, STMATRIX = 9,
  ELECT = 10, WGMMA = 11, MBWAIT = 12, CLWAIT = 13 }
local Y = C.Y

-- ---------------------------------------------------------------------------
-- Types: what a value is made of

local tinfo = ffi.new("IrTypeInfo")

local function split_fields(s)
  local out, depth, cur = {}, 0, {}
  for ch in s:gmatch(".") do
    if ch == "<" or ch == "{" or ch == "[" then depth = depth + 1 end
    if ch == ">" or ch == "}" or ch == "]" then depth = depth - 1 end
    if ch == "," and depth == 0 then
      out[#out + 1] = table.concat(cur):match("^%s*(.-)%s*$")
      cur = {}
    else
      cur[#cur + 1] = ch
    end
  end
  out[#out + 1] = table.concat(cur):match("^%s*(.-)%s*$")
  return out
end

-- A type's description: kind (int float ptr vec struct void), name, bits,
-- slots (the scalar type name of each Lua value it is made of), for a pointer
-- its space and element size, bytes.
local function type_desc(cache, m, t)
  local d = cache[t]
  if d then return d end
  ir.type_info(m, t, tinfo)
  local kind = ffi.string(ir.type_kind_name(tinfo.kind))
  local name = ffi.string(ir.type_name(m, t))
  d = { kind = kind, name = name, bits = tinfo.bits, bytes = tinfo.size }
  if kind == "int" or kind == "float" then
    d.slots = { name }
  elseif kind == "ptr" then
    d.slots = { "ptr" }
    d.space = ffi.string(ir.space_name(tinfo.space))
    local elem = tinfo.elem
    local ed = type_desc(cache, m, elem)
    d.esize = ed.bytes
    d.elem = ed
  elseif kind == "vec" then
    local n, elem = tinfo.len, tinfo.elem
    local ed = type_desc(cache, m, elem)
    d.slots, d.elem = {}, ed
    for _ = 1, n do for _, s in ipairs(ed.slots) do d.slots[#d.slots + 1] = s end end
    d.fields = {}
    for i = 1, n do d.fields[i] = ed end
  elseif kind == "struct" then
    local inner = name:match("^{(.*)}$")
    local fields = {}
    local cnt, fty = inner:match("^(%d+) x (.+)$")
    if cnt then
      for i = 1, tonumber(cnt) do fields[i] = fty end
    else
      fields = split_fields(inner)
    end
    d.slots, d.fields = {}, {}
    for i, fname in ipairs(fields) do
      local ft = ir.type_parse(m, fname)
      local fd = type_desc(cache, m, ft)
      d.fields[i] = fd
      for _, s in ipairs(fd.slots) do d.slots[#d.slots + 1] = s end
    end
  else
    d.slots = {}
  end
  cache[t] = d
  return d
end

-- ---------------------------------------------------------------------------
-- Literals

local function num_lit(x)
  if x ~= x then return "(0/0)" end
  if x == math.huge then return "(1/0)" end
  if x == -math.huge then return "(-1/0)" end
  if x == 0 and 1 / x < 0 then return "(-0.0)" end
  if x == math.floor(x) and math.abs(x) < 2 ^ 53 then return string.format("%d", x) end
  return string.format("%.17g", x)
end

local function zero_of(slot)
  if slot == "i1" then return "false" end
  if slot == "i64" then return "0LL" end
  return "0"
end

local function int_lit(v, bits)
  if bits == 1 then return v ~= 0 and "true" or "false" end
  if bits == 64 then return tostring(ffi.cast("int64_t", v)) end
  local x = tonumber(v)
  if bits == 32 then x = bit.tobit(x) elseif bits == 16 then x = N.sext16(x) elseif bits == 8 then x = N.sext8(x) end
  return string.format("%d", x)
end

-- ---------------------------------------------------------------------------
-- The compiler of one function

local LOCAL_LIMIT = 150 -- Lua allows 200 locals a function; the rest go to the spill table R
local HELPER_LIMIT = 48 -- helpers as upvalues (Lua allows 60); others through the table H

local Fn = {}
Fn.__index = Fn

local function new_fn(mc, f, index)
  local self = setmetatable({ mc = mc, m = mc.m, f = f, index = index, out = {}, ind = "  ", nloc = 0,
    nspill = 0, vals = {}, uid = 0, loops = {}, regions = {}, vars = {} }, Fn)
  self.name = ffi.string(ir.func_name(f))
  self.ninst = ir.inst_count(f)
  return self
end

function Fn:ty(t) return type_desc(self.mc.types, self.m, t) end
function Fn:vty(v) return self:ty(ir.value_type(self.f, v)) end
function Fn:op(v) return OPN[ir.inst_op(self.f, v)] end
function Fn:arg(v, i) return ir.inst_arg(self.f, v, i) end
function Fn:nargs(v) return ir.inst_nargs(self.f, v) end
function Fn:imm(v, i) return ir.inst_imm(self.f, v, i) end

local fileo = ffi.new("const char *[1]")
function Fn:where(v)
  local line = ir.inst_loc(self.f, v, fileo)
  local file = ffi.string(fileo[0])
  if line == 0 then return "?" end
  return file .. ":" .. line
end

function Fn:unsupported(v, what)
  err.raise("the simulator does not run %s yet (at %s, in kernel '%s'); run this kernel on a GPU",
    what or ("the IR op '" .. self:op(v) .. "'"), self:where(v), self.mc.kernel)
end

-- Emits a line of straight-line code; in a big function (below) it joins
-- the pending segment.
function Fn:emit(s)
  if self.big then
    self.seg[#self.seg + 1] = s
    if #self.seg >= 1500 then self:flush() end
    return
  end
  self.out[#self.out + 1] = self.ind .. s
end

-- A big function (a body past LuaJIT's 32767-instruction jump range): every
-- value lives in R, and each run of straight-line code becomes a function of
-- its own (SEG[n]), called from the control structure that holds it.
function Fn:flush()
  if not self.big or #self.seg == 0 then return end
  local mc = self.mc
  mc.nseg = mc.nseg + 1
  mc.segs[#mc.segs + 1] = string.format("SEG[%d] = function(P, B, T, R, SB)\n%s\nend", mc.nseg,
    table.concat(self.seg, "\n"))
  self.seg = {}
  self.out[#self.out + 1] = string.format("%sSEG[%d](P, B, T, R, SB)", self.ind, mc.nseg)
end

-- Emits a line of control structure (after the pending segment).
function Fn:ctl(s)
  self:flush()
  self.out[#self.out + 1] = self.ind .. s
end
function Fn:helper(name)
  local mc = self.mc
  if not mc.helpers[name] then
    mc.nhelpers = mc.nhelpers + 1
    mc.helpers[name] = mc.nhelpers <= HELPER_LIMIT and name or ("H." .. name)
    mc.helper_order[#mc.helper_order + 1] = name
  end
  return mc.helpers[name]
end

-- A site: a memory or synchronising op, named in the simulator's errors.
function Fn:site(v, what, bytes)
  local id = self.index * 1048576 + v
  self.mc.sites[id] = { what = what, where = self:where(v), bytes = bytes }
  return id
end

-- A new name holding expression e (a local, or a slot of R).
function Fn:bind(e)
  self.uid = self.uid + 1
  if self.nloc < LOCAL_LIMIT then
    self.nloc = self.nloc + 1
    local n = "v" .. self.uid
    self:emit("local " .. n .. " = " .. e)
    return n
  end
  self.nspill = self.nspill + 1
  local n = "R[" .. self.nspill .. "]"
  self:emit(n .. " = " .. e)
  return n
end

-- The value's names (one per slot).
function Fn:v(ref)
  local x = self.vals[ref]
  if not x then
    err.raise("simulator: kernel '%s': %%%d used before its definition (at %s)", self.mc.kernel, ref, self:where(ref))
  end
  return x
end
function Fn:a(ref, i) return self:v(self:arg(ref, i))[1] end
function Fn:set(ref, names) self.vals[ref] = names end
function Fn:def(ref, e) self.vals[ref] = { self:bind(e) } end

-- A multi-valued expression (a call or a yield) bound to n names.
function Fn:bind_multi(e, n)
  if n == 0 then
    self:emit(e)
    return {}
  end
  if n == 1 then return { self:bind(e) } end
  self.uid = self.uid + 1
  local t = "m" .. self.uid
  if self.nloc < LOCAL_LIMIT then
    self.nloc = self.nloc + 1
    self:emit("local " .. t .. " = {" .. e .. "}")
  else
    self.nspill = self.nspill + 1
    t = "R[" .. self.nspill .. "]"
    self:emit(t .. " = {" .. e .. "}")
  end
  local names = {}
  for i = 1, n do names[i] = self:bind(t .. "[" .. i .. "]") end
  return names
end

function Fn:open_block(line)
  if line then self:ctl(line) end
  self.regions[#self.regions + 1] = { nloc = self.nloc }
  self.ind = self.ind .. "  "
end
function Fn:close_block(line)
  self:flush()
  local r = table.remove(self.regions)
  self.nloc = r.nloc
  self.ind = self.ind:sub(3)
  if line then self:ctl(line) end
end

-- ---------------------------------------------------------------------------
-- Integer and float expressions

local NORM = { [8] = "sext8", [16] = "sext16" }

function Fn:inorm(bits, e)
  if bits == 32 then return self:helper("tobit") .. "(" .. e .. ")" end
  if bits == 64 or bits == 1 then return e end
  return self:helper(NORM[bits]) .. "(" .. e .. ")"
end

-- rounds a float expression to type name t
function Fn:fround(t, e)
  if t == "f32" then return self:helper("f32") .. "(" .. e .. ")" end
  if t == "f64" then return e end
  if t == "f16" then return self:helper("to_f16") .. "(" .. e .. ")" end
  if t == "bf16" then return self:helper("to_bf16") .. "(" .. e .. ")" end
  return self:helper("to_" .. t) .. "(" .. e .. ")"
end

local function umask(bits) return string.format("0x%x", 2 ^ bits - 1) end

-- unsigned view of an integer value (a number or a uint64 for i64)
function Fn:uns(bits, e)
  if bits == 32 then return self:helper("u32") .. "(" .. e .. ")" end
  if bits == 64 then return self:helper("U64") .. "(" .. e .. ")" end
  return self:helper("band") .. "(" .. e .. ", " .. umask(bits) .. ")"
end

-- ---------------------------------------------------------------------------
-- Op emitters, by op name: each defines the op's value(s)

local OPS = {}

local function binop(luaop)
  return function(self, v, d)
    local a, b = self:a(v, 0), self:a(v, 1)
    local t = d.slots[1]
    if d.kind == "float" then
      return self:def(v, self:fround(t, a .. " " .. luaop .. " " .. b))
    end
    if d.bits == 1 then return self:def(v, "(" .. a .. " ~= " .. b .. ")") end -- i1 add/sub: xor
    if d.bits == 32 and luaop == "*" then return self:def(v, self:helper("mul32") .. "(" .. a .. ", " .. b .. ")") end
    if d.bits < 32 and luaop == "*" then
      return self:def(v, self:inorm(d.bits, self:helper("mul32") .. "(" .. a .. ", " .. b .. ")"))
    end
    return self:def(v, self:inorm(d.bits, a .. " " .. luaop .. " " .. b))
  end
end

-- Contraction: the mul feeding an f32/f64 add or sub as its only use, in the same block.
OPS.mul = function(self, v, d)
  if d.kind == "float" and (d.name == "f32" or d.name == "f64") and self.fusable[v] then
    self.deferred[v] = { self:a(v, 0), self:a(v, 1) }
    self.vals[v] = { "nil --[[fused]]" }
    return
  end
  return binop("*")(self, v, d)
end

local function add_sub(luaop)
  local plain = binop(luaop)
  return function(self, v, d)
    if d.kind == "float" and (d.name == "f32" or d.name == "f64") then
      local fma = self:helper(d.name == "f32" and "fmaf" or "fma")
      local x, y = self:arg(v, 0), self:arg(v, 1)
      local mx, my = self.deferred[x], self.deferred[y]
      if mx and my then -- both products: the first is fused (as LLVM's combiner does), the second rounded
        self.deferred[y] = nil
        self.vals[y] = { self:bind(self:fround(d.name, my[1] .. " * " .. my[2])) }
        my = nil
      end
      if mx then
        self.deferred[x] = nil
        local c = self:a(v, 1)
        if luaop == "-" then c = "-" .. c end
        return self:def(v, string.format("%s(%s, %s, %s)", fma, mx[1], mx[2], c))
      elseif my then
        self.deferred[y] = nil
        local c, p = self:a(v, 0), my[1]
        if luaop == "-" then p = "-" .. p end
        return self:def(v, string.format("%s(%s, %s, %s)", fma, p, my[2], c))
      end
    end
    return plain(self, v, d)
  end
end
OPS.add, OPS.sub = add_sub("+"), add_sub("-")

OPS.neg = function(self, v, d)
  local a = self:a(v, 0)
  if d.kind == "float" then return self:def(v, "(-" .. a .. ")") end
  return self:def(v, self:inorm(d.bits, "-" .. a))
end

local function idiv(name32, name64, signed)
  return function(self, v, d)
    local a, b = self:a(v, 0), self:a(v, 1)
    if d.bits == 64 then return self:def(v, self:helper(name64) .. "(" .. a .. ", " .. b .. ")") end
    if d.bits == 32 then return self:def(v, self:helper(name32) .. "(" .. a .. ", " .. b .. ")") end
    if signed then return self:def(v, self:inorm(d.bits, self:helper(name32) .. "(" .. a .. ", " .. b .. ")")) end
    return self:def(v, self:inorm(d.bits, self:helper(name32) .. "(" .. self:uns(d.bits, a) .. ", " ..
      self:uns(d.bits, b) .. ")"))
  end
end
OPS.sdiv = idiv("sdiv32", "sdiv64", true)
OPS.udiv = idiv("udiv32", "udiv64", false)
OPS.srem = idiv("srem32", "srem64", true)
OPS.urem = idiv("urem32", "urem64", false)
OPS.smulhi = idiv("smulhi32", "smulhi64", true)
OPS.umulhi = idiv("umulhi32", "umulhi64", true)

OPS.fdiv = function(self, v, d)
  return self:def(v, self:fround(d.name, self:a(v, 0) .. " / " .. self:a(v, 1)))
end

local function minmax(lt)
  return function(self, v, _)
    local a, b = self:a(v, 0), self:a(v, 1)
    return self:def(v, self:helper("sel") .. "(" .. a .. " " .. lt .. " " .. b .. ", " .. a .. ", " .. b .. ")")
  end
end
OPS.smin, OPS.smax = minmax("<"), minmax(">")
OPS.umin = function(self, v, d)
  return self:def(v, self:helper(d.bits == 64 and "umin64" or "umin32") .. "(" .. self:a(v, 0) .. ", " ..
    self:a(v, 1) .. ")")
end
OPS.umax = function(self, v, d)
  return self:def(v, self:helper(d.bits == 64 and "umax64" or "umax32") .. "(" .. self:a(v, 0) .. ", " ..
    self:a(v, 1) .. ")")
end
for _, name in ipairs { "fmin", "fmax" } do
  OPS[name] = function(self, v)
    return self:def(v, self:helper(name) .. "(" .. self:a(v, 0) .. ", " .. self:a(v, 1) .. ")")
  end
end
OPS.abs = function(self, v, d)
  local a = self:a(v, 0)
  if d.kind == "float" then return self:def(v, self:helper("fabs") .. "(" .. a .. ")") end
  if d.bits == 64 then return self:def(v, self:helper("sel") .. "(" .. a .. " < 0, -" .. a .. ", " .. a .. ")") end
  return self:def(v, self:inorm(d.bits, self:helper("fabs") .. "(" .. a .. ")"))
end
OPS.fma = function(self, v, d)
  local a, b, c = self:a(v, 0), self:a(v, 1), self:a(v, 2)
  if d.name == "f32" then return self:def(v, self:helper("fmaf") .. "(" .. a .. ", " .. b .. ", " .. c .. ")") end
  local e = self:helper("fma") .. "(" .. a .. ", " .. b .. ", " .. c .. ")"
  return self:def(v, self:fround(d.name, e))
end

-- comparisons
local ICMP = { eq = "==", ne = "~=", slt = "<", sle = "<=", sgt = ">", sge = ">=", ult = "<", ule = "<=",
  ugt = ">", uge = ">=" }
OPS.icmp = function(self, v)
  local p = imm_name("P", self:imm(v, 0))
  local ad = self:vty(self:arg(v, 0))
  local a, b = self:a(v, 0), self:a(v, 1)
  if ad.bits == 1 then
    if p == "eq" or p == "ne" then return self:def(v, "(" .. a .. " " .. ICMP[p] .. " " .. b .. ")") end
    a, b = "(" .. a .. " and 1 or 0)", "(" .. b .. " and 1 or 0)"
  elseif p:sub(1, 1) == "u" and ad.kind ~= "ptr" then
    if ad.bits == 64 then
      a, b = self:helper("U64") .. "(" .. a .. ")", self:helper("U64") .. "(" .. b .. ")"
    else
      a, b = self:uns(ad.bits, a), self:uns(ad.bits, b)
    end
  end
  return self:def(v, "(" .. a .. " " .. ICMP[p] .. " " .. b .. ")")
end

local FCMP = {
  oeq = "(%s == %s)", olt = "(%s < %s)", ole = "(%s <= %s)", ogt = "(%s > %s)", oge = "(%s >= %s)",
  une = "(%s ~= %s)", ult = "not (%s >= %s)", ule = "not (%s > %s)", ugt = "not (%s <= %s)", uge = "not (%s < %s)",
}
OPS.fcmp = function(self, v)
  local p = imm_name("Q", self:imm(v, 0))
  local a, b = self:a(v, 0), self:a(v, 1)
  local f = FCMP[p]
  if f then return self:def(v, string.format(f, a, b)) end
  local ord = string.format("(%s == %s and %s == %s)", a, a, b, b)
  if p == "ord" then return self:def(v, ord) end
  if p == "uno" then return self:def(v, "not " .. ord) end
  if p == "one" then return self:def(v, string.format("(%s ~= %s and %s)", a, b, ord)) end
  if p == "ueq" then return self:def(v, string.format("(%s == %s or not %s)", a, b, ord)) end
  self:unsupported(v, "fcmp." .. p)
end

OPS.select = function(self, v)
  local c = self:a(v, 0)
  local x, y = self:v(self:arg(v, 1)), self:v(self:arg(v, 2))
  local sel = self:helper("sel")
  local c1 = self:bind(c)
  local names = {}
  for i = 1, #x do names[i] = self:bind(sel .. "(" .. c1 .. ", " .. x[i] .. ", " .. y[i] .. ")") end
  self:set(v, names)
end

-- conversions
local ROUND_FN = { [""] = "rzi", rn = "rni", rz = "rzi", rm = "floor", rp = "ceil", rna = "rni" }

function Fn:cvt(v, d, uns)
  local sd = self:vty(self:arg(v, 0))
  local a = self:a(v, 0)
  local rnd = imm_name("R", self:imm(v, 0))
  local sat = bit.band(tonumber(self:imm(v, 1)), 2) ~= 0
  local from, to = sd.name, d.name
  if sd.kind == "int" and d.kind == "int" then
    local fb, tb = sd.bits, d.bits
    if fb == 1 then
      local e = "(" .. a .. " and 1 or 0)"
      if tb == 64 then e = self:helper("I64") .. e end
      if tb == 1 then e = a end
      return self:def(v, e)
    end
    if sat and tb < fb then
      local hi = uns and (2 ^ tb - 1) or (2 ^ (tb - 1) - 1)
      local lo = uns and 0 or -(2 ^ (tb - 1))
      if fb == 64 then
        a = string.format("%s(%s, %s, %s)", self:helper("clamp64"), a, int_lit(lo, 64), int_lit(hi, 64))
      else
        local ua = uns and self:uns(fb, a) or a
        a = string.format("%s(%s, %s, %s)", self:helper("clamp"), ua, num_lit(lo), num_lit(hi))
      end
    end
    if tb == 1 then
      if fb == 64 then return self:def(v, "(" .. self:helper("band") .. "(" .. a .. ", 1LL) ~= 0)") end
      return self:def(v, "(" .. self:helper("band") .. "(" .. a .. ", 1) ~= 0)")
    end
    if tb == fb then return self:set(v, { a }) end
    if tb > fb then -- widen
      local e = uns and self:uns(fb, a) or a
      if tb == 64 then
        if fb == 32 and uns then return self:def(v, self:helper("I64") .. "(" .. e .. ")") end
        return self:def(v, self:helper("I64") .. "(" .. e .. ")")
      end
      if uns and tb == 32 then return self:def(v, e) end
      return self:def(v, self:inorm(tb, e))
    end
    -- narrow
    if fb == 64 then
      local e = self:helper("tobit") .. "(" .. a .. ")"
      if tb == 32 then return self:def(v, e) end
      return self:def(v, self:inorm(tb, e))
    end
    return self:def(v, self:inorm(tb, a))
  end
  if sd.kind == "int" then -- int -> float
    local e
    if sd.bits == 1 then
      e = "(" .. a .. " and 1 or 0)"
    elseif sd.bits == 64 then
      e = "tonumber(" .. (uns and (self:helper("U64") .. "(" .. a .. ")") or a) .. ")"
    else
      e = uns and self:uns(sd.bits, a) or a
    end
    return self:def(v, self:fround(to, e))
  end
  if d.kind == "int" then -- float -> int: rounded, NaN 0, saturated
    local r = self:helper(ROUND_FN[rnd] or "rzi") .. "(" .. a .. ")"
    if d.bits == 64 then
      return self:def(v, self:helper("f2i64") .. "(" .. r .. ", " .. tostring(uns) .. ")")
    end
    if d.bits == 1 then return self:def(v, "(" .. a .. " ~= 0)") end
    local lo, hi = uns and 0 or -(2 ^ (d.bits - 1)), uns and (2 ^ d.bits - 1) or (2 ^ (d.bits - 1) - 1)
    local e = string.format("%s(%s, %s, %s)", self:helper("f2i"), r, num_lit(lo), num_lit(hi))
    if uns and d.bits == 32 then e = self:helper("tobit") .. "(" .. e .. ")" end
    if uns and d.bits < 32 then e = self:inorm(d.bits, e) end
    return self:def(v, e)
  end
  -- float -> float (to a wider type exactly; other roundings than rn/rz are not simulated)
  if to == "f64" or (to == from and not sat) then
    return self:set(v, { a })
  end
  local e
  if to == "bf16" and rnd == "rz" then
    e = self:helper("to_bf16_rz") .. "(" .. a .. ")"
  else
    e = self:fround(to, a)
  end
  if sat then e = self:helper("sat01") .. "(" .. e .. ")" end
  return self:def(v, e)
end
OPS.cvt = function(self, v, d) return self:cvt(v, d, false) end
OPS.cvtu = function(self, v, d) return self:cvt(v, d, true) end

-- bitcast: through a scratch buffer, slot by slot
local function raw_name(slot)
  if slot == "ptr" then return "p64" end
  if slot == "tf32" then return "f32" end
  return slot
end
OPS.bitcast = function(self, v, d)
  local sd = self:vty(self:arg(v, 0))
  local src = self:v(self:arg(v, 0))
  local off = 0
  local scr = self:helper("SCRATCH")
  for i, slot in ipairs(sd.slots) do
    local r = raw_name(slot)
    self:emit(string.format("%s(%s + %d, %s)", self:helper("raw_w_" .. r), scr, off, src[i]))
    off = off + machine.RAW[r][1]
  end
  local names = {}
  off = 0
  for i, slot in ipairs(d.slots) do
    local r = raw_name(slot)
    names[i] = self:bind(string.format("%s(%s + %d)", self:helper("raw_r_" .. r), scr, off))
    off = off + machine.RAW[r][1]
  end
  self:set(v, names)
end

OPS.ptrtoint = function(self, v, d)
  local a = self:a(v, 0)
  if d.bits == 64 then return self:def(v, self:helper("I64") .. "(" .. a .. ")") end
  return self:def(v, self:helper("tobit") .. "(" .. a .. ")")
end
OPS.inttoptr = function(self, v, d) -- luacheck: ignore 212
  local sd = self:vty(self:arg(v, 0))
  local a = self:a(v, 0)
  if sd.bits == 64 then return self:def(v, "tonumber(" .. a .. ")") end
  if d.space == "shared" then return self:def(v, a) end
  return self:def(v, self:helper("u32") .. "(" .. a .. ")")
end
OPS.ptrcast = function(self, v, d)
  local sd = self:vty(self:arg(v, 0))
  local a = self:a(v, 0)
  local from, to = sd.space, d.space
  if from == to then return self:set(v, { a }) end
  if from == "shared" and to == "generic" then return self:def(v, a .. " + SB") end
  if from == "generic" and to == "shared" then return self:def(v, a .. " - SB") end
  if (from == "generic" or from == "global" or from == "param") and (to == "generic" or to == "global") then
    return self:set(v, { a })
  end
  if from == "shared_cluster" and to == "generic" then
    return self:def(v, self:helper("cl_generic") .. "(" .. a .. ") + SB")
  end
  self:unsupported(v, "a ptrcast from " .. from .. " to " .. to)
end

-- bit operations
local function bitop(fname, luabool)
  return function(self, v, d)
    local a, b = self:a(v, 0), self:a(v, 1)
    if d.bits == 1 then return self:def(v, "(" .. a .. " " .. luabool .. " " .. b .. ")") end
    return self:def(v, self:helper(fname) .. "(" .. a .. ", " .. b .. ")")
  end
end
OPS["and"] = bitop("band", "and")
OPS["or"] = bitop("bor", "or")
OPS.xor = bitop("bxor", "~=")
OPS["not"] = function(self, v, d)
  local a = self:a(v, 0)
  if d.bits == 1 then return self:def(v, "not " .. a) end
  return self:def(v, self:helper("bnot") .. "(" .. a .. ")")
end
OPS.shl = function(self, v, d)
  local a, b = self:a(v, 0), self:a(v, 1)
  if d.bits == 64 then return self:def(v, self:helper("lshift") .. "(" .. a .. ", tonumber(" .. b .. "))") end
  return self:def(v, self:inorm(d.bits, self:helper("lshift") .. "(" .. a .. ", " .. b .. ")"))
end
OPS.lshr = function(self, v, d)
  local a, b = self:a(v, 0), self:a(v, 1)
  if d.bits == 64 then return self:def(v, self:helper("lshr64") .. "(" .. a .. ", tonumber(" .. b .. "))") end
  if d.bits == 32 then return self:def(v, self:helper("rshift") .. "(" .. a .. ", " .. b .. ")") end
  return self:def(v, self:inorm(d.bits, self:helper("rshift") .. "(" .. self:uns(d.bits, a) .. ", " .. b .. ")"))
end
OPS.ashr = function(self, v, d)
  local a, b = self:a(v, 0), self:a(v, 1)
  if d.bits == 64 then return self:def(v, self:helper("arshift") .. "(" .. a .. ", tonumber(" .. b .. "))") end
  return self:def(v, self:helper("arshift") .. "(" .. a .. ", " .. b .. ")")
end
local function bitcount(name)
  return function(self, v)
    local sd = self:vty(self:arg(v, 0))
    local e = self:helper(name) .. "(" .. self:a(v, 0) .. ", " .. sd.bits .. ")"
    if name == "brev" and sd.bits < 32 then self:unsupported(v, "brev of i" .. sd.bits) end
    return self:def(v, e)
  end
end
OPS.popc, OPS.clz, OPS.brev = bitcount("popc"), bitcount("clz"), bitcount("brev")
OPS.prmt = function(self, v)
  return self:def(v, self:helper("prmt") .. "(" .. self:a(v, 0) .. ", " .. self:a(v, 1) .. ", " .. self:a(v, 2) .. ")")
end

-- math (f32 results rounded; the fast forms are computed like the accurate ones)
local MATH = { sqrt = "sqrt", rsqrt = "rsqrt", rcp = "rcp", exp2 = "exp2", log2 = "log2", exp = "exp", log = "log",
  sin = "sin", cos = "cos", tanh = "tanh", erf = "erf", floor = "floor", ceil = "ceil" }
for op, fname in pairs(MATH) do
  OPS[op] = function(self, v, d)
    return self:def(v, self:fround(d.name, self:helper("m_" .. fname) .. "(" .. self:a(v, 0) .. ")"))
  end
end

-- addresses and memory
OPS.gep = function(self, v)
  local pd = self:vty(self:arg(v, 0))
  local id = self:vty(self:arg(v, 1))
  local p, i = self:a(v, 0), self:a(v, 1)
  if id.bits == 64 then i = "tonumber(" .. i .. ")" end
  return self:def(v, p .. " + " .. i .. " * " .. pd.esize)
end

local SPACE_CH = { global = "g", shared = "s", generic = "x", local_ = "x", const = "g", param = "g",
  shared_cluster = "c" }
local function space_ch(space) return SPACE_CH[space] or "x" end

OPS.load = function(self, v, d)
  local pd = self:vty(self:arg(v, 0))
  local p = self:a(v, 0)
  local site = self:site(v, "load", d.bytes)
  if not self.nonselect[v] then self.mc.sites[site].speculative = true end
  local ch = space_ch(pd.space)
  local names, off = {}, 0
  for i, slot in ipairs(d.slots) do
    local r = raw_name(slot)
    local addr = off == 0 and p or (p .. " + " .. off)
    names[i] = self:bind(string.format("%s(%s, %d)", self:helper("ld" .. ch .. "_" .. r), addr, site))
    off = off + machine.RAW[r][1]
  end
  self:set(v, names)
end

OPS.store = function(self, v)
  local pd = self:vty(self:arg(v, 0))
  local vd = self:vty(self:arg(v, 1))
  local p = self:a(v, 0)
  local vals = self:v(self:arg(v, 1))
  local site = self:site(v, "store", vd.bytes)
  local ch = space_ch(pd.space)
  local off = 0
  for i, slot in ipairs(vd.slots) do
    local r = raw_name(slot)
    local addr = off == 0 and p or (p .. " + " .. off)
    self:emit(string.format("%s(%s, %s, %d)", self:helper("st" .. ch .. "_" .. r), addr, vals[i], site))
    off = off + machine.RAW[r][1]
  end
end

-- local variables
function Fn:var(id)
  local x = self.vars[id]
  if x then return x end
  local t = ffi.new("IrType[1]")
  local count = ir.var_info(self.f, id, t)
  local d = self:ty(t[0])
  x = { count = count, d = d, ns = #d.slots, dynamic = self.dynvars[id] }
  if x.dynamic then
    if self.big then
      self.nspill = self.nspill + 1
      x.table = "R[" .. self.nspill .. "]"
    else
      x.table = "V" .. id
    end
  else
    x.names = {}
  end
  self.vars[id] = x
  return x
end

OPS["var.load"] = function(self, v)
  local x = self:var(tonumber(self:imm(v, 0)))
  local idx = tonumber(self:imm(v, 1))
  local names = {}
  for s = 1, x.ns do
    if x.table then
      names[s] = self:bind(string.format("%s[%d]", x.table, idx * x.ns + s))
    else
      names[s] = self:bind(x.names[idx * x.ns + s])
    end
  end
  self:set(v, names)
end
OPS["var.store"] = function(self, v)
  local x = self:var(tonumber(self:imm(v, 0)))
  local idx = tonumber(self:imm(v, 1))
  local vals = self:v(self:arg(v, 0))
  for s = 1, x.ns do
    if x.table then
      self:emit(string.format("%s[%d] = %s", x.table, idx * x.ns + s, vals[s]))
    else
      self:emit(string.format("%s = %s", x.names[idx * x.ns + s], vals[s]))
    end
  end
end
OPS["var.loadx"] = function(self, v)
  local x = self:var(tonumber(self:imm(v, 0)))
  local id = self:vty(self:arg(v, 0))
  local i = self:a(v, 0)
  if id.bits == 64 then i = "tonumber(" .. i .. ")" end
  local names = {}
  for s = 1, x.ns do names[s] = self:bind(string.format("%s[%s * %d + %d]", x.table, i, x.ns, s)) end
  self:set(v, names)
end
OPS["var.storex"] = function(self, v)
  local x = self:var(tonumber(self:imm(v, 0)))
  local id = self:vty(self:arg(v, 0))
  local i = self:a(v, 0)
  if id.bits == 64 then i = "tonumber(" .. i .. ")" end
  local vals = self:v(self:arg(v, 1))
  for s = 1, x.ns do self:emit(string.format("%s[%s * %d + %d] = %s", x.table, i, x.ns, s, vals[s])) end
end
OPS["var.loadv"] = function(self, v, d)
  local x = self:var(tonumber(self:imm(v, 0)))
  local first = tonumber(self:imm(v, 1))
  local names = {}
  for k = 1, #d.slots do
    local slot = first * x.ns + k
    names[k] = self:bind(x.table and string.format("%s[%d]", x.table, slot) or x.names[slot])
  end
  self:set(v, names)
end
OPS["var.storev"] = function(self, v)
  local x = self:var(tonumber(self:imm(v, 0)))
  local first = tonumber(self:imm(v, 1))
  local vals = self:v(self:arg(v, 0))
  for k = 1, #vals do
    local slot = first * x.ns + k
    self:emit(string.format("%s = %s", x.table and string.format("%s[%d]", x.table, slot) or x.names[slot], vals[k]))
  end
end
OPS["var.opaque"] = function() end

-- atomics
OPS.atom = function(self, v, d)
  local pd = self:vty(self:arg(v, 0))
  local opn = imm_name("A", self:imm(v, 0))
  local site = self:site(v, "atomic " .. opn, d.bytes)
  return self:def(v, string.format("%s(%q, %q, %q, %s, %s, %d)", self:helper("atom"), pd.space, opn,
    raw_name(d.slots[1]), self:a(v, 0), self:a(v, 1), site))
end
OPS["atom.cas"] = function(self, v, d)
  local pd = self:vty(self:arg(v, 0))
  local site = self:site(v, "atomic cas", d.bytes)
  return self:def(v, string.format("%s(%q, %q, %s, %s, %s, %d)", self:helper("atom_cas"), pd.space,
    raw_name(d.slots[1]), self:a(v, 0), self:a(v, 1), self:a(v, 2), site))
end

-- special registers
local SREG = {
  ["tid.x"] = "T.tx", ["tid.y"] = "T.ty", ["tid.z"] = "T.tz", ["ntid.x"] = "B.nx", ["ntid.y"] = "B.ny",
  ["ntid.z"] = "B.nz", ["ctaid.x"] = "B.cx", ["ctaid.y"] = "B.cy", ["ctaid.z"] = "B.cz", ["nctaid.x"] = "B.gx",
  ["nctaid.y"] = "B.gy", ["nctaid.z"] = "B.gz", laneid = "T.lane", warpid = "T.warp", nwarpid = "B.nwarps",
  smid = "0", nsmid = "1", lanemask_eq = "T.lm_eq", lanemask_lt = "T.lm_lt", lanemask_le = "T.lm_le",
  lanemask_gt = "T.lm_gt", lanemask_ge = "T.lm_ge", dynamic_smem_size = "B.dsmem", total_smem_size = "B.smem",
  ["clusterid.x"] = "B.clx", ["clusterid.y"] = "B.cly", ["clusterid.z"] = "B.clz", ["nclusterid.x"] = "B.ncx",
  ["nclusterid.y"] = "B.ncy", ["nclusterid.z"] = "B.ncz", ["cluster_ctaid.x"] = "B.ccx", ["cluster_ctaid.y"] = "B.ccy",
  ["cluster_ctaid.z"] = "B.ccz", ["cluster_nctaid.x"] = "B.cnx", ["cluster_nctaid.y"] = "B.cny",
  ["cluster_nctaid.z"] = "B.cnz", cluster_ctarank = "B.crank", cluster_nctarank = "B.cn",
}
OPS.sreg = function(self, v)
  local which = imm_name("G", self:imm(v, 0))
  return self:def(v, SREG[which] or self:unsupported(v, "the special register " .. which))
end
OPS.timer = function(self, v)
  local which = imm_name("W", self:imm(v, 0))
  return self:def(v, self:helper("timer") .. "(" .. string.format("%q", which) .. ")")
end

-- synchronisation and warp collectives: a yield to the scheduler
function Fn:yield(kind, site, args, nres)
  self.mc.sync = true
  local e = self:helper("yield") .. "(" .. kind .. ", " .. site .. (args ~= "" and (", " .. args) or "") .. ")"
  return self:bind_multi(e, nres)
end
OPS.barrier = function(self, v) self:yield(Y.BAR, self:site(v, "barrier", 0), "", 0) end
OPS["barrier.named"] = function(self, v)
  local id = self:a(v, 0)
  local cnt = self:nargs(v) > 1 and self:a(v, 1) or "-1"
  local mode = imm_name("B", self:imm(v, 0))
  self:yield(Y.NAMED, self:site(v, "named barrier", 0), id .. ", " .. cnt .. ", " .. (mode == "arrive" and 1 or 0), 0)
end
OPS.syncwarp = function(self, v) self:yield(Y.SYNCWARP, self:site(v, "syncwarp", 0), self:a(v, 0), 0) end
OPS.fence = function() end
OPS.shfl = function(self, v)
  local mode = imm_name("H", self:imm(v, 0))
  local width = tonumber(self:imm(v, 1))
  local r = self:yield(Y.SHFL, self:site(v, "shfl." .. mode, 4), string.format("%s, %s, %s, %q, %d",
    self:a(v, 0), self:a(v, 1), self:a(v, 2), mode, width == 0 and 32 or width), 1)
  self:set(v, r)
end
OPS.vote = function(self, v)
  local mode = imm_name("V", self:imm(v, 0))
  self:set(v, self:yield(Y.VOTE, self:site(v, "vote." .. mode, 0), string.format("%s, %s, %q", self:a(v, 0),
    self:a(v, 1), mode), 1))
end
OPS.redux = function(self, v)
  local opn = imm_name("A", self:imm(v, 0))
  self:set(v, self:yield(Y.REDUX, self:site(v, "redux." .. opn, 0), string.format("%s, %s, %q", self:a(v, 0),
    self:a(v, 1), opn), 1))
end

OPS.printf = function(self, v)
  local fmt = ffi.string(ir.str_get(self.m, tonumber(self:imm(v, 0))))
  local args = {}
  for i = 0, self:nargs(v) - 1 do args[#args + 1] = self:a(v, i) end
  local rest = #args > 0 and (", " .. table.concat(args, ", ")) or ""
  self:emit(string.format("%s(%q%s)", self:helper("printf"), fmt, rest))
end
OPS.trap = function(self, v)
  self:emit(string.format("%s(%d)", self:helper("trap"), self:site(v, "trap", 0)))
end

OPS.call = function(self, v, d)
  local callee = tonumber(self:imm(v, 0))
  local args = { "P", "B", "T" }
  for i = 0, self:nargs(v) - 1 do for _, n in ipairs(self:v(self:arg(v, i))) do args[#args + 1] = n end end
  local fname = "F" .. callee
  self.mc.called[callee] = true
  self:set(v, self:bind_multi(fname .. "(" .. table.concat(args, ", ") .. ")", #d.slots))
end

-- aggregates: names only, no code
local function field_range(d, i)
  local first = 1
  for k = 1, i do first = first + #d.fields[k].slots end
  return first, first + #d.fields[i + 1].slots - 1
end
OPS.extract = function(self, v)
  local ad = self:vty(self:arg(v, 0))
  local src = self:v(self:arg(v, 0))
  local lo, hi = field_range(ad, tonumber(self:imm(v, 0)))
  local out = {}
  for k = lo, hi do out[#out + 1] = src[k] end
  self:set(v, out)
end
OPS.insert = function(self, v, d)
  local src = self:v(self:arg(v, 0))
  local x = self:v(self:arg(v, 1))
  local lo, hi = field_range(d, tonumber(self:imm(v, 0)))
  local out = {}
  for k = 1, #src do out[k] = src[k] end
  for k = lo, hi do out[k] = x[k - lo + 1] end
  self:set(v, out)
end
OPS.pack = function(self, v)
  local out = {}
  for i = 0, self:nargs(v) - 1 do for _, n in ipairs(self:v(self:arg(v, i))) do out[#out + 1] = n end end
  self:set(v, out)
end

-- tensor cores and async copies
OPS.mma = function(self, v, d)
  local shape = imm_name("M", self:imm(v, 0))
  local types = {}
  for i = 1, 4 do types[i] = imm_name("E", self:imm(v, i)) end
  local args = { string.format("%q, %q, %q, %q, %q", shape, types[1], types[2], types[3], types[4]) }
  local counts = {}
  for i = 0, 2 do
    local s = self:v(self:arg(v, i))
    counts[#counts + 1] = #s
  end
  args[#args + 1] = table.concat(counts, ", ")
  for i = 0, 2 do for _, n in ipairs(self:v(self:arg(v, i))) do args[#args + 1] = n end end
  self:set(v, self:yield(Y.MMA, self:site(v, "mma." .. shape, 0), table.concat(args, ", "), #d.slots))
end
OPS.ldmatrix = function(self, v, d)
  local pd = self:vty(self:arg(v, 0))
  local count = tonumber(self:imm(v, 0))
  local trans = bit.band(tonumber(self:imm(v, 1)), 4) ~= 0
  local site = self:site(v, "ldmatrix", 16)
  -- pipelined GEMMs load the next k-block's fragments ahead; the last such load is never used
  self.mc.sites[site].speculative = true
  self:set(v, self:yield(Y.LDMATRIX, site, string.format("%q, %s, %d, %s", pd.space,
    self:a(v, 0), count, tostring(trans)), #d.slots))
end
OPS.stmatrix = function(self, v)
  local pd = self:vty(self:arg(v, 0))
  local count = tonumber(self:imm(v, 0))
  local trans = bit.band(tonumber(self:imm(v, 1)), 4) ~= 0
  local regs = self:v(self:arg(v, 1))
  self:yield(Y.STMATRIX, self:site(v, "stmatrix", 16), string.format("%q, %s, %d, %s, %s", pd.space, self:a(v, 0),
    count, tostring(trans), table.concat(regs, ", ")), 0)
end
OPS["cp.async"] = function(self, v)
  local bytes = tonumber(self:imm(v, 0))
  local src_bytes = self:nargs(v) > 2 and self:a(v, 2) or tostring(bytes)
  local dd = self:vty(self:arg(v, 0))
  self:emit(string.format("%s(T, %q, %s, %s, %d, %s, %d)", self:helper("cp_async"), dd.space, self:a(v, 0),
    self:a(v, 1), bytes, src_bytes, self:site(v, "cp.async", bytes)))
end
OPS["cp.async.commit"] = function(self) self:emit(self:helper("cp_commit") .. "(T)") end
OPS["cp.async.wait"] = function(self, v)
  self:emit(string.format("%s(T, %d)", self:helper("cp_wait"), tonumber(self:imm(v, 0))))
end
OPS["wgmma.fence_operand"] = function(self, v) self:set(v, self:v(self:arg(v, 0))) end

-- ---------------------------------------------------------------------------
-- Hopper (sm_90a): cute.sim.hopper's helpers; the waits and warpgroup
-- collectives yield to the scheduler

function Fn:hop() self.mc.hopper = true end
local function sp(self, v, i) return string.format("%q", self:vty(self:arg(v, i)).space) end

OPS["mbarrier.init"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %s, %s, %d)", self:helper("mb_init"), sp(self, v, 0), self:a(v, 0), self:a(v, 1),
    self:site(v, "mbarrier.init", 8)))
end
OPS["mbarrier.arrive"] = function(self, v, d)
  self:hop()
  local n = self:nargs(v) > 1 and self:a(v, 1) or "1"
  local e = string.format("%s(%s, %s, %s, %d)", self:helper("mb_arrive"), sp(self, v, 0), self:a(v, 0), n,
    self:site(v, "mbarrier.arrive", 8))
  if d then self:def(v, e) else self:emit(e) end
end
OPS["mbarrier.arrive.expect_tx"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %s, %s, %d)", self:helper("mb_arrive_tx"), sp(self, v, 0), self:a(v, 0),
    self:a(v, 1), self:site(v, "mbarrier.arrive.expect_tx", 8)))
end
OPS["mbarrier.expect_tx"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %s, %s, %d)", self:helper("mb_expect_tx"), sp(self, v, 0), self:a(v, 0),
    self:a(v, 1), self:site(v, "mbarrier.expect_tx", 8)))
end
local function mb_wait(what)
  return function(self, v, d)
    self:hop()
    self.mc.sync = true
    local e = string.format("%s(%s, %s, %s, %d)", self:helper("mb_wait"), sp(self, v, 0), self:a(v, 0), self:a(v, 1),
      self:site(v, what, 8))
    if d then self:def(v, e) else self:emit(e) end
  end
end
OPS["mbarrier.try_wait"] = mb_wait("mbarrier.try_wait")
OPS["mbarrier.test_wait"] = mb_wait("mbarrier.test_wait")
OPS["mbarrier.wait"] = mb_wait("mbarrier.wait")
OPS["mbarrier.inval"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %s, %d)", self:helper("mb_inval"), sp(self, v, 0), self:a(v, 0),
    self:site(v, "mbarrier.inval", 8)))
end
local function nop(self) self:hop() end
for _, op in ipairs { "fence.mbarrier_init", "fence.proxy.async", "fence.proxy.async.shared",
  "fence.proxy.async.global", "wgmma.fence", "wgmma.commit", "wgmma.wait", "bulk.commit", "bulk.wait",
  "bulk.prefetch", "griddepcontrol.wait", "griddepcontrol.launch_dependents" } do
  OPS[op] = nop -- (griddepcontrol: the simulator runs a stream's kernels one after the other)
end
-- setmaxnreg: the count rules (24 to 256, a multiple of 8); registers are not modelled
local function setmaxnreg(self, v)
  self:hop()
  local n = tonumber(self:imm(v, 0))
  if n < 24 or n > 256 or n % 8 ~= 0 then
    err.raise("setmaxnreg %d at %s (kernel '%s'): the count must be 24 to 256, a multiple of 8", n, self:where(v),
      self.mc.kernel)
  end
end
OPS["setmaxnreg.inc"], OPS["setmaxnreg.dec"] = setmaxnreg, setmaxnreg

local function desc_arg(self, v, i) return "tonumber(" .. self:a(v, i) .. ")" end
local function coords(self, v, first, rank)
  local c = {}
  for i = 0, rank - 1 do c[#c + 1] = self:a(v, first + i) end
  return table.concat(c, ", ")
end
OPS["tma.load"] = function(self, v)
  self:hop()
  local rank = tonumber(self:imm(v, 0))
  self:emit(string.format("%s(%s, %s, %s, %s, %s, nil, %d, %s)", self:helper("tma_load"), desc_arg(self, v, 1),
    sp(self, v, 0), self:a(v, 0), sp(self, v, 2), self:a(v, 2), self:site(v, "tma.load", 0), coords(self, v, 3, rank)))
end
OPS["tma.load.multicast"] = function(self, v)
  self:hop()
  local rank = tonumber(self:imm(v, 0))
  self:emit(string.format("%s(%s, %s, %s, %s, %s, %s, %d, %s)", self:helper("tma_load"), desc_arg(self, v, 1),
    sp(self, v, 0), self:a(v, 0), sp(self, v, 2), self:a(v, 2), self:a(v, 3 + rank),
    self:site(v, "tma.load.multicast", 0), coords(self, v, 3, rank)))
end
OPS["tma.store"] = function(self, v)
  self:hop()
  local rank = tonumber(self:imm(v, 0))
  self:emit(string.format("%s(%s, %s, %s, nil, %d, %s)", self:helper("tma_store"), desc_arg(self, v, 0),
    sp(self, v, 1), self:a(v, 1), self:site(v, "tma.store", 0), coords(self, v, 2, rank)))
end
OPS["tma.reduce"] = function(self, v)
  self:hop()
  local rank = tonumber(self:imm(v, 0))
  local opn = imm_name("A", self:imm(v, 1))
  self:emit(string.format("%s(%s, %s, %s, %q, %d, %s)", self:helper("tma_store"), desc_arg(self, v, 0),
    sp(self, v, 1), self:a(v, 1), opn, self:site(v, "tma.reduce." .. opn, 0), coords(self, v, 2, rank)))
end
OPS["tma.prefetch"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %d)", self:helper("tma_check"), desc_arg(self, v, 0),
    self:site(v, "tma.prefetch", 0)))
end
OPS["tma.prefetch_desc"] = OPS["tma.prefetch"]
OPS["bulk.load"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %s, %s, %s, %s, %s, %d)", self:helper("bulk_load"), sp(self, v, 0), self:a(v, 0),
    self:a(v, 1), self:a(v, 2), sp(self, v, 3), self:a(v, 3), self:site(v, "bulk.load", 0)))
end
OPS["bulk.store"] = function(self, v)
  self:hop()
  self:emit(string.format("%s(%s, %s, %s, %s, %d)", self:helper("bulk_store"), self:a(v, 0), sp(self, v, 1),
    self:a(v, 1), self:a(v, 2), self:site(v, "bulk.store", 0)))
end

OPS["elect.sync"] = function(self, v, d)
  self:hop()
  self:set(v, self:yield(Y.ELECT, self:site(v, "elect.sync", 0), self:a(v, 0) .. ", " .. #d.slots, #d.slots))
end
OPS["barrier.cluster.arrive"] = function(self)
  self:hop()
  self.mc.sync = true
  self:emit(self:helper("cl_arrive") .. "(B, T)")
end
OPS["barrier.cluster.arrive.relaxed"] = OPS["barrier.cluster.arrive"]
OPS["barrier.cluster.wait"] = function(self, v)
  self:hop()
  self.mc.sync = true
  self:emit(string.format("%s(B, T, %d)", self:helper("cl_wait"), self:site(v, "barrier.cluster.wait", 0)))
end
OPS.mapa = function(self, v)
  self:hop()
  self:def(v, string.format("%s(%s, %s, %d)", self:helper("mapa"), self:a(v, 0), self:a(v, 1), self:site(v, "mapa", 0)))
end
OPS.getctarank = function(self, v)
  self:hop()
  self:def(v, string.format("%s(%s)", self:helper("ctarank"), self:a(v, 0)))
end

OPS["wgmma.mma_async"] = function(self, v, d)
  self:hop()
  local n = tonumber(self:imm(v, 0))
  local ta, tb, td = imm_name("E", self:imm(v, 1)), imm_name("E", self:imm(v, 2)), imm_name("E", self:imm(v, 3))
  local mode = tonumber(self:imm(v, 4))
  local a = self:v(self:arg(v, 0))
  local args = { tostring(n), string.format("%q", ta), string.format("%q", tb), string.format("%q", td), tostring(mode),
    tostring(#a) }
  for _, x in ipairs(a) do args[#args + 1] = x end
  args[#args + 1] = self:a(v, 1)
  args[#args + 1] = self:a(v, 3)
  -- the accumulator as one table (up to 128 values: too many for a call's registers)
  args[#args + 1] = "{" .. table.concat(self:v(self:arg(v, 2)), ", ") .. "}"
  self:set(v, self:yield(Y.WGMMA, self:site(v, "wgmma.mma_async", 0), table.concat(args, ", "), #d.slots))
end

-- Inline PTX: the few forms cutelua's own kernels and specs write by hand
-- (fences, a TMA load and its multicast form, mbarrier init / arrive.expect_tx / try_wait, a bulk
-- load); anything else is refused.
OPS.asm = function(self, v, d)
  local text = ffi.string(ir.str_get(self.m, tonumber(self:imm(v, 0))))
  local t = text:gsub("%s+", " ")
  if d and #d.slots == 0 then d = nil end
  local function opnd(k) -- operand $k (inputs follow the outputs)
    local nout = d and #d.slots or 0
    return self:a(v, k - nout)
  end
  local function sh(k) return string.format("%q, %s", "shared", opnd(k)) end
  if not d and (t:match("^ ?fence%.proxy%.async[%w:%.]*; ?$") or t:match("^ ?fence%.mbarrier_init[%w:%.]*; ?$")) then
    return nop(self)
  end
  local rank, rest = t:match("^ ?cp%.async%.bulk%.tensor%.(%d)d%.shared::cluster%.global%." ..
    "mbarrier::complete_tx::bytes (%[.*)$")
  if rank and not d then
    local dst, desc, cs, bar = rest:match("^%[%$(%d+)%], %[%$(%d+), {([^}]*)}%], %[%$(%d+)%]; ?$")
    if dst then
      local c = {}
      for k in cs:gmatch("%$(%d+)") do c[#c + 1] = opnd(tonumber(k)) end
      if #c == tonumber(rank) then
        self:hop()
        return self:emit(string.format("%s(tonumber(%s), %s, %s, nil, %d, %s)", self:helper("tma_load"),
          opnd(tonumber(desc)), sh(tonumber(dst)), sh(tonumber(bar)), self:site(v, "tma.load (inline PTX)", 0),
          table.concat(c, ", ")))
      end
    end
  end
  rank, rest = t:match("^ ?cp%.async%.bulk%.tensor%.(%d)d%.shared::cluster%.global%." ..
    "mbarrier::complete_tx::bytes%.multicast::cluster (%[.*)$")
  if rank and not d then
    local dst, desc, cs, bar, mk = rest:match("^%[%$(%d+)%], %[%$(%d+), {([^}]*)}%], %[%$(%d+)%], %$(%d+); ?$")
    if dst then
      local c = {}
      for k in cs:gmatch("%$(%d+)") do c[#c + 1] = opnd(tonumber(k)) end
      if #c == tonumber(rank) then
        self:hop()
        return self:emit(string.format("%s(tonumber(%s), %s, %s, %s, %d, %s)", self:helper("tma_load"),
          opnd(tonumber(desc)), sh(tonumber(dst)), sh(tonumber(bar)), opnd(tonumber(mk)),
          self:site(v, "tma.load.multicast (inline PTX)", 0), table.concat(c, ", ")))
      end
    end
  end
  local dst, src, n, bar = t:match("^ ?cp%.async%.bulk%.shared::cluster%.global%.mbarrier::complete_tx::bytes " ..
    "%[%$(%d+)%], %[%$(%d+)%], %$(%d+), %[%$(%d+)%]; ?$")
  if dst and not d then
    self:hop()
    return self:emit(string.format("%s(%s, tonumber(%s), %s, %s, %d)", self:helper("bulk_load"), sh(tonumber(dst)),
      opnd(tonumber(src)), opnd(tonumber(n)), sh(tonumber(bar)), self:site(v, "bulk.load (inline PTX)", 0)))
  end
  local mask
  dst, src, n, bar, mask = t:match("^ ?cp%.async%.bulk%.shared::cluster%.global%.mbarrier::complete_tx::bytes" ..
    "%.multicast::cluster %[%$(%d+)%], %[%$(%d+)%], %$(%d+), %[%$(%d+)%], %$(%d+); ?$")
  if dst and not d then
    self:hop()
    return self:emit(string.format("%s(%s, tonumber(%s), %s, %s, %d, %s)", self:helper("bulk_load"),
      sh(tonumber(dst)), opnd(tonumber(src)), opnd(tonumber(n)), sh(tonumber(bar)),
      self:site(v, "bulk.load.multicast (inline PTX)", 0), opnd(tonumber(mask))))
  end
  local b, cnt = t:match("^ ?mbarrier%.init%.shared::cta%.b64 %[%$(%d+)%], (%d+); ?$")
  if b and not d then
    self:hop()
    return self:emit(string.format("%s(%s, %s, %d)", self:helper("mb_init"), sh(tonumber(b)), cnt,
      self:site(v, "mbarrier.init (inline PTX)", 8)))
  end
  b, cnt = t:match("^ ?mbarrier%.arrive%.expect_tx%.shared::cta%.b64 _, %[%$(%d+)%], (%d+); ?$")
  if b and not d then
    self:hop()
    return self:emit(string.format("%s(%s, %s, %d)", self:helper("mb_arrive_tx"), sh(tonumber(b)), cnt,
      self:site(v, "mbarrier.arrive.expect_tx (inline PTX)", 8)))
  end
  local par
  b, par = t:match("mbarrier%.try_wait%.parity%.shared::cta%.b64 %w+, %[%$(%d+)%], (%d+);")
  if b and d and #d.slots == 1 and (t:match("selp%.[bsu]32 %$0, 1, 0, %w+;") or t:match("selp%.[bsu]32 %$0, 1, 0")) then
    self:hop()
    self.mc.sync = true
    local r = string.format("%s(%s, %s, %d)", self:helper("mb_wait"), sh(tonumber(b)), par,
      self:site(v, "mbarrier.try_wait (inline PTX)", 8))
    return self:def(v, d.slots[1] == "i1" and r or ("(" .. r .. " and 1 or 0)"))
  end
  self:unsupported(v, "inline PTX ('" .. text:sub(1, 80) .. "')")
end

-- ---------------------------------------------------------------------------
-- The walk: prologue, then the body in program order with its regions

local HOIST = { const = true, undef = true, param = true, smem = true, ["smem.dyn"] = true }

function Fn:prepass()
  -- uses (for contraction), blocks, variables indexed by a value
  local uses, user, block = {}, {}, {}
  self.nonselect = {}
  local users = {} -- ref -> { {user, operand index}, ... }
  local dyn = {}
  local blk, stack, nblk = 0, {}, 0
  for v = 1, self.ninst do
    local op = self:op(v)
    if op == "for" or op == "if" or op == "while" then
      stack[#stack + 1] = blk
      nblk = nblk + 1
      blk = nblk
    elseif op == "else" or op == "while.cond" then
      nblk = nblk + 1
      blk = nblk
    elseif op == "end" then
      blk = table.remove(stack) or 0
    end
    block[v] = blk
    if op == "var.loadx" or op == "var.storex" then dyn[tonumber(self:imm(v, 0))] = true end
    for i = 0, self:nargs(v) - 1 do
      local a = self:arg(v, i)
      uses[a] = (uses[a] or 0) + 1
      user[a] = v
      users[a] = users[a] or {}
      users[a][#users[a] + 1] = { v, i, op }
    end
  end
  -- a load whose value only a select may pick (cute.where(c, smem[i], x)), or that only goes into
  -- registers (a local variable: a pipelined loop's fragments, loaded ahead), converted or packed on
  -- the way, is speculative: the uninitialised-read check skips it
  local PASS = { cvt = true, cvtu = true, bitcast = true, pack = true, insert = true, extract = true }
  local memo = {}
  local function kept_only(ref, depth)
    if memo[ref] ~= nil then return memo[ref] end
    if depth > 8 then return false end
    local ok = true
    for _, u in ipairs(users[ref] or {}) do
      local uv, i, op = u[1], u[2], u[3]
      local kept = (op == "select" and i > 0) or ((op == "var.store" or op == "var.storev") and i == 0) or
        (op == "var.storex" and i == 1) or (PASS[op] and kept_only(uv, depth + 1))
      if not kept then
        ok = false
        break
      end
    end
    memo[ref] = ok
    return ok
  end
  for v = 1, self.ninst do
    if self:op(v) == "load" and not kept_only(v, 0) then self.nonselect[v] = true end
  end
  self.dynvars = dyn
  self.deferred = {}
  self.fusable = {}
  for v = 1, self.ninst do
    if self:op(v) == "mul" and uses[v] == 1 then
      local u = user[v]
      local uop = self:op(u)
      if (uop == "add" or uop == "sub") and block[u] == block[v] and
        ir.value_type(self.f, u) == ir.value_type(self.f, v) then
        self.fusable[v] = true
      end
    end
  end
end

local i64o, dblo = ffi.new("int64_t[1]"), ffi.new("double[1]")

function Fn:prologue()
  local mc = self.mc
  for v = 1, self.ninst do
    local op = self:op(v)
    if HOIST[op] then
      local d = self:vty(v)
      if op == "const" then
        ir.const_value(self.f, v, i64o, dblo)
        if d.kind == "float" then
          self:set(v, { num_lit(dblo[0]) })
        else
          self:set(v, { int_lit(i64o[0], d.bits) })
        end
      elseif op == "undef" then
        local z = {}
        for i, s in ipairs(d.slots) do z[i] = zero_of(s) end
        self:set(v, z)
      elseif op == "param" then
        local idx = tonumber(self:imm(v, 0))
        if tonumber(self:imm(v, 1)) ~= 0 and not self.kernel then
          self:unsupported(v, "a by-value blob parameter of a device function")
        end
        if tonumber(self:imm(v, 1)) ~= 0 then -- a TMA descriptor: the host address of its 128 bytes
          self:def(v, "P[" .. (idx + 1) .. "]")
          mc.params[idx + 1] = { slots = { "ptr" }, blob = true }
        elseif self.kernel then
          self:def(v, "P[" .. (idx + 1) .. "]")
          mc.params[idx + 1] = d
        else
          local first = self.argslot[idx + 1]
          local names = {}
          for k = 1, #d.slots do
            names[k] = "a" .. (first + k - 1)
            if self.big then -- the segments see R, not the arguments
              self.nspill = self.nspill + 1
              self:ctl(string.format("R[%d] = %s", self.nspill, names[k]))
              names[k] = "R[" .. self.nspill .. "]"
            end
          end
          self:set(v, names)
        end
      elseif op == "smem" then
        local bytes, align = tonumber(self:imm(v, 0)), math.max(tonumber(self:imm(v, 1)), 1)
        local off = math.ceil(mc.smem / align) * align
        mc.smem = off + bytes
        self:set(v, { tostring(off) })
      else -- smem.dyn: after the static arrays (aligned); its offset is known at launch
        local align = math.max(tonumber(self:imm(v, 0)), 16)
        mc.dyn_align = math.max(mc.dyn_align, align)
        self:set(v, { "B.dyn_base" })
      end
    end
  end
  -- local variables
  for id = 1, ir.var_count(self.f) do
    local x = self:var(id)
    if x.table then
      self:emit(string.format("%s%s = {}", self.big and "" or "local ", x.table))
      self.nloc = self.nloc + 1
      local z = {}
      for s, slot in ipairs(x.d.slots) do z[s] = zero_of(slot) end
      self:emit(string.format("for i = 0, %d do %s end", x.count - 1,
        table.concat((function()
          local parts = {}
          for s = 1, x.ns do parts[s] = string.format("%s[i * %d + %d] = %s", x.table, x.ns, s, z[s]) end
          return parts
        end)(), "; ")))
    else
      for idx = 0, x.count - 1 do
        for s, slot in ipairs(x.d.slots) do x.names[idx * x.ns + s] = self:bind(zero_of(slot)) end
      end
    end
  end
end

function Fn:body()
  local stack = {} -- open constructs: { kind =, id = }
  local v = 1
  while v <= self.ninst do
    local op = self:op(v)
    if HOIST[op] then -- done in the prologue
      v = v + 1
    elseif op == "for" then
      self.uid = self.uid + 1
      local id = self.uid
      local lo, hi, st = self:a(v, 0), self:a(v, 1), self:a(v, 2)
      local ivref = v + 1
      local d = self:vty(ivref)
      self:open_block("do")
      local iv, hiv, stv_name = "iv" .. id, "hi" .. id, "st" .. id
      if self.big then -- in R: the segments read them
        iv, hiv, stv_name = "R[" .. (self.nspill + 1) .. "]", "R[" .. (self.nspill + 2) .. "]",
          "R[" .. (self.nspill + 3) .. "]"
        self.nspill = self.nspill + 3
        self:ctl(string.format("%s, %s, %s = %s, %s, %s", iv, hiv, stv_name, lo, hi, st))
      else
        self:ctl(string.format("local %s, %s, %s = %s, %s, %s", iv, hiv, stv_name, lo, hi, st))
      end
      self.nloc = self.nloc + 3
      self:set(ivref, { iv })
      local cond
      local stv = tonumber(st:match("^%-?%d+$") or (st:match("^(%-?%d+)LL$")))
      if stv and stv > 0 then
        cond = string.format("%s < %s", iv, hiv)
      elseif stv and stv < 0 then
        cond = string.format("%s > %s", iv, hiv)
      else
        cond = string.format("(%s > 0 and %s < %s) or (%s < 0 and %s > %s)", stv_name, iv, hiv, stv_name, iv, hiv)
      end
      self:open_block("while " .. cond .. " do")
      self:open_block("do")
      stack[#stack + 1] = { kind = "for", id = id, iv = iv, bits = d.bits, st = stv_name }
      self.loops[#self.loops + 1] = id
      v = v + 2
    elseif op == "if" then
      self:open_block("if " .. self:a(v, 0) .. " then")
      stack[#stack + 1] = { kind = "if" }
      v = v + 1
    elseif op == "else" then
      self:close_block()
      self:open_block("else")
      v = v + 1
    elseif op == "while" then
      self.uid = self.uid + 1
      local id = self.uid
      self:open_block("while true do")
      self:open_block("do")
      stack[#stack + 1] = { kind = "while", id = id }
      self.loops[#self.loops + 1] = id
      v = v + 1
    elseif op == "while.cond" then
      self:ctl("if not " .. self:a(v, 0) .. " then break end")
      v = v + 1
    elseif op == "end" then
      local top = table.remove(stack)
      if top.kind == "if" then
        self:close_block("end")
      elseif top.kind == "for" then
        table.remove(self.loops)
        self:close_block("end")
        self:ctl(string.format("::c%d::", top.id))
        if top.bits == 64 then
          self:ctl(string.format("%s = %s + %s", top.iv, top.iv, top.st))
        else
          self:ctl(string.format("%s = %s(%s + %s)", top.iv, self:helper("tobit"), top.iv, top.st))
        end
        self:close_block("end")
        self:close_block("end")
      else
        table.remove(self.loops)
        self:close_block("end")
        self:ctl(string.format("::c%d::", top.id))
        self:close_block("end")
      end
      v = v + 1
    elseif op == "break" then
      self:ctl("do break end")
      v = v + 1
    elseif op == "continue" then
      self:ctl("goto c" .. self.loops[#self.loops])
      v = v + 1
    elseif op == "ret" then
      if self:nargs(v) > 0 then
        self:ctl("do return " .. table.concat(self:v(self:arg(v, 0)), ", ") .. " end")
      else
        self:ctl("do return end")
      end
      v = v + 1
    else
      local emitter = OPS[op]
      if not emitter then self:unsupported(v) end
      local t = ir.value_type(self.f, v)
      emitter(self, v, t ~= 0 and self:ty(t) or nil)
      v = v + 1
    end
  end
end

function Fn:compile(is_kernel, big)
  self.kernel = is_kernel
  self.big, self.seg = big, {}
  local header
  if is_kernel then
    header = "function(P, B, T)"
  else
    -- device function: its parameters' slots as a1..an
    local slots, k = {}, 0
    self.argslot = {}
    local params = {}
    for v = 1, self.ninst do
      if self:op(v) == "param" then params[tonumber(self:imm(v, 0)) + 1] = self:vty(v) end
    end
    for i, d in ipairs(params) do
      self.argslot[i] = k + 1
      for _ = 1, #d.slots do
        k = k + 1
        slots[#slots + 1] = "a" .. k
      end
    end
    header = "function(P, B, T" .. (#slots > 0 and (", " .. table.concat(slots, ", ")) or "") .. ")"
    self.nloc = k
  end
  self:prepass()
  self:ctl("local R = {}")
  self:ctl("local SB = " .. self:helper("smem_base") .. "()")
  self.nloc = self.nloc + 2
  if big then self.nloc = LOCAL_LIMIT end -- every value in R
  self:prologue()
  self:body()
  self:flush()
  if self.nspill == 0 then self.out[1] = "" end -- no spill table: no allocation per thread
  return header .. "\n" .. table.concat(self.out, "\n") .. "\nend"
end

-- ---------------------------------------------------------------------------
-- A module's kernel (and the device functions it calls) as one Lua chunk

local compile_as

-- C.big = true compiles every kernel in the big form (for tests).
C.big = false

--- Compiles the kernel of a traced module: returns { fn = the kernel's Lua
-- function, sync = whether it yields (barriers, warp collectives), sites,
-- params (the types of its parameters), smem (static bytes), dyn_align,
-- source }.
function C.compile(m, kernel_name, helpers)
  local r, e = compile_as(m, kernel_name, helpers, C.big)
  -- past LuaJIT's limits (a jump over 32767 instructions, 65536 constants): the big form
  if not r and (e:match("control structure too long") or e:match("too many")) then
    r, e = compile_as(m, kernel_name, helpers, true)
  end
  if not r then err.raise("the simulator could not compile kernel '%s' to Lua: %s", kernel_name, tostring(e)) end
  return r
end

compile_as = function(m, kernel_name, helpers, big)
  local mc = { m = m, kernel = kernel_name, types = {}, helpers = {}, helper_order = {}, nhelpers = 0, sites = {},
    params = {}, smem = 0, dyn_align = 16, called = {}, sync = false, segs = {}, nseg = 0 }
  local nf = ir.func_count(m)
  local kidx
  for i = 0, nf - 1 do
    local f = ir.func_at(m, i)
    if ffi.string(ir.func_name(f)) == kernel_name then kidx = i end
  end
  kidx = kidx or 0
  local bodies = {}
  local ks = new_fn(mc, ir.func_at(m, kidx), kidx):compile(true, big)
  -- device functions, as called (each compiled once)
  local done = { [kidx] = true }
  local progress = true
  while progress do
    progress = false
    for idx in pairs(mc.called) do
      if not done[idx] then
        done[idx] = true
        progress = true
        bodies[#bodies + 1] = { idx = idx, src = new_fn(mc, ir.func_at(m, idx), idx):compile(false, big) }
      end
    end
  end
  local lines = { "local H = ..." }
  for _, name in ipairs(mc.helper_order) do
    if mc.helpers[name] == name then lines[#lines + 1] = string.format("local %s = H.%s", name, name) end
  end
  if big then lines[#lines + 1] = "local SEG = {}" end
  if #bodies > 0 then
    local fnames = {}
    for _, b in ipairs(bodies) do fnames[#fnames + 1] = "F" .. b.idx end
    lines[#lines + 1] = "local " .. table.concat(fnames, ", ")
    for _, b in ipairs(bodies) do lines[#lines + 1] = "F" .. b.idx .. " = " .. b.src end
  end
  for _, sg in ipairs(mc.segs) do lines[#lines + 1] = sg end
  lines[#lines + 1] = "return " .. ks
  local src = table.concat(lines, "\n")
  local chunk, e = loadstring(src, "=(simulated kernel " .. kernel_name .. ")")
  if not chunk then return nil, tostring(e) end
  for name in pairs(mc.helpers) do
    if helpers[name] == nil then err.raise("simulator: no helper '%s' (kernel '%s')", name, kernel_name) end
  end
  return { fn = chunk(helpers), sync = mc.sync, hopper = mc.hopper, sites = mc.sites, params = mc.params,
    smem = mc.smem,
    dyn_align = mc.dyn_align, source = src }
end

return C
