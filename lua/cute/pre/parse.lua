--- cute.pre.parse: a parser for LuaJIT's dialect of Lua, to a small AST.
--
-- parse(src, chunk) returns the chunk as a Block node. Nodes are tables
-- {k = kind, line = first token's line, ...}; the fields that the printer
-- (cute.pre.print) needs to put every token back on its line are recorded
-- as well (eline: the line of a closing `end`, `)`, `}` or `]`). Kinds:
--
-- expressions: Nil True False Vararg Number{v} String{v} Function{params,
--   vararg, body, eline} Table{items = {{kind = "pos"|"name"|"expr", key,
--   value}}} Binop{op, a, b, opline} Unop{op, a} Paren{e} Name{name}
--   Index{obj, key} (obj[key]) Field{obj, name} (obj.name) Call{fn, args}
--   Invoke{obj, name, args} (obj:name(args)); a call's argkind is "paren",
--   "table" or "string".
-- statements: Local{names, exprs} Assign{targets, exprs} CallStat{call}
--   Do{body} While{cond, body} Repeat{body, cond} If{clauses = {{cond, body,
--   line}}, orelse, elseline} Fornum{var, lo, hi, step, body} Forin{names,
--   exprs, body} FunctionStat{target, method, func} LocalFunction{name, func}
--   Return{exprs} Break Goto{label} Label{name}.
-- A Block is {k = "Block", stats, eline = the line of the token that ends it}.
local lex = require "cute.pre.lex"

local M = {}

-- binary operators: left and right priorities (Lua 5.1's)
local BINARY = {
  ["or"] = { 1, 1 }, ["and"] = { 2, 2 },
  ["<"] = { 3, 3 }, [">"] = { 3, 3 }, ["<="] = { 3, 3 }, [">="] = { 3, 3 }, ["~="] = { 3, 3 }, ["=="] = { 3, 3 },
  [".."] = { 5, 4 }, ["+"] = { 6, 6 }, ["-"] = { 6, 6 }, ["*"] = { 7, 7 }, ["/"] = { 7, 7 }, ["%"] = { 7, 7 },
  ["^"] = { 10, 9 },
}
local UNARY_PRIORITY = 8
M.BINARY = BINARY

--- The AST of src.
function M.parse(src, chunk)
  chunk = chunk or "?"
  local toks = lex.lex(src, chunk)
  local pos = 1
  local tok = toks[1]

  local function fail(msg, t)
    t = t or tok
    error(string.format("%s:%d: %s near '%s'", chunk, t.line, msg, t.v), 0)
  end
  local function next_tok()
    pos = pos + 1
    tok = toks[pos]
  end
  local function is(v) return (tok.t == "op" or tok.t == "kw") and tok.v == v end
  local function accept(v)
    if is(v) then
      local l = tok.line
      next_tok()
      return l
    end
  end
  local function expect(v, opener, oline)
    if is(v) then
      local l = tok.line
      next_tok()
      return l
    end
    if opener and oline ~= tok.line then
      fail(string.format("'%s' expected (to close '%s' at line %d)", v, opener, oline))
    end
    fail("'" .. v .. "' expected")
  end
  local function name()
    if tok.t ~= "name" then fail("<name> expected") end
    local n = tok.v
    next_tok()
    return n
  end

  local block, expr

  local function block_follow()
    return tok.t == "eof" or (tok.t == "kw" and (tok.v == "end" or tok.v == "else" or tok.v == "elseif"
      or tok.v == "until"))
  end

  local function explist()
    local list = { expr() }
    while accept(",") do list[#list + 1] = expr() end
    return list
  end

  -- function body: (params) block end
  local function body(line)
    local params, vararg = {}, false
    local pline = expect("(")
    if not is(")") then
      repeat
        if accept("...") then
          vararg = true
          break
        end
        params[#params + 1] = name()
      until not accept(",")
    end
    local cline = expect(")")
    local b = block()
    local eline = expect("end", "function", line)
    return { k = "Function", params = params, vararg = vararg, body = b, line = line, pline = pline, cline = cline,
      eline = eline }
  end

  local function table_cons()
    local line = expect("{")
    local items = {}
    while not is("}") do
      local item
      if is("[") then
        local kl = tok.line
        next_tok()
        local key = expr()
        local kel = expect("]")
        expect("=")
        item = { kind = "expr", key = key, value = expr(), line = kl, kel = kel }
      elseif tok.t == "name" and toks[pos + 1].t == "op" and toks[pos + 1].v == "=" then
        local l = tok.line
        local n = name()
        expect("=")
        item = { kind = "name", key = n, value = expr(), line = l }
      else
        item = { kind = "pos", value = expr() }
      end
      items[#items + 1] = item
      if is(",") or is(";") then
        item.sep, item.sepline = tok.v, tok.line
        next_tok()
      else
        break
      end
    end
    local eline = expect("}", "{", line)
    return { k = "Table", items = items, line = line, eline = eline }
  end

  local function call_args(fnode)
    local line = tok.line
    if tok.t == "str" then
      local s = { k = "String", v = tok.v, line = tok.line }
      next_tok()
      return { s }, "string", line, line
    elseif is("{") then
      local t = table_cons()
      return { t }, "table", line, t.eline
    elseif is("(") then
      if fnode and line ~= fnode.lastline then
        -- Lua 5.1 refuses this too ("ambiguous syntax")
        fail("ambiguous syntax (function call x new statement)")
      end
      next_tok()
      local args = is(")") and {} or explist()
      local eline = expect(")", "(", line)
      return args, "paren", line, eline
    end
    fail("function arguments expected")
  end

  local function primary()
    local line = tok.line
    if tok.t == "name" then
      return { k = "Name", name = name(), line = line, lastline = line }
    elseif is("(") then
      next_tok()
      local e = expr()
      local eline = expect(")", "(", line)
      return { k = "Paren", e = e, line = line, eline = eline, lastline = eline }
    end
    fail("unexpected symbol")
  end

  local function suffixed()
    local e = primary()
    while true do
      local line = tok.line
      if is(".") then
        next_tok()
        local nl = tok.line
        e = { k = "Field", obj = e, name = name(), line = e.line, dotline = line, nline = nl, lastline = nl }
      elseif is("[") then
        next_tok()
        local key = expr()
        local eline = expect("]", "[", line)
        e = { k = "Index", obj = e, key = key, line = e.line, bline = line, eline = eline, lastline = eline }
      elseif is(":") then
        next_tok()
        local nl = tok.line
        local n = name()
        local args, kind, aline, eline = call_args()
        e = { k = "Invoke", obj = e, name = n, args = args, argkind = kind, line = e.line, cline = line, nline = nl,
          aline = aline, eline = eline, lastline = eline }
      elseif is("(") or is("{") or tok.t == "str" then
        local args, kind, aline, eline = call_args(e)
        e = { k = "Call", fn = e, args = args, argkind = kind, line = e.line, aline = aline, eline = eline,
          lastline = eline }
      else
        return e
      end
    end
  end

  local function simple()
    local t, line = tok, tok.line
    if t.t == "num" then
      next_tok()
      return { k = "Number", v = t.v, line = line }
    elseif t.t == "str" then
      next_tok()
      return { k = "String", v = t.v, line = line }
    elseif is("nil") then
      next_tok()
      return { k = "Nil", line = line }
    elseif is("true") then
      next_tok()
      return { k = "True", line = line }
    elseif is("false") then
      next_tok()
      return { k = "False", line = line }
    elseif is("...") then
      next_tok()
      return { k = "Vararg", line = line }
    elseif is("{") then
      return table_cons()
    elseif is("function") then
      next_tok()
      return body(line)
    end
    return suffixed()
  end

  local function subexpr(limit)
    local e
    if is("not") or is("-") or is("#") then
      local op, line = tok.v, tok.line
      next_tok()
      e = { k = "Unop", op = op, a = subexpr(UNARY_PRIORITY), line = line }
    else
      e = simple()
    end
    while true do
      local op = (tok.t == "op" or tok.t == "kw") and BINARY[tok.v] and tok.v
      if not op or BINARY[op][1] <= limit then break end
      local opline = tok.line
      next_tok()
      local b = subexpr(BINARY[op][2])
      e = { k = "Binop", op = op, a = e, b = b, line = e.line, opline = opline }
    end
    return e
  end
  expr = function() return subexpr(0) end

  local function statement()
    local line = tok.line
    if accept(";") then return nil end
    if accept("if") then
      local clauses = {}
      local cond = expr()
      local tline = expect("then")
      clauses[1] = { cond = cond, body = block(), line = line, tline = tline }
      local orelse, elseline
      while is("elseif") do
        local l = tok.line
        next_tok()
        local c = expr()
        local tl = expect("then")
        clauses[#clauses + 1] = { cond = c, body = block(), line = l, tline = tl }
      end
      if is("else") then
        elseline = tok.line
        next_tok()
        orelse = block()
      end
      local eline = expect("end", "if", line)
      return { k = "If", clauses = clauses, orelse = orelse, elseline = elseline, line = line, eline = eline }
    elseif accept("while") then
      local cond = expr()
      local dline = expect("do")
      local b = block()
      local eline = expect("end", "while", line)
      return { k = "While", cond = cond, body = b, line = line, dline = dline, eline = eline }
    elseif accept("do") then
      local b = block()
      local eline = expect("end", "do", line)
      return { k = "Do", body = b, line = line, eline = eline }
    elseif accept("for") then
      local n1 = name()
      if is("=") then
        local eqline = tok.line
        next_tok()
        local lo = expr()
        expect(",")
        local hi = expr()
        local step
        if accept(",") then step = expr() end
        local dline = expect("do")
        local b = block()
        local eline = expect("end", "for", line)
        return { k = "Fornum", var = n1, lo = lo, hi = hi, step = step, body = b, line = line, eqline = eqline,
          dline = dline, eline = eline }
      end
      local names = { n1 }
      while accept(",") do names[#names + 1] = name() end
      local inline = expect("in")
      local exprs = explist()
      local dline = expect("do")
      local b = block()
      local eline = expect("end", "for", line)
      return { k = "Forin", names = names, exprs = exprs, body = b, line = line, inline = inline, dline = dline,
        eline = eline }
    elseif accept("repeat") then
      local b = block()
      local uline = expect("until", "repeat", line)
      return { k = "Repeat", body = b, cond = expr(), line = line, uline = uline }
    elseif accept("function") then
      local tl = tok.line
      local target = { k = "Name", name = name(), line = tl }
      local method
      while is(".") or is(":") do
        local sep = tok.v
        next_tok()
        local nl = tok.line
        local n = name()
        if sep == ":" then
          method = n
          break
        end
        target = { k = "Field", obj = target, name = n, line = target.line, nline = nl }
      end
      local f = body(line)
      return { k = "FunctionStat", target = target, method = method, func = f, line = line }
    elseif accept("local") then
      if accept("function") then
        local n = name()
        return { k = "LocalFunction", name = n, func = body(line), line = line }
      end
      local names = {}
      repeat names[#names + 1] = name() until not accept(",")
      local exprs = {}
      local eqline
      if is("=") then
        eqline = tok.line
        next_tok()
        exprs = explist()
      end
      return { k = "Local", names = names, exprs = exprs, line = line, eqline = eqline }
    elseif accept("return") then
      local exprs = {}
      if not block_follow() and not is(";") then exprs = explist() end
      accept(";")
      return { k = "Return", exprs = exprs, line = line }
    elseif accept("break") then
      return { k = "Break", line = line }
    elseif accept("goto") then
      return { k = "Goto", label = name(), line = line }
    elseif accept("::") then
      local n = name()
      expect("::")
      return { k = "Label", name = n, line = line }
    end
    -- an expression statement: a call or an assignment
    local e = suffixed()
    if is("=") or is(",") then
      local targets = { e }
      while accept(",") do targets[#targets + 1] = suffixed() end
      local eqline = expect("=")
      for _, t in ipairs(targets) do
        if t.k ~= "Name" and t.k ~= "Index" and t.k ~= "Field" then fail("syntax error") end
      end
      return { k = "Assign", targets = targets, exprs = explist(), line = line, eqline = eqline }
    end
    if e.k ~= "Call" and e.k ~= "Invoke" then fail("syntax error") end
    return { k = "CallStat", call = e, line = line }
  end

  block = function()
    local stats = {}
    while not block_follow() do
      local s = statement()
      if s then
        stats[#stats + 1] = s
        if s.k == "Return" or s.k == "Break" then
          -- Lua 5.1: return and break end their block
          if not block_follow() then
            if s.k == "Return" then fail("'end' expected") end
          end
        end
      end
    end
    return { k = "Block", stats = stats, eline = tok.line }
  end

  local b = block()
  if tok.t ~= "eof" then fail("'<eof>' expected") end
  return b
end

return M
