--- cute.pre.rewrite: the preprocessor's rewrite rules, on the AST of
-- cute.pre.parse.
--
-- A kernel body's control flow and comparisons become calls of cute.pre.rt
-- (bound to the upvalue __cute_R), which decides when the body is traced
-- whether a construct runs as plain Lua (a Lua condition or bound: the
-- metaprogramming of today) or becomes a region of the IR (a run-time value):
--
--   a < b, a <= b, a > b, a >= b   __cute_R.lt(a, b), le, gt, ge
--   a == b, a ~= b                 __cute_R.eq(a, b), ne
--   a and b, a or b                __cute_R.and_(a, b) (b simple), else and_f(a, function() return b end)
--   not a                          __cute_R.not_(a)
--   if c then A else B end         x, y = __cute_R.if_(line, "x,y", 2, c, function(x, y) A return nil, nil, x, y
--                                    end, function(x, y) B return nil, nil, x, y end, x, y)
--   while c do A end               x = __cute_R.while_(line, "x", 1, function(x) return c end,
--                                    function(x) A ... end, x)
--   repeat A until c               x = __cute_R.repeat_(line, "x", 1, function(x) A return nil, c, x end, x)
--   for i = a, b, s do A end       x = __cute_R.for_(line, "x", 1, a, b, s, function(x, i) A ... end, x)
--   for k, v in e do A end         x = __cute_R.forin(line, "x", 1, function(x, k, v) A ... end, x, e)
--
-- x, y: the locals declared outside the construct that it assigns (the
-- values carried through it). A region function returns a status (nil: it
-- ended; 1: `return`, its values packed in the second result; 2: `break`; 3:
-- `goto continue`; 4: `return` from a function written inside the root
-- one) before the carried values; a construct that contains such an exit
-- (`return`, `break`, or `goto` to the label that ends the loop body)
-- passes it on after the call. Every token keeps its line: synthesized
-- tokens go on the line of the construct they replace.
local M = {}

local R = "__cute_R"

