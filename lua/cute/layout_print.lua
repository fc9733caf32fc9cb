--- cute.layout_print: layouts as text tables and SVG pictures.
--
--   print_layout(L)                 the offset at each (row, column), as
--                                   CuTe's print_layout (format_layout: the string)
--   print_layout_tv(tv, tile_mn)    which (thread, value) holds each element
--                                   of an M x N tile (format_layout_tv)
--   print_svg(L, path)              a coloured grid of offsets, one call per
--                                   file (svg_layout: the string)
--   print_svg_tv(tv, tile_mn, path) the T<thread>V<value> grid of a
--                                   thread-value layout, as CuTe's
--                                   print_latex_tv draws it (svg_tv)
--   print_latex(L, path)            the same pictures as LaTeX (TikZ,
--   print_latex_tv(tv, tile, path)  a standalone document: latex_layout, latex_tv)
--
-- Mode 0 of a layout runs down the rows and mode 1 across the columns
-- (a rank-1 layout is one row); cell (i, j) shows L(i, j), each mode indexed
-- 1-D. Layouts must be static. A tile_mn is a shape (M, N) or a tuple of
-- tilers (their sizes are used); a thread-value layout maps (t, v) to the
-- column-major index of an element of that tile (make_layout_tv's form).
--
-- SVG structure (the spec parses it): one <g class="cell" id="c-ROW-COL">
-- per cell holding a <rect> and a <text>; row and column indices and a
-- caption outside the grid.
--
-- Size limit: a table or picture has at most `max_cells` cells (and a
-- thread-value layout at most as many (thread, value) pairs); a larger one
-- is an error naming the limit. Each function takes an optional last
-- argument {max_cells = N} (math.huge: no limit); the default is the module
-- setting cute.layout_print.max_cells.
local it = require "cute.int_tuple"
local L = require "cute.layout"
local err = require "cute._err"

local show = it.pretty_str

local M = {}

--- The default limit on the cells of one table or picture: 256 x 256. A
-- 4096 x 4096 table would take a minute and hundreds of MB.
M.max_cells = 65536

local function check_limit(op, v, what)
  -- (v ~= v: NaN)
  if type(v) ~= "number" or v ~= v or v < 1 or (v ~= math.floor(v) and v ~= math.huge) then
    err.raise("%s: %s must be a positive integer (or math.huge for no limit), got %s", op, what, show(v))
  end
  return v
end

-- the cell limit for this call: opts.max_cells, or the module setting
local function limit_of(opts, op)
  if opts == nil then return check_limit(op, M.max_cells, "cute.layout_print.max_cells") end
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then
    err.raise("%s: the options must be a table such as {max_cells = 100000}, got %s", op, show(opts))
  end
  for k in pairs(opts) do
    if k ~= "max_cells" then err.raise("%s: unknown option %s (the option is max_cells)", op, show(k)) end
  end
  if opts.max_cells == nil then return check_limit(op, M.max_cells, "cute.layout_print.max_cells") end
  return check_limit(op, opts.max_cells, "max_cells")
end

local function over_limit(op, what, n, unit, limit)
  err.raise("%s: %s has %s %s, more than max_cells = %s (pass {max_cells = N} as the last argument, "
    .. "or set cute.layout_print.max_cells)", op, what, show(n), unit, show(limit))
end

-- the grid dimensions of a rank-1 or rank-2 layout
local function dims(l, op)
  if not L.is_layout(l) and not L.is_composed_layout(l) then
    err.raise("%s: expected a layout, got %s", op, type(l) == "table" and show(l) or type(l))
  end
  local r = L.rank(l)
  if r > 2 then err.raise("%s: %s has rank %d; only rank-1 and rank-2 layouts are drawn", op, tostring(l), r) end
  local rows = r == 2 and L.size(l, 0) or 1
  local cols = r == 2 and L.size(l, 1) or L.size(l)
  if type(rows) ~= "number" or type(cols) ~= "number" then
    err.raise("%s: %s has dynamic extents; only static layouts are drawn", op, tostring(l))
  end
  return rows, cols, r
end

local function layout_cells(l, op, opts)
  local limit = limit_of(opts, op)
  local rows, cols, r = dims(l, op)
  if rows * cols > limit then over_limit(op, tostring(l), rows * cols, "cells", limit) end
  local cells = {}
  for i = 0, rows - 1 do
    cells[i] = {}
    for j = 0, cols - 1 do
      local v = r == 2 and l({ i, j }) or l(j)
      if type(v) ~= "number" and not it.is_tuple(v) then
        err.raise("%s: %s has dynamic strides; only static layouts are drawn", op, tostring(l))
      end
      cells[i][j] = { text = show(v), key = type(v) == "number" and v or j + i * cols }
    end
  end
  return rows, cols, cells
end

local function tile_dims(tile_mn, op)
  local t = it.is_tuple(tile_mn) and tile_mn or { tile_mn }
  if #t > 2 then err.raise("%s: tile %s has more than two modes", op, show(tile_mn)) end
  local m = L.size(t[1])
  local n = t[2] and L.size(t[2]) or 1
  if type(m) ~= "number" or type(n) ~= "number" then err.raise("%s: tile %s must be static", op, show(tile_mn)) end
  return m, n
end

local function tv_cells(tv, tile_mn, op, opts)
  local limit = limit_of(opts, op)
  if not L.is_layout(tv) or L.rank(tv) ~= 2 then
    err.raise("%s: expected a rank-2 (thread, value) layout, got %s", op, tostring(tv))
  end
  local rows, cols = tile_dims(tile_mn, op)
  if rows * cols > limit then over_limit(op, "the tile " .. show(tile_mn), rows * cols, "cells", limit) end
  local nt, nv = L.size(tv, 0), L.size(tv, 1)
  if type(nt) ~= "number" or type(nv) ~= "number" then err.raise("%s: %s must be static", op, tostring(tv)) end
  if nt * nv > limit then over_limit(op, tostring(tv), nt * nv, "(thread, value) pairs", limit) end
  local cells = {}
  for i = 0, rows - 1 do cells[i] = {} end
  for v = 0, nv - 1 do
    for t = 0, nt - 1 do
      local idx = tv({ t, v })
      if type(idx) ~= "number" then err.raise("%s: %s must be static", op, tostring(tv)) end
      if idx < 0 or idx >= rows * cols then
        err.raise("%s: %s maps (%d,%d) to %d, outside the %dx%d tile %s", op, tostring(tv), t, v, idx, rows, cols,
          show(tile_mn))
      end
      local i, j = idx % rows, math.floor(idx / rows)
      if not cells[i][j] then cells[i][j] = { text = "T" .. t .. "V" .. v, key = t, v = v } end
    end
  end
  return rows, cols, cells
end

-- Text -------------------------------------------------------------------------

local function text_grid(title, rows, cols, cells)
  local w = #tostring(cols - 1)
  for i = 0, rows - 1 do
    for j = 0, cols - 1 do
      local c = cells[i][j]
      if c and #c.text > w then w = #c.text end
    end
  end
  local lw = #tostring(rows - 1)
  local pad = string.rep(" ", lw + 1)
  local out = { title }
  local head = { pad }
  for j = 0, cols - 1 do head[#head + 1] = string.format(" %" .. w .. "d ", j) end
  out[#out + 1] = (table.concat(head, " "):gsub("%s+$", ""))
  local sep = pad .. "+" .. string.rep(string.rep("-", w + 2) .. "+", cols)
  out[#out + 1] = sep
  for i = 0, rows - 1 do
    local row = { string.format("%" .. lw .. "d |", i) }
    for j = 0, cols - 1 do
      local c = cells[i][j]
      row[#row + 1] = string.format(" %" .. w .. "s |", c and c.text or "")
    end
    out[#out + 1] = table.concat(row)
    out[#out + 1] = sep
  end
  return table.concat(out, "\n") .. "\n"
end

local function format_layout(l, opts, op)
  local rows, cols, cells = layout_cells(l, op, opts)
  return text_grid(tostring(l), rows, cols, cells)
end

--- The table of offsets of a rank-1 or rank-2 layout, as a string
-- (opts: {max_cells = N}, see above).
-- @tparam Layout l a rank-1 or rank-2 layout
-- @param opts optional: {max_cells = N}
-- @treturn string
-- @usage print(cute.format_layout(cute.make_layout({4, 8})))
function M.format_layout(l, opts) return format_layout(l, opts, "format_layout") end

--- Prints the table of offsets of a layout.
-- @tparam Layout l a rank-1 or rank-2 layout
-- @param opts optional: {max_cells = N}
-- @usage cute.print_layout(cute.make_layout({4, 8}, {8, 1}))
function M.print_layout(l, opts)
  local s = format_layout(l, opts, "print_layout")
  io.write(s)
end

local function format_layout_tv(tv, tile_mn, opts, op)
  local rows, cols, cells = tv_cells(tv, tile_mn, op, opts)
  return text_grid(tostring(tv) .. " over " .. show(tile_mn), rows, cols, cells)
end

--- The T<thread>V<value> table of a thread-value layout over tile_mn, as a string.
-- @tparam Layout tv the (thread, value) -> coordinate layout
-- @param tile_mn the tile's shape {M, N}
-- @param opts optional: {max_cells = N}
-- @treturn string
-- @usage print(cute.format_layout_tv(tv, {16, 8}))
function M.format_layout_tv(tv, tile_mn, opts) return format_layout_tv(tv, tile_mn, opts, "format_layout_tv") end

--- Prints the T<thread>V<value> table of a thread-value layout over tile_mn.
-- @tparam Layout tv the (thread, value) -> coordinate layout
-- @param tile_mn the tile's shape {M, N}
-- @param opts optional: {max_cells = N}
-- @usage cute.print_layout_tv(cute.make_layout_tv(thr, val), {8, 8})
function M.print_layout_tv(tv, tile_mn, opts)
  local s = format_layout_tv(tv, tile_mn, opts, "print_layout_tv")
  io.write(s)
end

-- SVG --------------------------------------------------------------------------

-- 16 light colours, far enough apart to tell neighbours (and 8 offsets, or
-- 16 threads, apart) from each other
local PALETTE = {
  "#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6", "#ffff99", "#8dd3c7", "#fccde5",
  "#d9d9d9", "#bebada", "#ccebc5", "#ffed6f", "#80b1d3", "#fdb462", "#b3de69", "#e5c494",
}

local function xml_escape(s)
  return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;"):gsub('"', "&quot;"))
end

local function svg_grid(title, rows, cols, cells, colour_of)
  local maxlen = 1
  for i = 0, rows - 1 do
    for j = 0, cols - 1 do
      local c = cells[i][j]
      if c and #c.text > maxlen then maxlen = #c.text end
    end
  end
  local cw = math.max(28, 7 * maxlen + 12)
  local ch = 22
  local hw, hh = math.floor(cw / 2), math.floor(ch / 2)
  local x0 = 14 + 7 * #tostring(rows - 1)
  local y0 = 44
  -- wide enough for the caption too (7 px a character of 12 px monospace)
  local width = math.max(x0 + cols * cw + 10, x0 + 7 * #title + 10)
  local height = y0 + rows * ch + 10
  local o = {}
  o[#o + 1] = '<?xml version="1.0" encoding="UTF-8"?>'
  o[#o + 1] = string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">',
    width, height, width, height)
  o[#o + 1] = "<title>" .. xml_escape(title) .. "</title>"
  o[#o + 1] = string.format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', width, height)
  o[#o + 1] = '<g font-family="monospace" font-size="12" text-anchor="middle" dominant-baseline="central">'
  o[#o + 1] = string.format('<text class="caption" x="%d" y="12" text-anchor="start">%s</text>', x0, xml_escape(title))
  for j = 0, cols - 1 do
    o[#o + 1] = string.format('<text class="col" x="%d" y="%d">%d</text>', x0 + j * cw + hw, y0 - 10, j)
  end
  for i = 0, rows - 1 do
    o[#o + 1] = string.format('<text class="row" x="%d" y="%d" text-anchor="end">%d</text>', x0 - 4,
      y0 + i * ch + hh, i)
  end
  for i = 0, rows - 1 do
    for j = 0, cols - 1 do
      local c = cells[i][j]
      local x, y = x0 + j * cw, y0 + i * ch
      local fill = c and colour_of(c) or "#ffffff"
      o[#o + 1] = string.format('<g class="cell" id="c-%d-%d"><rect x="%d" y="%d" width="%d" height="%d" fill="%s" '
        .. 'stroke="#333333" stroke-width="1"/><text x="%d" y="%d">%s</text></g>',
        i, j, x, y, cw, ch, fill, x + hw, y + hh, c and xml_escape(c.text) or "")
    end
  end
  o[#o + 1] = "</g>"
  o[#o + 1] = "</svg>"
  return table.concat(o, "\n") .. "\n"
end

local function write(s, path, op)
  if path == nil then
    io.write(s)
    return nil
  end
  local fh, why = io.open(path, "w")
  if not fh then err.raise("%s: cannot write %s: %s", op, tostring(path), tostring(why)) end
  fh:write(s)
  fh:close()
  return path
end

local function svg_layout(l, opts, op)
  local rows, cols, cells = layout_cells(l, op, opts)
  return svg_grid(tostring(l), rows, cols, cells, function(c) return PALETTE[c.key % 8 + 1] end)
end

--- The SVG picture of a rank-1 or rank-2 layout (colour by offset).
-- @tparam Layout l a rank-1 or rank-2 layout
-- @param opts optional: {max_cells = N}
-- @treturn string the SVG document
-- @usage local svg = cute.svg_layout(cute.make_layout({4, 8}))
function M.svg_layout(l, opts) return svg_layout(l, opts, "svg_layout") end

-- print_svg(x, path, opts) and print_svg(x, opts): a table in the place of
-- the path is the options
local function path_opts(path, opts, op)
  if type(path) == "table" and opts == nil then return nil, path end
  if path ~= nil and type(path) ~= "string" then
    err.raise("%s: the path must be a string (or nil for stdout), got %s", op, show(path))
  end
  return path, opts
end

--- Writes the SVG picture of a layout to `path` (stdout without one);
-- returns the path.
-- @tparam Layout l a rank-1 or rank-2 layout
-- @param path optional: the file to write
-- @param opts optional: {max_cells = N}
-- @return the path
-- @usage cute.print_svg(cute.make_layout({4, 8}), "layout.svg")
function M.print_svg(l, path, opts)
  path, opts = path_opts(path, opts, "print_svg")
  return write(svg_layout(l, opts, "print_svg"), path, "print_svg")
end

-- LaTeX (TikZ) -----------------------------------------------------------------

local function tex_escape(s)
  return (s:gsub("[\\{}$&#_%%^~]", function(c)
    if c == "\\" then return "\\textbackslash{}" end
    if c == "^" then return "\\^{}" end
    if c == "~" then return "\\~{}" end
    return "\\" .. c
  end))
end

-- A standalone LaTeX document: a TikZ grid, cell (i, j) at column j, row i
-- (downwards), filled with the colour of its key, row and column indices
-- outside, the caption above. Compiles with pdflatex (standalone, tikz).
local function tex_grid(title, rows, cols, cells, colour_index)
  local o = {}
  o[#o + 1] = "% " .. title:gsub("\n", " ")
  o[#o + 1] = "\\documentclass[tikz,border=2mm]{standalone}"
  o[#o + 1] = "\\begin{document}"
  o[#o + 1] = "\\begin{tikzpicture}[x=1cm,y=-0.6cm,every node/.style={font=\\ttfamily\\footnotesize}]"
  for k, hex in ipairs(PALETTE) do o[#o + 1] = string.format("\\definecolor{c%d}{HTML}{%s}", k, hex:sub(2)) end
  o[#o + 1] = string.format("\\node[anchor=south west] at (-0.5,-1.2) {%s};", tex_escape(title))
  for j = 0, cols - 1 do o[#o + 1] = string.format("\\node at (%d,-0.8) {%d};", j, j) end
  for i = 0, rows - 1 do o[#o + 1] = string.format("\\node[anchor=east] at (-0.55,%d) {%d};", i, i) end
  for i = 0, rows - 1 do
    for j = 0, cols - 1 do
      local c = cells[i][j]
      o[#o + 1] = string.format("\\filldraw[fill=%s,draw=black] (%g,%g) rectangle (%g,%g); \\node at (%d,%d) {%s};",
        c and ("c" .. colour_index(c)) or "white", j - 0.5, i - 0.5, j + 0.5, i + 0.5, j, i,
        c and tex_escape(c.text) or "")
    end
  end
  o[#o + 1] = "\\end{tikzpicture}"
  o[#o + 1] = "\\end{document}"
  return table.concat(o, "\n") .. "\n"
end

--- The LaTeX (TikZ, standalone document) picture of a rank-1 or rank-2
-- layout, as CuTe's print_latex draws it: the offset in each cell, coloured by offset.
-- @tparam Layout l a rank-1 or rank-2 layout
-- @param opts optional: {max_cells = N}
-- @treturn string the LaTeX document
-- @usage local tex = cute.latex_layout(cute.make_layout({4, 8}))
function M.latex_layout(l, opts)
  local rows, cols, cells = layout_cells(l, "latex_layout", opts)
  return tex_grid(tostring(l), rows, cols, cells, function(c) return c.key % 8 + 1 end)
end

--- Writes latex_layout(l) to `path` (stdout without one); returns the path.
-- @tparam Layout l a rank-1 or rank-2 layout
-- @param path optional: the file to write
-- @param opts optional: {max_cells = N}
-- @return the path
-- @usage cute.print_latex(cute.make_layout({4, 8}), "layout.tex")
function M.print_latex(l, path, opts)
  path, opts = path_opts(path, opts, "print_latex")
  local rows, cols, cells = layout_cells(l, "print_latex", opts)
  return write(tex_grid(tostring(l), rows, cols, cells, function(c) return c.key % 8 + 1 end), path, "print_latex")
end

--- The LaTeX picture of a thread-value layout over tile_mn: T<thread>V<value>
-- in each cell, coloured by thread (CuTe's print_latex_tv).
-- @tparam Layout tv the (thread, value) -> coordinate layout
-- @param tile_mn the tile's shape {M, N}
-- @param opts optional: {max_cells = N}
-- @treturn string the LaTeX document
-- @usage local tex = cute.latex_tv(tv, {16, 8})
function M.latex_tv(tv, tile_mn, opts)
  local rows, cols, cells = tv_cells(tv, tile_mn, "latex_tv", opts)
  return tex_grid(tostring(tv) .. " over " .. show(tile_mn), rows, cols, cells, function(c) return c.key % 16 + 1 end)
end

--- Writes latex_tv(tv, tile_mn) to `path` (stdout without one); returns the path.
-- @tparam Layout tv the (thread, value) -> coordinate layout
-- @param tile_mn the tile's shape {M, N}
-- @param path optional: the file to write
-- @param opts optional: {max_cells = N}
-- @return the path
-- @usage cute.print_latex_tv(tv, {16, 8}, "tv.tex")
function M.print_latex_tv(tv, tile_mn, path, opts)
  path, opts = path_opts(path, opts, "print_latex_tv")
  return write(M.latex_tv(tv, tile_mn, opts), path, "print_latex_tv")
end

local function svg_tv(tv, tile_mn, opts, op)
  local rows, cols, cells = tv_cells(tv, tile_mn, op, opts)
  return svg_grid(tostring(tv) .. " over " .. show(tile_mn), rows, cols, cells,
    function(c) return PALETTE[c.key % 16 + 1] end)
end

--- The SVG picture of a thread-value layout over tile_mn (colour by thread).
-- @tparam Layout tv the (thread, value) -> coordinate layout
-- @param tile_mn the tile's shape {M, N}
-- @param opts optional: {max_cells = N}
-- @treturn string the SVG document
-- @usage local svg = cute.svg_tv(tv, {16, 8})
function M.svg_tv(tv, tile_mn, opts) return svg_tv(tv, tile_mn, opts, "svg_tv") end

--- Writes the SVG picture of a thread-value layout to `path` (stdout without one).
-- @tparam Layout tv the (thread, value) -> coordinate layout
-- @param tile_mn the tile's shape {M, N}
-- @param path optional: the file to write
-- @param opts optional: {max_cells = N}
-- @return the path
-- @usage cute.print_svg_tv(tv, {16, 8}, "tv.svg")
function M.print_svg_tv(tv, tile_mn, path, opts)
  path, opts = path_opts(path, opts, "print_svg_tv")
  return write(svg_tv(tv, tile_mn, opts, "print_svg_tv"), path, "print_svg_tv")
end

return M
