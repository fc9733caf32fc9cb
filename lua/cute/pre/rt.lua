--- cute.pre.rt: what a preprocessed kernel body calls (cute.pre.rewrite
-- writes the calls). Each construct is decided when the body is traced: on
-- Lua values it runs as plain Lua (metaprogramming: `if stages > 2` picks
-- code, `for i = 1, 4` unrolls); on a run-time value it becomes a region of
-- the IR through cute.if_, cute.range and cute.while_.
--
-- Region functions take the carried locals (those the construct assigns)
-- and return status, payload, carried...: status nil (the end was reached),
-- 1 (`return`, payload = the packed values), 2 (`break`), 3 (`goto
-- continue`). In a run-time region a carried local lives in a cute.var: its
-- type is the type of its value, or, for a Lua number or boolean that the
-- region changes, the type of the run-time value the region gives it (found
-- by tracing the region once more in a branch that never runs; a Lua number
-- that stays a Lua number is an f32 when a float literal was given to the
-- local or it is not whole, else an i32).
local core = require "cute.trace.core"
local control = require "cute.trace.control"
local ops = require "cute.trace.ops"
local err = require "cute._err"

local M = {}

local is_value, type_of = core.is_value, core.type_of

local function is_bool(x) return is_value(x) and type_of(x).kind == "bool" end

-- "an f32", "a u8"
local function an(name) return (name:match("^[aefio]") and "an " or "a ") .. name end

local function describe(x)
  if is_value(x) then return an(type_of(x).name) .. " value" end
  return core.describe(x)
end

-- ---------------------------------------------------------------------------
-- Values: pack/unpack, comparisons, logic

--- The values as a table with their count in n.
function M.pack(...) return { n = select("#", ...), ... } end
--- The values of a M.pack table.
function M.unpack(t) return unpack(t, 1, t.n) end

local function lua_lt(a, b) return a < b end
local function lua_le(a, b) return a <= b end

-- a Lua comparison of non-values: Lua's own error, at the user's line
local function lua_compare(f, a, b)
  local ok, r = pcall(f, a, b)
  if not ok then err.raise("%s", (tostring(r):gsub("^[^:]*:%d+: ", ""))) end
  return r
end

local function ordered(method, swapped, lua_f, flip)
  return function(a, b)
    local ta, tb = type(a), type(b)
    if (ta == "number" and tb == "number") or (ta == "string" and tb == "string") then
      if flip then return lua_f(b, a) end
      return lua_f(a, b)
    end
    if is_value(a) then
      if is_value(b) or tb == "number" then return a[method](a, b) end
    elseif is_value(b) and ta == "number" then
      return b[swapped](b, a)
    end
    if flip then return lua_compare(lua_f, b, a) end
    return lua_compare(lua_f, a, b)
  end
end

--- a < b, a <= b, a > b, a >= b: Lua's on Lua values, a bool value when one side is a run-time value.
M.lt = ordered("lt", "gt", lua_lt, false)
M.le = ordered("le", "ge", lua_le, false)
M.gt = ordered("gt", "lt", lua_lt, true)
M.ge = ordered("ge", "le", lua_le, true)

--- a == b: a bool value when one side is a run-time value and the other a
-- value or a number; otherwise Lua's ==.
function M.eq(a, b)
  if is_value(a) then
    if is_value(b) or type(b) == "number" then return a:eq(b) end
    return false
  elseif is_value(b) then
    if type(a) == "number" then return b:eq(a) end
    return false
  end
  return a == b
end

--- a ~= b, as M.eq.
function M.ne(a, b)
  if is_value(a) then
    if is_value(b) or type(b) == "number" then return a:ne(b) end
    return true
  elseif is_value(b) then
    if type(a) == "number" then return b:ne(a) end
    return true
  end
  return a ~= b
end

-- `c and x` with a run-time condition c and a non-boolean x: the first half
-- of `c and x or y`, which M.or_ turns into cute.where(c, x, y).
local Select = {}
local function select_misuse()
  err.raise("`c and x` with a run-time condition c (a bool value) chooses between values only as `c and x or y` "
    .. "(cute.where(c, x, y)); give the `or y`")