local CMP = { ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge", ["=="] = "eq", ["~="] = "ne" }

local function fail(chunk, line, msg)
  error(string.format("%s:%d: %s", chunk, line, msg), 0)
end

-- ---------------------------------------------------------------------------
-- Analysis: scopes (Name nodes get .decl), what each construct assigns, the
-- exits that cross it, goto targets.

local REGION = { If = true, While = true, Fornum = true, Forin = true, Repeat = true }

local function analyze(root, chunk)
  local serial = 0
  local scopes = {}
  local F -- the function being walked: {regions, loops, blocks}

  local function declare(name)
    serial = serial + 1
    local d = { name = name, serial = serial }
    scopes[#scopes][name] = d
    return d
  end
  local function resolve(name)
    for i = #scopes, 1, -1 do
      local d = scopes[i][name]
      if d then return d end
    end
  end
  local function assign(d)
    if not d then return end
    for _, r in ipairs(F.regions) do
      if d.serial < r.start then r.assigned[d] = true end
    end
  end

  local block, expr, stat, func

  local function exprs(list) for _, e in ipairs(list) do expr(e) end end

  expr = function(e)
    local k = e.k
    if k == "Name" then
      e.decl = resolve(e.name)
    elseif k == "Vararg" then
      if #F.regions > 0 then
        e.in_region = true
        F.node.va_in_region = true
      end
    elseif k == "Function" then
      func(e)
    elseif k == "Paren" then
      expr(e.e)
    elseif k == "Field" then
      expr(e.obj)
    elseif k == "Index" then
      expr(e.obj)
      expr(e.key)
    elseif k == "Call" then
      expr(e.fn)
      exprs(e.args)
    elseif k == "Invoke" then
      expr(e.obj)
      exprs(e.args)
    elseif k == "Binop" then
      expr(e.a)
      expr(e.b)
    elseif k == "Unop" then
      expr(e.a)
    elseif k == "Table" then
      for _, it in ipairs(e.items) do
        if it.kind == "expr" then expr(it.key) end
        expr(it.value)
      end
    end
  end

  local all = {} -- every region, for the carried lists made at the end
  local function enter_region(s)
    s.start = serial + 1
    s.assigned = {}
    F.regions[#F.regions + 1] = s
    all[#all + 1] = s
  end
  local function leave_region() table.remove(F.regions) end

  -- a float literal (1.0, 2e3, -0.5): a local it is given to is an f32 in a
  -- run-time region when it holds Lua numbers only (Lua does not tell 1.0 from 1)
  local function float_literal(e)
    if e and e.k == "Unop" and e.op == "-" then e = e.a end
    return e and e.k == "Number" and not e.v:match("^0[xX]") and e.v:match("[%.eE]") ~= nil
  end

  -- the label that ends a loop body (the `goto continue` idiom), if any
  local function end_label(b)
    local last = b.stats[#b.stats]
    return last and last.k == "Label" and last.name or nil
  end

  local function loop(s, body_fn)
    F.loops[#F.loops + 1] = { stmt = s, cont = end_label(s.body), body = s.body }
    body_fn()
    table.remove(F.loops)
  end

  block = function(b, declare_fn)
    scopes[#scopes + 1] = {}
    local labels = {}
    for _, s in ipairs(b.stats) do if s.k == "Label" then labels[s.name] = true end end
    F.blocks[#F.blocks + 1] = { labels = labels, region = F.regions[#F.regions], block = b }
    if declare_fn then declare_fn() end
    for _, s in ipairs(b.stats) do stat(s) end
    table.remove(F.blocks)
    table.remove(scopes)
  end

  func = function(f)
    local saved = F
    F = { regions = {}, loops = {}, blocks = {}, node = f }
    block(f.body, function()
      for i, p in ipairs(f.params) do
        f.pdecls = f.pdecls or {}
        f.pdecls[i] = declare(p)
      end
    end)
    F = saved
  end

  stat = function(s)
    local k = s.k
    if k == "Local" then
      exprs(s.exprs)
      for i, n in ipairs(s.names) do
        local d = declare(n)
        if float_literal(s.exprs[i]) then d.float = true end
      end
    elseif k == "LocalFunction" then
      declare(s.name)
      func(s.func)
    elseif k == "FunctionStat" then
      expr(s.target)
      if s.target.k == "Name" and not s.method then assign(s.target.decl) end
      func(s.func)
    elseif k == "Assign" then
      exprs(s.exprs)
      for i, t in ipairs(s.targets) do
        expr(t)
        if t.k == "Name" then
          assign(t.decl)
          if t.decl and float_literal(s.exprs[i]) then t.decl.float = true end
        end
      end
    elseif k == "CallStat" then
      expr(s.call)
    elseif k == "Do" then
      block(s.body)
    elseif k == "If" then
      expr(s.clauses[1].cond)
      enter_region(s)
      for i, c in ipairs(s.clauses) do
        if i > 1 then expr(c.cond) end
        block(c.body)
      end
      if s.orelse then block(s.orelse) end
      leave_region()
    elseif k == "While" then
      enter_region(s)
      expr(s.cond)
      loop(s, function() block(s.body) end)
      leave_region()
    elseif k == "Repeat" then
      enter_region(s)
      loop(s, function()
        scopes[#scopes + 1] = {}
        local labels = {}
        for _, x in ipairs(s.body.stats) do if x.k == "Label" then labels[x.name] = true end end
        F.blocks[#F.blocks + 1] = { labels = labels, region = s, block = s.body }
        for _, x in ipairs(s.body.stats) do stat(x) end
        expr(s.cond)
        table.remove(F.blocks)
        table.remove(scopes)
      end)
      leave_region()
    elseif k == "Fornum" then
      expr(s.lo)
      expr(s.hi)
      if s.step then expr(s.step) end
      enter_region(s)
      loop(s, function() block(s.body, function() s.vdecl = declare(s.var) end) end)
      leave_region()
    elseif k == "Forin" then
      exprs(s.exprs)
      enter_region(s)
      loop(s, function() block(s.body, function() for _, n in ipairs(s.names) do declare(n) end end) end)
      leave_region()
    elseif k == "Return" then
      exprs(s.exprs)
      for _, r in ipairs(F.regions) do r.esc_return = true end
      s.in_region = #F.regions > 0
    elseif k == "Break" then
      local L = F.loops[#F.loops]
      if L then
        local inside = false
        for _, r in ipairs(F.regions) do
          if inside then
            r.esc_break = true
            r.esc_loop = L.stmt
          end
          if r == L.stmt then inside = true end
        end
        s.in_region = true
      end
    elseif k == "Goto" then
      local target
      for i = #F.blocks, 1, -1 do
        if F.blocks[i].labels[s.label] then
          target = F.blocks[i]
          break
        end
      end
      if target and target.region == F.regions[#F.regions] then
        s.plain = true
      elseif target then
        local L = F.loops[#F.loops]
        if L and L.cont == s.label and target.block == L.body then
          s.continue = true
          local inside = false
          for _, r in ipairs(F.regions) do
            if inside then
              r.esc_continue = true
              r.esc_loop = L.stmt
            end
            if r == L.stmt then inside = true end
          end
        else
          fail(chunk, s.line, string.format("goto %s jumps out of a loop or if, which the preprocessor turns into a "
            .. "function: only `goto continue` to a label that ends the loop body is supported (make the kernel "
            .. "{preprocess = false} to keep Lua's goto)", s.label))
        end
      end
    end
  end

  F = { regions = {}, loops = {}, blocks = {}, node = root }
  func(root)
  -- a region left by `break` or `goto continue` carries the loop's locals too
  -- (stored into the loop's variables before a run-time break or continue)
  for _, r in ipairs(all) do
    if r.esc_loop then
      for d in pairs(r.esc_loop.assigned) do r.assigned[d] = true end
    end
  end
  for _, r in ipairs(all) do
    local list = {}
    for d in pairs(r.assigned) do list[#list + 1] = d end
    table.sort(list, function(a, b) return a.serial < b.serial end)
    r.carried, r.carried_desc = {}, {}
    for i, d in ipairs(list) do
      r.carried[i] = d.name
      r.carried_desc[i] = d.name .. (d.float and "." or "")
    end
  end
end

-- ---------------------------------------------------------------------------
-- Building nodes

local function name(n, line) return { k = "Name", name = n, line = line } end
local function rfield(f, line) return { k = "Field", obj = name(R, line), name = f, line = line, dotline = line,
  nline = line } end
local function call(fn, args, line, eline)
  return { k = "Call", fn = fn, args = args, argkind = "paren", line = line, aline = line, eline = eline }
end
local function rcall(f, args, line, eline) return call(rfield(f, line), args, line, eline) end
local function num(n, line) return { k = "Number", v = tostring(n), line = line } end
local function str(s, line) return { k = "String", v = string.format("%q", s), line = line } end
local function names(list, line)
  local out = {}
  for i, n in ipairs(list) do out[i] = name(n, line) end
  return out
end
local function concat(...)
  local out = {}
  for _, t in ipairs { ... } do for _, x in ipairs(t) do out[#out + 1] = x end end
  return out
end
local function ret(exprs, line) return { k = "Return", exprs = exprs, line = line } end
local function do_(stats, line, eline) return { k = "Do", body = { k = "Block", stats = stats }, line = line,
  eline = eline } end

-- an expression evaluated without side effects or cost: passed as it is to and_/or_
local function simple(e)
  local k = e.k
  return k == "Name" or k == "Number" or k == "String" or k == "Nil" or k == "True" or k == "False"
end

-- ---------------------------------------------------------------------------
-- The rewrite

local function transform(root)
  local block, expr, stat, region_fn

  -- the innermost region function being written: {carried = names} (nil: the function's own body)
  local region

  local function exprs(list)
    local out = {}
    for i, e in ipairs(list) do out[i] = expr(e) end
    return out
  end

  local depth = 0 -- of the function being written: 1 is the root (the kernel's own)
  local function func(f)
    local saved = region
    region = nil
    depth = depth + 1
    local out = { k = "Function", params = f.params, vararg = f.vararg, line = f.line, pline = f.pline,
      cline = f.cline, eline = f.eline }
    if f.va_in_region then
      out.prologue = { { k = "Local", names = { "__cute_va" }, exprs = { rcall("pack", { { k = "Vararg" } },
        f.cline) } } }
    end
    out.body = block(f.body)
    region = saved
    depth = depth - 1
    return out
  end

  expr = function(e)
    local k = e.k
    if k == "Binop" then
      local a, b = expr(e.a), expr(e.b)
      if CMP[e.op] then return rcall(CMP[e.op], { a, b }, e.line) end
      if e.op == "and" or e.op == "or" then
        local f = e.op == "and" and "and_" or "or_"
        if simple(e.b) then return rcall(f, { a, b }, e.line) end
        local thunk = { k = "Function", params = {}, vararg = false, line = e.opline, pline = e.opline,
          cline = e.opline, body = { k = "Block", stats = { ret({ b }) } } }
        return rcall(f .. "f", { a, thunk }, e.line)
      end
      return { k = "Binop", op = e.op, a = a, b = b, line = e.line, opline = e.opline }
    elseif k == "Unop" then
      local a = expr(e.a)
      if e.op == "not" then return rcall("not_", { a }, e.line) end
      return { k = "Unop", op = e.op, a = a, line = e.line }
    elseif k == "Vararg" then
      if e.in_region then return rcall("unpack", { name("__cute_va", e.line) }, e.line) end
      return e
    elseif k == "Function" then
      return func(e)
    elseif k == "Paren" then
      return { k = "Paren", e = expr(e.e), line = e.line, eline = e.eline }
    elseif k == "Field" then
      local c = {}
      for key, v in pairs(e) do c[key] = v end
      c.obj = expr(e.obj)
      return c
    elseif k == "Index" then
      local c = {}
      for key, v in pairs(e) do c[key] = v end
      c.obj, c.key = expr(e.obj), expr(e.key)
      return c
    elseif k == "Call" or k == "Invoke" then
      local c = {}
      for key, v in pairs(e) do c[key] = v end
      if k == "Call" then c.fn = expr(e.fn) else c.obj = expr(e.obj) end
      c.args = exprs(e.args)
      return c
    elseif k == "Table" then
      local items = {}
      for i, it in ipairs(e.items) do
        local c = {}
        for key, v in pairs(it) do c[key] = v end
        if it.kind == "expr" then c.key = expr(it.key) end
        c.value = expr(it.value)
        items[i] = c
      end
      return { k = "Table", items = items, line = e.line, eline = e.eline }
    end
    return e
  end

  -- The statement(s) that call the construct s (built by `make_call`, given
  -- the region functions) and pass on its exits.
  local function construct(s, fname, args, line, eline)
    local carried = s.carried
    local nc = #carried
    local escapes = s.esc_return or s.esc_break or s.esc_continue
    local head = { num(line, line), str(table.concat(s.carried_desc, ","), line), num(nc, line) }
    local c = rcall(escapes and (fname:gsub("_$", "") .. "x") or fname, concat(head, args), line, eline)
    if not escapes then
      if nc == 0 then return { k = "CallStat", call = c, line = line } end
      return { k = "Assign", targets = names(carried, line), exprs = { c }, line = line }
    end
    local S, P = "__cute_s", "__cute_p"
    local pass
    if region then
      pass = ret(concat({ name(S), name(P) }, names(region.carried)))
    else
      pass = ret({ rcall("unpack", { name(P) }) })
    end
    return do_({
      { k = "Local", names = { S, P }, exprs = {}, line = line },
      { k = "Assign", targets = concat({ name(S, line), name(P, line) }, names(carried, line)), exprs = { c },
        line = line },
      { k = "If", clauses = { { cond = name(S), body = { k = "Block", stats = { pass } } } } },
    }, line)
  end

  -- function(carried..., extra...) body return nil, <tail>, carried... end
  region_fn = function(s, body_block, extra, line, eline, tail, wrap)
    local saved = region
    region = { carried = s.carried }
    local stats = block(body_block).stats
    if tail then stats[#stats + 1] = tail() end
    if wrap then stats = { do_(stats) } end
    stats[#stats + 1] = ret(concat({ { k = "Nil" }, { k = "Nil" } }, names(s.carried)))
    region = saved
    local params = {}
    for i, n in ipairs(s.carried) do params[i] = n end
    for _, n in ipairs(extra or {}) do params[#params + 1] = n end
    return { k = "Function", params = params, vararg = false, line = line, pline = line, cline = line,
      body = { k = "Block", stats = stats }, eline = eline }
  end

  local function if_stat(s)
    -- elseif: a nested if in the else branch
    local c1 = s.clauses[1]
    local orelse = s.orelse
    local elseline = s.elseline
    if #s.clauses > 1 then
      local rest = { k = "If", clauses = {}, orelse = s.orelse, elseline = s.elseline, line = s.clauses[2].line,
        eline = s.eline, carried = s.carried, carried_desc = s.carried_desc, esc_return = s.esc_return,
        esc_break = s.esc_break,
        esc_continue = s.esc_continue }
      for i = 2, #s.clauses do rest.clauses[i - 1] = s.clauses[i] end
      orelse = { k = "Block", stats = { rest } }
      elseline = s.clauses[2].line
    end
    local cond = expr(c1.cond)
    local then_end = elseline or s.eline
    local tf = region_fn(s, c1.body, nil, c1.tline, then_end)
    local ef = orelse and region_fn(s, orelse, nil, elseline, s.eline) or { k = "Nil", line = s.eline }
    return construct(s, "if_", concat({ cond, tf, ef }, names(s.carried, s.eline)), s.line, s.eline)
  end

  stat = function(s)
    local k = s.k
    if k == "Local" then
      return { k = "Local", names = s.names, exprs = exprs(s.exprs), line = s.line, eqline = s.eqline }
    elseif k == "Assign" then
      return { k = "Assign", targets = exprs(s.targets), exprs = exprs(s.exprs), line = s.line, eqline = s.eqline }
    elseif k == "CallStat" then
      return { k = "CallStat", call = expr(s.call), line = s.line }
    elseif k == "LocalFunction" then
      return { k = "LocalFunction", name = s.name, func = func(s.func), line = s.line }
    elseif k == "FunctionStat" then
      return { k = "FunctionStat", target = s.target, method = s.method, func = func(s.func), line = s.line }
    elseif k == "Do" then
      return { k = "Do", body = block(s.body), line = s.line, eline = s.eline }
    elseif k == "If" then
      return if_stat(s)
    elseif k == "While" then
      local cond = region_fn({ carried = s.carried }, { k = "Block", stats = {} }, nil, s.line, s.dline)
      local saved = region
      region = { carried = s.carried }
      table.insert(cond.body.stats, 1, ret({ expr(s.cond) }))
      table.remove(cond.body.stats) -- the cond function returns the condition only
      region = saved
      local body = region_fn(s, s.body, nil, s.dline, s.eline, nil, s.body.stats[#s.body.stats]
        and s.body.stats[#s.body.stats].k == "Label")
      return construct(s, "while_", concat({ cond, body }, names(s.carried, s.eline)), s.line, s.eline)
    elseif k == "Repeat" then
      local body = region_fn(s, s.body, nil, s.line, s.uline, nil)
      -- the condition, in the scope of the body's locals, goes in the status's second slot
      local saved = region
      region = { carried = s.carried }
      local last = body.body.stats[#body.body.stats]
      last.exprs[2] = expr(s.cond)
      region = saved
      return construct(s, "repeat_", concat({ body }, names(s.carried, s.uline)), s.line, s.uline)
    elseif k == "Fornum" then
      local lo, hi = expr(s.lo), expr(s.hi)
      local step = s.step and expr(s.step) or { k = "Nil" }
      local wrap = s.body.stats[#s.body.stats] and s.body.stats[#s.body.stats].k == "Label"
      local body = region_fn(s, s.body, { s.var }, s.dline, s.eline, nil, wrap)
      return construct(s, "for_", concat({ lo, hi, step, body }, names(s.carried, s.eline)), s.line, s.eline)
    elseif k == "Forin" then
      local wrap = s.body.stats[#s.body.stats] and s.body.stats[#s.body.stats].k == "Label"
      local body = region_fn(s, s.body, s.names, s.dline, s.eline, nil, wrap)
      return construct(s, "forin", concat({ body }, names(s.carried, s.eline), exprs(s.exprs)), s.line, s.eline)
    elseif k == "Return" then
      if s.in_region then
        -- status 1: a return from the root function; 4: from a function inside it (inlined when it runs)
        return do_({ ret({ num(depth == 1 and 1 or 4, s.line), rcall("pack", exprs(s.exprs), s.line) }, s.line) },
          s.line)
      end
      return { k = "Return", exprs = exprs(s.exprs), line = s.line }
    elseif k == "Break" then
      if s.in_region then
        return do_({ ret(concat({ num(2, s.line), { k = "Nil" } }, names(region.carried)), s.line) }, s.line)
      end
      return s
    elseif k == "Goto" then
      if s.continue then
        return do_({ ret(concat({ num(3, s.line), { k = "Nil" } }, names(region.carried)), s.line) }, s.line)
      end
      return s
    end
    return s
  end

  block = function(b)
    local stats = {}
    for i, s in ipairs(b.stats) do stats[i] = stat(s) end
    return { k = "Block", stats = stats, eline = b.eline }
  end

  return func(root)
end

--- Rewrites the Function node f (parsed from chunk, for errors) into a new
-- Function node; raises "chunk:line: message" for what it cannot express.
function M.rewrite(f, chunk)
  analyze(f, chunk)
  return transform(f)
end

M.REGION = REGION
return M
