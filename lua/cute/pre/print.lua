--- cute.pre.print: the AST of cute.pre.parse back to Lua source, every
-- token on the line it came from.
--
-- A token with a recorded line is written on that line (newlines are added to
-- reach it); a token without one (made by the rewriter) goes on the current
-- line, as does a token whose line has already been passed. So a chunk whose
-- tokens keep their lines runs with Lua's line numbers unchanged: errors,
-- debug.getinfo and the IR's .loc lines name the user's lines.
local M = {}

local NO_SPACE_BEFORE = { [")"] = true, ["]"] = true, ["}"] = true, [","] = true, [";"] = true, ["."] = true,
  [":"] = true, ["("] = true, ["["] = true }
local NO_SPACE_AFTER = { ["("] = true, ["["] = true, ["{"] = true, ["."] = true, [":"] = true, ["#"] = true }

--- Lua source for the Block (or any statement or expression node) b.
-- opts.first_line: the line the output starts on (default 1).
function M.print(root, opts)
  opts = opts or {}
  local out, n = {}, 0
  local line = opts.first_line or 1
  local last = "\n" -- the last token written ("\n": the start of a line)

  local function put(text, l)
    if l and l > line then
      n = n + 1
      out[n] = string.rep("\n", l - line)
      line = l
      last = "\n"
    end
    if last ~= "\n" and not NO_SPACE_BEFORE[text] and not NO_SPACE_AFTER[last] then
      n = n + 1
      out[n] = " "
    elseif last ~= "\n" and text == "(" and not last:match("[%w_%]%)\"'}]$") then
      -- "(" after an operator or keyword: keep it apart
      n = n + 1
      out[n] = " "
    elseif last == "-" and text == "-" then
      n = n + 1
      out[n] = " "
    end
    n = n + 1
    out[n] = text
    last = text
    -- long strings and escaped newlines span lines
    if text:find("\n", 1, true) then
      for _ in text:gmatch("\n") do line = line + 1 end
    end
  end

  local block, expr, stat

  local function list(items, f, sep)
    for i, x in ipairs(items) do
      if i > 1 then put(sep or ",") end
      f(x)
    end
  end

  local function funcbody(f, name_put)
    put("function", f.line)
    if name_put then name_put() end
    put("(", f.pline)
    local ps = {}
    for i, p in ipairs(f.params) do ps[i] = p end
    if f.vararg then ps[#ps + 1] = "..." end
    for i, p in ipairs(ps) do
      if i > 1 then put(",") end
      put(p)
    end
    put(")", f.cline)
    if f.prologue then
      for _, s in ipairs(f.prologue) do stat(s) end
    end
    block(f.body)
    put("end", f.eline)
  end

  local function args(e)
    if e.argkind == "string" then
      expr(e.args[1])
    elseif e.argkind == "table" then
      expr(e.args[1])
    else
      put("(", e.aline)
      list(e.args, expr)
      put(")", e.eline)
    end
  end

  expr = function(e)
    local k = e.k
    if k == "Nil" then put("nil", e.line)
    elseif k == "True" then put("true", e.line)
    elseif k == "False" then put("false", e.line)
    elseif k == "Vararg" then put("...", e.line)
    elseif k == "Number" or k == "String" then put(e.v, e.line)
    elseif k == "Raw" then put(e.v, e.line)
    elseif k == "Function" then funcbody(e)
    elseif k == "Name" then put(e.name, e.line)
    elseif k == "Paren" then
      put("(", e.line)
      expr(e.e)
      put(")", e.eline)
    elseif k == "Field" then
      expr(e.obj)
      put(".", e.dotline)
      put(e.name, e.nline)
    elseif k == "Index" then
      expr(e.obj)
      put("[", e.bline)
      expr(e.key)
      put("]", e.eline)
    elseif k == "Call" then
      expr(e.fn)
      args(e)
    elseif k == "Invoke" then
      expr(e.obj)
      put(":", e.cline)
      put(e.name, e.nline)
      args(e)
    elseif k == "Binop" then
      expr(e.a)
      put(e.op, e.opline)
      expr(e.b)
    elseif k == "Unop" then
      put(e.op, e.line)
      expr(e.a)
    elseif k == "Table" then
      put("{", e.line)
      for i, it in ipairs(e.items) do
        if i > 1 and not e.items[i - 1].sep then put(",") end
        if it.kind == "expr" then
          put("[", it.line)
          expr(it.key)
          put("]", it.kel)
          put("=")
        elseif it.kind == "name" then
          put(it.key, it.line)
          put("=")
        end
        expr(it.value)
        if it.sep then put(it.sep, it.sepline) end
      end
      put("}", e.eline)
    else
      error("cute.pre.print: unknown expression " .. tostring(k))
    end
  end

  stat = function(s)
    local k = s.k
    if k == "Local" then
      put("local", s.line)
      list(s.names, put)
      if #s.exprs > 0 then
        put("=", s.eqline)
        list(s.exprs, expr)
      end
      put(";")
    elseif k == "Assign" then
      list(s.targets, expr)
      put("=", s.eqline)
      list(s.exprs, expr)
      put(";")
    elseif k == "CallStat" then
      expr(s.call)
      put(";")
    elseif k == "Do" then
      put("do", s.line)
      block(s.body)
      put("end", s.eline)
    elseif k == "While" then
      put("while", s.line)
      expr(s.cond)
      put("do", s.dline)
      block(s.body)
      put("end", s.eline)
    elseif k == "Repeat" then
      put("repeat", s.line)
      block(s.body)
      put("until", s.uline)
      expr(s.cond)
      put(";")
    elseif k == "If" then
      for i, c in ipairs(s.clauses) do
        put(i == 1 and "if" or "elseif", c.line)
        expr(c.cond)
        put("then", c.tline)
        block(c.body)
      end
      if s.orelse then
        put("else", s.elseline)
        block(s.orelse)
      end
      put("end", s.eline)
    elseif k == "Fornum" then
      put("for", s.line)
      put(s.var)
      put("=", s.eqline)
      expr(s.lo)
      put(",")
      expr(s.hi)
      if s.step then
        put(",")
        expr(s.step)
      end
      put("do", s.dline)
      block(s.body)
      put("end", s.eline)
    elseif k == "Forin" then
      put("for", s.line)
      list(s.names, put)
      put("in", s.inline)
      list(s.exprs, expr)
      put("do", s.dline)
      block(s.body)
      put("end", s.eline)
    elseif k == "FunctionStat" then
      funcbody(s.func, function()
        expr(s.target)
        if s.method then
          put(":")
          put(s.method)
        end
      end)
    elseif k == "LocalFunction" then
      put("local", s.line)
      funcbody(s.func, function() put(s.name) end)
    elseif k == "Return" then
      put("return", s.line)
      list(s.exprs, expr)
      put(";")
    elseif k == "Break" then put("break", s.line)
    elseif k == "Goto" then
      put("goto", s.line)
      put(s.label)
    elseif k == "Label" then
      put("::", s.line)
      put(s.name)
      put("::")
    elseif k == "Block" then
      put("do", s.line)
      block(s)
      put("end", s.eline)
    else
      error("cute.pre.print: unknown statement " .. tostring(k))
    end
  end

  block = function(b)
    for _, s in ipairs(b.stats) do stat(s) end
  end

  if root.k == "Block" then
    block(root)
  elseif not ({ Local = 1, Assign = 1, CallStat = 1, Do = 1, While = 1, Repeat = 1, If = 1, Fornum = 1, Forin = 1,
      FunctionStat = 1, LocalFunction = 1, Break = 1, Goto = 1, Label = 1, Return = 1 })[root.k] then
    expr(root)
  else
    stat(root)
  end
  return table.concat(out)
end

return M