end
Select.__index = function() select_misuse() end
for _, mm in ipairs { "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__concat", "__call", "__lt",
  "__le", "__len" } do Select[mm] = select_misuse end
local function is_select(x) return getmetatable(x) == Select end

local function and_value(a, b)
  if is_bool(b) or type(b) == "boolean" then return ops.and_(a, b) end
  if is_select(b) then select_misuse() end
  return setmetatable({ c = a, v = b }, Select)
end

local function or_value(a, b)
  if is_select(a) then
    local x = rawget(a, "v")
    if type(x) == "number" and type(b) == "number" then
      err.raise("`c and %s or %s` with a run-time condition c chooses between two Lua numbers, whose type is not "
        .. "known: make one a value of its type, e.g. cute.to(%s, cute.f32)", core.show_number(x),
        core.show_number(b), core.show_number(x))
    end
    return ops.where(rawget(a, "c"), x, b)
  end
  if is_bool(b) or type(b) == "boolean" then return ops.or_(a, b) end
  err.raise("`c or x` with a run-time condition c (a bool value) and a %s x: use cute.where(c, ..., x) to choose "
    .. "between values", is_value(b) and (type_of(b).name .. " value") or type(b))
end

--- a and b: cute.and_ when a is a bool value; a Lua `and` otherwise.
function M.and_(a, b)
  if is_bool(a) then return and_value(a, b) end
  return a and b
end
--- a and f(): the same with b evaluated only when Lua would.
function M.and_f(a, f)
  if is_bool(a) then return and_value(a, (f())) end
  if a then return (f()) end
  return a
end
--- a or b: cute.or_ when a is a bool value; a Lua `or` otherwise.
function M.or_(a, b)
  if is_bool(a) or is_select(a) then return or_value(a, b) end
  return a or b
end
--- a or f().
function M.or_f(a, f)
  if is_bool(a) or is_select(a) then return or_value(a, (f())) end
  if a then return a end
  return (f())
end

--- not a: cute.not_ on a bool value.
function M.not_(a)
  if is_value(a) then
    if is_bool(a) then return ops.not_(a) end
    err.raise("`not x` on %s value is false to Lua whatever x is on the GPU: compare it (x == 0)", an(type_of(a).name))
  end
  if is_select(a) then select_misuse() end
  return not a
end

-- ---------------------------------------------------------------------------
-- Conditions

-- A condition: true/false (decided now) or a bool value (decided on the GPU).
local function condition(c, what, line)
  if is_value(c) then
    if type_of(c).kind == "bool" then return c end
    err.raise("the condition of the %s at line %d is %s value, which Lua takes as true whatever it is on the GPU: "
      .. "compare it (x ~= 0)", what, line, an(type_of(c).name))
  end
  if is_select(c) then select_misuse() end
  return c and true or false
end

-- ---------------------------------------------------------------------------
-- Carried locals

