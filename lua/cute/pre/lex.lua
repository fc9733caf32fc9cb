--- cute.pre.lex: a lexer for LuaJIT's dialect of Lua (5.1 with goto and
-- labels, 64-bit and imaginary number suffixes, \x \z \u escapes).
--
-- lex(src, chunk) returns a list of tokens {t = kind, v = text, line = n}:
-- kinds "name", "kw" (a keyword: v is the word), "op" (punctuation: v is the
-- symbol), "num" and "str" (v is the exact source text, so that a printer
-- reproduces the literal), and a final "eof". Comments and blanks are
-- dropped; a token's line is where it starts. Errors name chunk:line.
local M = {}

local KEYWORDS = {}
for w in ([[and break do else elseif end false for function goto if in local nil not or repeat return then true
  until while]]):gmatch("%a+") do KEYWORDS[w] = true end
M.KEYWORDS = KEYWORDS

-- Punctuation, longest first where one is a prefix of another.
local OPS3 = { ["..."] = true }
local OPS2 = { ["=="] = true, ["~="] = true, ["<="] = true, [">="] = true, [".."] = true, ["::"] = true }
local OPS1 = {}
for c in ("+-*/%^#<>=(){}[];:,."):gmatch(".") do OPS1[c] = true end

local function fail(chunk, line, msg)
  error(string.format("%s:%d: %s", chunk, line, msg), 0)
end

-- The end of the long bracket that opens at i ("[" followed by level "="s and
-- "["), or nil when it is not one; returns the index just past the closing bracket.
local function long_bracket(src, i, chunk, line)
  local eq = src:match("^%[(=*)%[", i)
  if not eq then return nil end
  local close = "]" .. eq .. "]"
  local s, e = src:find(close, i + #eq + 2, true)
  if not s then fail(chunk, line, "unfinished long string or comment") end
  return e + 1
end

local function count_lines(s)
  local n = 0
  for _ in s:gmatch("\n") do n = n + 1 end
  return n
end
M.count_lines = count_lines

--- The tokens of src (chunk names the source in errors).
function M.lex(src, chunk)
  chunk = chunk or "?"
  local toks, n = {}, 0
  local i, line, len = 1, 1, #src
  -- a first line starting with # (a shebang) is skipped, as Lua does
  if src:sub(1, 1) == "#" then i = (src:find("\n", 1, true) or len + 1) end
  local function push(t, v, l)
    n = n + 1
    toks[n] = { t = t, v = v, line = l }
  end
  while true do
    -- blanks
    local s, e = src:find("^[ \t\r\f\v]+", i)
    if s then i = e + 1 end
    local c = src:sub(i, i)
    if c == "" then break end
    if c == "\n" then
      line = line + 1
      i = i + 1
    elseif c == "-" and src:sub(i + 1, i + 1) == "-" then
      -- comment: long or to the end of the line
      local j = src:sub(i + 2, i + 2) == "[" and long_bracket(src, i + 2, chunk, line)
      if j then
        line = line + count_lines(src:sub(i, j - 1))
        i = j
      else
        i = src:find("\n", i, true) or len + 1
      end
    elseif c:match("[%a_]") then
      local w = src:match("^[%w_]+", i)
      push(KEYWORDS[w] and "kw" or "name", w, line)
      i = i + #w
    elseif c:match("%d") or (c == "." and src:sub(i + 1, i + 1):match("%d")) then
      local w
      if src:match("^0[xX]", i) then
        w = src:match("^0[xX][%x%.]*[pP][%+%-]?%d+", i) or src:match("^0[xX][%x%.]*", i)
      else
        w = src:match("^[%d%.]*[eE][%+%-]?%d+", i) or src:match("^[%d%.]+", i)
      end
      -- LuaJIT suffixes: LL, ULL (64-bit integers), i (imaginary)
      local suffix = src:match("^[uU]?[lL][lL]", i + #w) or src:match("^[iI]", i + #w) or ""
      w = w .. suffix
      if src:match("^[%w_]", i + #w) then
        fail(chunk, line, "malformed number near '" .. src:match("^[%w_%.]+", i) .. "'")
      end
      push("num", w, line)
      i = i + #w
    elseif c == '"' or c == "'" then
      local j = i + 1
      local start = line
      while true do
        local d = src:sub(j, j)
        if d == "" or d == "\n" then fail(chunk, start, "unfinished string") end
        if d == c then break end
        if d == "\\" then
          local x = src:sub(j + 1, j + 1)
          if x == "\n" then line = line + 1 end
          if x == "z" then
            -- \z skips the blanks (newlines included) that follow
            local ws = src:match("^%s*", j + 2)
            line = line + count_lines(ws)
            j = j + 2 + #ws
          else
            j = j + 2
          end
        else
          j = j + 1
        end
      end
      push("str", src:sub(i, j), start)
      i = j + 1
    elseif c == "[" and src:match("^%[=*%[", i) then
      local j = long_bracket(src, i, chunk, line)
      local text = src:sub(i, j - 1)
      push("str", text, line)
      line = line + count_lines(text)
      i = j
    else
      local op3, op2 = src:sub(i, i + 2), src:sub(i, i + 1)
      if OPS3[op3] then
        push("op", op3, line)
        i = i + 3
      elseif OPS2[op2] then
        push("op", op2, line)
        i = i + 2
      elseif OPS1[c] then
        push("op", c, line)
        i = i + 1
      else
        fail(chunk, line, "unexpected symbol near '" .. c .. "'")
      end
    end
  end
  push("eof", "<eof>", line)
  return toks
end

return M
