--- Writes docs/ir.md's op table from the C op table (src/ir/ir_ops.h, read
-- through cute.ir): one row per op, its operand count, immediates, the target
-- feature it needs and its doc line, between the two marker comments.
--   cutelua tools/gen_ir_doc.lua [DOC]          rewrite the table (DOC: docs/ir.md)
--   cutelua tools/gen_ir_doc.lua --check [DOC]  exit 1 when the table is stale
-- The test tests/spec/ir/doc_spec.lua fails when the table is stale and names
-- this command; so a new op needs its row in ir_ops.h and nothing in the docs
-- by hand. Also a module: dofile("tools/gen_ir_doc.lua").render(text).
local ffi = require "ffi"
local C = require("cute._c").ir
local T = require("cute._c").target

local M = {}

M.BEGIN = "<!-- op table: generated from src/ir/ir_ops.h by tools/gen_ir_doc.lua; do not edit -->"
M.END = "<!-- end of the generated op table -->"

-- The table's markdown, one row per op in table order.
function M.table()
  local rows = { "| op | operands | imms | feature | meaning |", "|---|---|---|---|---|" }
  local amin, amax = ffi.new("int[1]"), ffi.new("int[1]")
  for i = 0, C.op_count() - 1 do
    C.op_arity(i, amin, amax)
    local lo, hi = amin[0], amax[0]
    local operands = lo == hi and tostring(lo) or (hi == 255 and lo .. "+" or lo .. "-" .. hi)
    local imms = ffi.string(C.op_imms(i))
    local f = C.op_feature(i)
    local feature = f >= 0 and ffi.string(T.feature_name(f)) or ""
    local doc = ffi.string(C.op_doc(i)):gsub("|", "\\|")
    rows[#rows + 1] = string.format("| `%s` | %s | %s | %s | %s |", ffi.string(C.op_name(i)), operands,
      imms ~= "" and ("`" .. imms .. "`") or "", feature, doc)
  end
  return table.concat(rows, "\n")
end

--- The document's text with its table replaced, or nil and why (no markers).
function M.render(text)
  local b = text:find(M.BEGIN, 1, true)
  local e = text:find(M.END, 1, true)
  if not b or not e or e < b then return nil, "no op table markers (" .. M.BEGIN .. " ... " .. M.END .. ")" end
  return text:sub(1, b - 1) .. M.BEGIN .. "\n\n" .. M.table() .. "\n\n" .. text:sub(e)
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function main(args)
  local check, path = false, "docs/ir.md"
  for _, a in ipairs(args) do
    if a == "--check" then check = true else path = a end
  end
  local text = read(path)
  local out, why = M.render(text)
  if not out then
    io.stderr:write(path, ": ", why, "\n")
    os.exit(2)
  end
  if out == text then return end
  if check then
    io.stderr:write(path, ": the op table is stale; run: cutelua tools/gen_ir_doc.lua ", path, "\n")
    os.exit(1)
  end
  local f = assert(io.open(path, "wb"))
  f:write(out)
  f:close()
  print("gen_ir_doc: rewrote the op table of " .. path)
end

if arg and type(arg[0]) == "string" and arg[0]:match("gen_ir_doc%.lua$") then main(arg) end
return M