-- "a,b.": the names of the carried locals; "." marks one given a float
-- literal (an f32 when it holds Lua numbers only)
local names_cache = {}
local function split(names)
  local t = names_cache[names]
  if not t then
    t = { float = {} }
    for n in names:gmatch("[^,]+") do
      t[#t + 1] = n:gsub("%.$", "")
      t.float[#t] = n:sub(-1) == "."
    end
    names_cache[names] = t
  end
  return t
end

-- The loops being run (plain and dynamic) in the trace in progress,
-- innermost last: {dynamic, line, st}. Kept in the trace's record, so that a
-- trace abandoned by an error leaves nothing behind.
local outside = {}
local function loop_stack()
  local T = core.current()
  if not T then return outside end
  local s = T.pre_loops
  if not s then
    s = {}
    T.pre_loops = s
  end
  return s
end

local function lua_type(x, float)
  if type(x) == "boolean" then return core.bool end
  if float or x ~= x or x == math.huge or x == -math.huge then return core.f32 end
  if x == math.floor(x) and x >= -2 ^ 31 and x < 2 ^ 31 then return core.i32 end
  if x == math.floor(x) then return core.i64 end
  return core.f32
end

-- What each carried local needs in a run-time region: kinds[i] = "value"
-- (a run-time value: a cute.var of its type), "scalar" (a Lua number or
-- boolean: typed by a probe) or "ref" (anything else: must not change).
local function classify(n, c)
  local kinds, scalar = {}, false
  for i = 1, n do
    local x = c[i]
    if is_value(x) then
      kinds[i] = "value"
    elseif type(x) == "number" or type(x) == "boolean" then
      kinds[i] = "scalar"
      scalar = true
    elseif x == nil then
      kinds[i] = "nil" -- `local w` set in every branch of an if: typed by the probe
      scalar = true
    else
      kinds[i] = "ref"
    end
  end
  return kinds, scalar
end


-- Records (probe) or checks the value r that a region gives carried local i.
-- st: {names, kinds, types, entry, line, what, probe}
local function note(st, i, r)
  local kind = st.kinds[i]
  if kind == "nil" then
    if r == nil then
      st.nil_out[i] = true
      return
    end
    if st.loop then kind = "ref" end -- a loop may run no iteration: the local would stay nil
  end
  if kind == "ref" then
    if not rawequal(r, st.entry[i]) then
      err.raise("local '%s' is set to %s in the %s at line %d, which is decided on the GPU: only numbers, booleans "
        .. "and run-time values can change there (it was %s%s)", st.names[i], describe(r), st.what, st.line,
        describe(st.entry[i]), st.entry[i] == nil and "; give it a first value of its type, e.g. 0" or "")
    end
    return
  end
  if is_value(r) then
    local t = type_of(r)
    if t.kind == "ptr" or t.kind == "vec" or t.kind == "struct" then
      err.raise("local '%s' is set to a %s in the %s at line %d: only scalar values can be carried out of a region",
        st.names[i], t.name, st.what, st.line)
    end
    local have = st.types[i]
    if have and have ~= t then
      local where = st.first[i] == "before" and string.format("before the %s at line %d and %s value in it",
        st.what, st.line, an(t.name)) or string.format("in one branch of the %s at line %d and %s value in another",
        st.what, st.line, an(t.name))
      err.raise("local '%s' is %s value %s: the types must agree (convert one: %s:to(cute.%s))", st.names[i],
        an(have.name), where, st.names[i], have.name)
    end
    if not have then
      st.types[i] = t
      st.first[i] = "in"
    end
  elseif type(r) == "number" or type(r) == "boolean" then
    if type(st.entry[i]) ~= type(r) and st.kinds[i] == "scalar" then
      err.raise("local '%s' is %s before the %s at line %d and %s in it: the types must agree", st.names[i],
        describe(st.entry[i]), st.what, st.line, describe(r))
    end
    if st.probe and r ~= st.entry[i] then st.changed[i] = true end
    if st.sample[i] == nil then st.sample[i] = r end
  else
    err.raise("local '%s' is set to %s in the %s at line %d, which is decided on the GPU: only numbers, booleans and "
      .. "run-time values can change there", st.names[i], describe(r), st.what, st.line)
  end
end

local function state(names, n, c, line, what)
  local kinds, scalar = classify(n, c)
  local st = { names = split(names), kinds = kinds, types = {}, first = {}, entry = c, line = line, what = what,
    changed = {}, vars = {}, n = n, nil_out = {}, sample = {}, loop = what ~= "if" }
  for i = 1, n do
    if kinds[i] == "value" then
      st.types[i] = type_of(c[i])
      st.first[i] = "before"
    end
  end
  return st, scalar
end

-- Inside a probe (> 0), run-time constructs are traced once, without
-- probes of their own: what they give their locals is typed, not stored, so
-- that nested ifs and loops cost two traces in all, not two at each level.
-- Kept in the trace's record (T.pre_probing), so that a trace abandoned by
-- an error inside a probe leaves nothing behind.
local function probing(T) return (T or core.current()).pre_probing or 0 end

-- Runs fn inside a branch that never runs (if false): its types are learnt,
-- its ops are dead code the optimiser removes. (What fn does to Lua state is
-- done twice: shared memory it carves is given back here.)
local function in_dead_branch(fn)
  local T = core.current()
  local ir = core.ir()
  core.update_loc()
  if ir.if_begin(T.f, core.use(core.const(core.bool, false))) ~= 0 then core.ir_error("preprocessor probe") end
  core.push_region("if")
  -- shared memory carved in the probe is given back: the real trace carves it again
  local smem, dyn, alloc = T.smem_bytes, T.dyn_smem, T.dyn_smem_alloc
  local offset, base = alloc and alloc.offset, alloc and alloc.base
  T.pre_probing = probing(T) + 1
  fn()
  T.pre_probing = T.pre_probing - 1
  T.smem_bytes, T.dyn_smem = smem, dyn
  if alloc then
    alloc.offset, alloc.base = offset, base
  elseif T.dyn_smem_alloc then
    T.dyn_smem_alloc = nil
  end
  core.update_loc()
  if ir.region_end(T.f) ~= 0 then core.ir_error("preprocessor probe") end
  core.pop_region()
end

-- The vars of a run-time region: one per carried local that is or becomes a
-- run-time value, initialised with its value on entry.
local function make_vars(st)
  for i = 1, st.n do
    local kind = st.kinds[i]
    if kind == "value" or (kind == "scalar" and (st.types[i] or st.changed[i])) then
      local t = st.types[i] or lua_type(st.entry[i], st.names.float[i])
      st.types[i] = t
      st.vars[i] = control.var(t.dtype, st.entry[i])
    elseif kind == "nil" and (st.types[i] or st.sample[i] ~= nil) then
      if st.nil_out[i] then
        err.raise("local '%s' is nil before the if at line %d and set in some of its branches only: after an if "
          .. "decided on the GPU it must have a value either way (give it a first value, or set it in every branch)",
          st.names[i], st.line)
      end
      local t = st.types[i] or lua_type(st.sample[i], st.names.float[i])
      st.types[i] = t
      st.vars[i] = control.var(t.dtype) -- every branch stores it
    end
  end
end

-- Stores the carried values r[1..n] (given after the status) into the vars.
local function store(st, r)
  if core.current().dead then return end
  for i = 1, st.n do
    note(st, i, r[i])
    local v = st.vars[i]
    if v then v.value = r[i] end
  end
end

-- What a probed region gives its locals: a value of the type learnt (read
-- from a variable never stored: dead code), or the value on entry.
local function probe_results(st)
  local out = {}
  for i = 1, st.n do
    local t = st.types[i]
    if t and st.kinds[i] ~= "value" then out[i] = control.var(t.dtype).value else out[i] = st.entry[i] end
  end
  return out
end

-- The values of the carried locals after the region.
local function results(st)
  local out = {}
  for i = 1, st.n do
    if st.vars[i] then out[i] = st.vars[i].value else out[i] = st.entry[i] end
  end
  return out
end

-- A status that reaches a run-time region: becomes cute.return_, or (with
-- the loop's carried values stored) cute.break_ / cute.continue_.
local function escape(st, s, p, r, at_loop_end)
  if s == 4 or (s == 1 and (core.current().pre_inline or 0) > 0) then
    err.raise("`return` inside the %s at line %d, which is decided on the GPU, would leave a Lua function that runs "
      .. "inside the kernel's code (inlined): make it a cute.func, a device function where return works, or set a "
      .. "local in the %s and return it after", st.what, st.line, st.what)
  end
  if s == 1 then
    control.return_(p and p[1])
    return
  end
  local loops = loop_stack()
  local L = loops[#loops]
  if not L or not L.dynamic then
    err.raise("`%s` inside the %s at line %d, which is decided on the GPU, would leave the loop at line %d, which "
      .. "runs when the kernel is traced (its bounds are Lua values): make that loop a run-time one "
      .. "(cute.range, cute.dynamic(n))", s == 2 and "break" or "goto continue", st.what, st.line, L and L.line or 0)
  end
  if core.current().dead then return end
  -- store the loop's carried values, found by name among this region's
  if L.st == st then
    store(st, r)
  else
    for j = 1, L.st.n do
      local v = L.st.vars[j]
      if v then
        for i = 1, st.n do
          if st.names[i] == L.st.names[j] then
            note(L.st, j, r[i])
            v.value = r[i]
          end
        end
      end
    end
  end
  if s == 2 then
    control.break_()
  elseif not at_loop_end then
    control.continue_()
  end
end

-- Calls region function f with the carried values (and extra arguments) and
-- returns status, payload and the carried values as a table.
local function call_region(body, n, c, ...)
  local args = { unpack(c, 1, n) }
  local extra = select("#", ...)
  for j = 1, extra do args[n + j] = (select(j, ...)) end
  local r = { body(unpack(args, 1, n + extra)) }
  local s, p = r[1], r[2]
  local out = {}
  for i = 1, n do out[i] = r[i + 2] end
  return s, p, out
end

-- ---------------------------------------------------------------------------
-- if

local function dyn_if(st, cond, then_fn, else_fn, probe)
  st.probe = probe
  local function branch(f)
    return function()
      local s, p, r = call_region(f, st.n, st.entry)
      if s then escape(st, s, p, r) else store(st, r) end
    end
  end
  if not probe then make_vars(st) end
  control.if_(cond, branch(then_fn), else_fn and branch(else_fn))
end

local function run_if(line, names, n, cond, then_fn, else_fn, ...)
  local c = cond
  c = condition(c, "if", line)
  if type(c) == "boolean" then
    local f = c and then_fn or else_fn
    if not f then return nil, nil, ... end
    return f(...)
  end
  local entry = { ... }
  local st, scalar = state(names, n, entry, line, "if")
  if probing() > 0 then
    dyn_if(st, c, then_fn, else_fn, true)
    return nil, nil, unpack(probe_results(st), 1, n)
  end
  if scalar then
    local pst = state(names, n, entry, line, "if")
    in_dead_branch(function() dyn_if(pst, c, then_fn, else_fn, true) end)
    st.types, st.changed, st.nil_out, st.sample = pst.types, pst.changed, pst.nil_out, pst.sample
    st.probe = false
    if not else_fn then
      -- no else: a local nil before the if stays nil when the condition is false
      for i = 1, n do if st.kinds[i] == "nil" then st.nil_out[i] = true end end
    end
  end
  dyn_if(st, c, then_fn, else_fn, false)
  return nil, nil, unpack(results(st), 1, n)
end

local function tail(_, _, ...) return ... end

--- if cond then ... else ... end (see the module's comment); the x form
-- returns the status and payload first.
function M.ifx(...) return run_if(...) end
function M.if_(...) return tail(run_if(...)) end

-- ---------------------------------------------------------------------------
-- Loops

-- A plain Lua loop's iterations: step(c) returns status, payload, carried
-- (as a table) or false when the loop is over.
local function plain_loop(line, n, c, next_iter)
  local loops = loop_stack()
  loops[#loops + 1] = { dynamic = false, line = line }
  local s, p
  while true do
    local r
    s, p, r = next_iter(c)
    if s == false then
      s = nil
      break
    end
    if s == 1 or s == 4 then
      c = r
      break
    end
    c = r
    if s == 2 then
      s = nil
      break
    end
  end
  table.remove(loops)
  return s, p, unpack(c, 1, n)
end

-- A run-time loop: open(body) opens it and calls body(extra...) inside.
local function dyn_loop(line, names, n, c, what, open, body_fn, extra_of)
  local function run(st, probe)
    st.probe = probe
    if not probe then make_vars(st) end
    local loops = loop_stack()
    loops[#loops + 1] = { dynamic = true, line = line, st = st }
    open(function(...)
      local cur = {}
      for i = 1, n do
        if st.vars[i] then cur[i] = st.vars[i].value else cur[i] = c[i] end
      end
      local s, p, r = call_region(body_fn, n, cur, extra_of(...))
      if s and s ~= 3 then escape(st, s, p, r, true) else store(st, r) end
    end, st)
    table.remove(loops)
  end
  local st, scalar = state(names, n, c, line, what)
  if probing() > 0 then
    run(st, true)
    return nil, nil, unpack(probe_results(st), 1, n)
  end
  if scalar then
    local pst = state(names, n, c, line, what)
    in_dead_branch(function() run(pst, true) end)
    st.types, st.changed, st.nil_out, st.sample = pst.types, pst.changed, pst.nil_out, pst.sample
  end
  run(st, false)
  return nil, nil, unpack(results(st), 1, n)
end

local function ident(...) return ... end

local function run_for(line, names, n, lo, hi, step, body, ...)
  local c = { ... }
  if not (is_value(lo) or is_value(hi) or is_value(step)) then
    -- a plain Lua loop
    if step == nil then step = 1 end
    local i = lo
    local function more()
      if step > 0 then return i <= hi end
      return i >= hi
    end
    if type(lo) ~= "number" or type(hi) ~= "number" or type(step) ~= "number" then
      err.raise("'for' %s must be a number, got %s", type(lo) ~= "number" and "initial value" or
        (type(hi) ~= "number" and "limit" or "step"), core.describe(type(lo) ~= "number" and lo or
        (type(hi) ~= "number" and hi or step)))
    end
    return plain_loop(line, n, c, function(cur)
      if not more() then return false end
      local iv = i
      i = i + step
      return call_region(body, n, cur, iv)
    end)
  end
  if step == nil then step = 1 end
  if is_value(step) then
    err.raise("the for loop at line %d has a run-time step: its sign decides the end test; use "
      .. "`for i in cute.range(lo, hi, step)` (exclusive end) instead", line)
  end
  if step == 0 then err.raise("the for loop at line %d has step 0 and would never end", line) end
  -- Lua's end is inclusive, cute.range's exclusive
  local stop = step > 0 and hi + 1 or hi - 1
  return dyn_loop(line, names, n, c, "for loop", function(b)
    control.range(lo, stop, step, function(iv) b(iv) end)
  end, body, ident)
end

--- for i = lo, hi, step do ... end: a plain loop on Lua numbers, a run-time
-- loop (cute.range) when a bound is a run-time value.
function M.forx(...) return run_for(...) end
function M.for_(...) return tail(run_for(...)) end

local function run_forin(line, names, n, body, ...)
  local c = { ... }
  local f, s, var = select(n + 1, ...)
  c[n + 1], c[n + 2], c[n + 3] = nil, nil, nil
  local rng = control.range_iterators[f]
  if rng then
    return dyn_loop(line, names, n, c, "for loop", function(b)
      control.range(rng.lo, rng.hi, rng.step, rng.opts, function(iv) b(iv) end)
    end, body, ident)
  end
  if type(f) ~= "function" and not (type(f) == "table" or type(f) == "userdata") then
    err.raise("attempt to call a %s value (the iterator of the for loop at line %d)", type(f), line)
  end
  return plain_loop(line, n, c, function(cur)
    local vals = { f(s, var) }
    if vals[1] == nil then return false end
    var = vals[1]
    return call_region(body, n, cur, unpack(vals, 1, table.maxn(vals)))
  end)
end

--- for k, v in explist do ... end: a plain loop, or a run-time loop over cute.range(...).
function M.forinx(...) return run_forin(...) end
function M.forin(...) return tail(run_forin(...)) end

local function run_while(line, names, n, cond_fn, body, ...)
  local c = { ... }
  local first = condition(cond_fn(unpack(c, 1, n)), "while loop", line)
  if type(first) == "boolean" then
    local go = first
    return plain_loop(line, n, c, function(cur)
      if go == nil then
        go = condition(cond_fn(unpack(cur, 1, n)), "while loop", line)
        if type(go) ~= "boolean" then
          err.raise("the condition of the while loop at line %d became a run-time value after the loop ran when "
            .. "the kernel was traced: make it run-time from the start (e.g. a cute.var counter)", line)
        end
      end
      if not go then return false end
      go = nil
      return call_region(body, n, cur)
    end)
  end
  core.use(first) -- a decision made again inside the loop; this one is dead code
  return dyn_loop(line, names, n, c, "while loop", function(b, st)
    control.while_(function()
      local cur = {}
      for i = 1, n do
        if st.vars[i] then cur[i] = st.vars[i].value else cur[i] = c[i] end
      end
      local v = condition(cond_fn(unpack(cur, 1, n)), "while loop", line)
      return v
    end, function() b() end)
  end, body, ident)
end

--- while cond do ... end: plain on Lua conditions, cute.while_ on a bool value.
function M.whilex(...) return run_while(...) end
function M.while_(...) return tail(run_while(...)) end

local function run_repeat(line, names, n, body, ...)
  local c = { ... }
  -- the first iteration runs as written (a repeat body always runs once)
  local cond
  local res = { plain_loop(line, n, c, function(cur)
    local s1, p1, r1 = call_region(body, n, cur)
    if s1 then return s1, p1, r1 end
    local done = condition(p1, "repeat loop", line)
    if type(done) ~= "boolean" then
      cond = done -- a run-time condition: the rest of the loop runs on the GPU
      return 2, nil, r1
    end
    if done then return 2, nil, r1 end
    return nil, nil, r1
  end) }
  if cond == nil then return unpack(res, 1, n + 2) end
  -- while not done do body end, done a bool variable the body's `until` sets
  local c2 = {}
  for i = 1, n do c2[i] = res[i + 2] end
  local done = control.var(core.bool.dtype, cond)
  local function wrapped(...)
    local out = { body(...) }
    if out[1] == nil and not core.current().dead then
      done.value = condition(out[2], "repeat loop", line)
    end
    return unpack(out, 1, n + 2)
  end
  return dyn_loop(line, names, n, c2, "repeat loop", function(b)
    control.while_(function() return ops.not_(done.value) end, function() b() end)
  end, wrapped, ident)
end

--- repeat ... until cond: a plain loop; when the condition is a run-time
-- value, the first iteration is traced as it runs and the rest becomes a
-- run-time loop (cute.while_ on a bool variable the condition sets).
function M.repeatx(...) return run_repeat(...) end
function M.repeat_(...) return tail(run_repeat(...)) end

-- ---------------------------------------------------------------------------
-- Markers

--- cute.dynamic(x): x (a Lua number or boolean) as a run-time constant, so
-- that the `if` or loop it decides is a region of the IR rather than
-- unrolled or picked when tracing.
-- @param x a Lua number or boolean (or a value, returned as it is)
-- @return a run-time value
-- @usage for i = 0, cute.dynamic(4) - 1 do ... end
function M.dynamic(x)
  if is_value(x) then return x end
  if type(x) == "boolean" then return core.const(core.bool, x) end
  if type(x) ~= "number" then err.raise("cute.dynamic: expected a number or a boolean, got %s", core.describe(x)) end
  return core.const(lua_type(x), x)
end

--- cute.range_constexpr(n) / (lo, hi[, step]): a loop that always runs when
-- the kernel is traced (unrolled), over Lua numbers; hi is exclusive, as in
-- cute.range.
-- @param a n, or lo when b is given
-- @param b optional: hi (exclusive)
-- @param step optional: the step (default 1)
-- @return an iterator over Lua numbers
-- @usage for i in cute.range_constexpr(4) do ... end
function M.range_constexpr(a, b, step)
  local lo, hi = a, b
  if b == nil then lo, hi = 0, a end
  step = step or 1
  for _, x in ipairs { lo, hi, step } do
    if type(x) ~= "number" then
      err.raise("cute.range_constexpr: bounds must be Lua numbers (it unrolls when the kernel is traced), got %s",
        describe(x))
    end
  end
  if step == 0 then err.raise("cute.range_constexpr: step 0 would never end") end
  local i = lo - step
  return function()
    i = i + step
    if (step > 0 and i < hi) or (step < 0 and i > hi) then return i end
  end
end

return M
