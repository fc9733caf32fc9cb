-- Printing: tostring, the text tables of print_layout / print_layout_tv, and
-- the SVG pictures, parsed back and checked cell by cell.
local cute = require "cute"

-- A small XML parser for the subset the SVG writer uses: the declaration,
-- elements with double-quoted attributes, self-closing tags and text. It
-- fails on anything malformed (unknown syntax, mismatched or unclosed tags).
local function parse_xml(s)
  local root = { name = "#root", children = {} }
  local stack = { root }
  local decl = s:match("^<%?xml[^?]*%?>%s*")
  assert(decl, "missing XML declaration")
  local pos = #decl + 1
  while pos <= #s do
    local top = stack[#stack]
    local lt = s:find("<", pos, true)
    if not lt then
      assert(s:sub(pos):match("^%s*$"), "text after the root element")
      break
    end
    local text = s:sub(pos, lt - 1)
    if text:match("%S") then top.text = (top.text or "") .. text end
    local close = s:match("^</([%w:%-]+)>", lt)
    if close then
      assert(top.name == close, "mismatched </" .. close .. "> closing <" .. top.name .. ">")
      stack[#stack] = nil
      pos = lt + #close + 3
    else
      local name, attrs, selfclose, stop = s:match("^<([%w:%-]+)(.-)(/?)>()", lt)
      assert(name, "malformed tag at " .. lt .. ": " .. s:sub(lt, lt + 40))
      local el = { name = name, attrs = {}, children = {} }
      local rest = attrs:gsub('%s*([%w:%-]+)="([^"<]*)"', function(k, v)
        assert(el.attrs[k] == nil, "duplicate attribute " .. k)
        el.attrs[k] = v
        return ""
      end)
      assert(rest:match("^%s*$"), "malformed attributes: " .. attrs)
      top.children[#top.children + 1] = el
      if selfclose == "" then stack[#stack + 1] = el end
      pos = stop
    end
  end
  assert(#stack == 1, "unclosed <" .. stack[#stack].name .. ">")
  assert(#root.children == 1 and root.children[1].name == "svg", "expected one <svg> root")
  return root.children[1]
end

local function each(el, f)
  f(el)
  for _, c in ipairs(el.children) do each(c, f) end
end

-- the cells of a parsed picture: cells[row][col] = {x, y, w, h, fill, label}
local function cells_of(svg)
  local cells, n = {}, 0
  each(svg, function(el)
    if el.name == "g" and el.attrs.class == "cell" then
      local i, j = el.attrs.id:match("^c%-(%d+)%-(%d+)$")
      i, j = tonumber(i), tonumber(j)
      local rect, text = el.children[1], el.children[2]
      assert.equal("rect", rect.name)
      assert.equal("text", text.name)
      cells[i] = cells[i] or {}
      cells[i][j] = {
        x = tonumber(rect.attrs.x), y = tonumber(rect.attrs.y), w = tonumber(rect.attrs.width),
        h = tonumber(rect.attrs.height), fill = rect.attrs.fill, label = text.text or "",
        tx = tonumber(text.attrs.x), ty = tonumber(text.attrs.y),
      }
      n = n + 1
    end
  end)
  return cells, n
end

-- every cell sits on the grid: column j right of column j-1, row i below row i-1,
-- with its label at the cell's centre
local function check_grid(cells, rows, cols)
  local c00 = cells[0][0]
  for i = 0, rows - 1 do
    for j = 0, cols - 1 do
      local c = cells[i][j]
      assert.equal(c00.x + j * c00.w, c.x)
      assert.equal(c00.y + i * c00.h, c.y)
      assert.is_true(c.tx > c.x and c.tx < c.x + c.w and c.ty > c.y and c.ty < c.y + c.h)
    end
  end
end

local function capture(f, ...)
  local out, saved = {}, io.write
  io.write = function(...) -- luacheck: ignore 122
    for i = 1, select("#", ...) do out[#out + 1] = tostring((select(i, ...))) end
  end
  local ok, e = pcall(f, ...)
  io.write = saved -- luacheck: ignore 122
  assert(ok, e)
  return table.concat(out)
end

describe("layout printing", function()
  it("prints layouts and tuples in CuTe notation", function()
    assert.equal("((2,2),3):((24,2),8)", tostring(cute.composition(cute.make_layout({ 6, 2 }, { 8, 2 }),
      cute.make_layout({ 4, 3 }, { 3, 1 }))))
    assert.equal("(4,(2,3))", cute.pretty_str({ 4, { 2, 3 } }))
    assert.equal("S<3,4,3> o 0 o (8,64):(64,1)",
      tostring(cute.composition(cute.Swizzle(3, 4, 3), cute.make_layout({ 8, 64 }, { 64, 1 }))))
  end)

  it("tabulates the offsets of a rank-2 layout", function()
    local expected = table.concat({
      "(2,3):(3,1)",
      "    0   1   2",
      "  +---+---+---+",
      "0 | 0 | 1 | 2 |",
      "  +---+---+---+",
      "1 | 3 | 4 | 5 |",
      "  +---+---+---+",
      "",
    }, "\n")
    local l = cute.make_layout({ 2, 3 }, { 3, 1 })
    assert.equal(expected, cute.format_layout(l))
    assert.equal(expected, capture(cute.print_layout, l))
    -- hierarchical modes are indexed 1-D; a rank-1 layout is one row
    local t = cute.format_layout(cute.make_layout({ { 2, 2 }, 2 }, { { 1, 4 }, 2 }))
    assert.matches("\n3 | 5 | 7 |\n", t, 1, true)
    assert.matches("\n0 | 0 | 2 | 4 | 6 |\n", cute.format_layout(cute.make_layout(4, 2)), 1, true)
  end)

  it("tabulates which thread and value hold each element of a tile", function()
    local tiler, tv = cute.make_layout_tv(cute.make_layout({ 2, 2 }, { 2, 1 }), cute.make_layout({ 1, 2 }))
    local s = cute.format_layout_tv(tv, tiler)
    assert.matches("\n0 | T0V0 | T0V1 | T1V0 | T1V1 |\n", s, 1, true)
    assert.matches("\n1 | T2V0 | T2V1 | T3V0 | T3V1 |\n", s, 1, true)
  end)

  it("draws a layout as an SVG grid of offsets", function()
    local l = cute.make_layout({ 4, { 2, 3 } }, { 2, { 1, 8 } })
    local svg = parse_xml(cute.svg_layout(l))
    assert.equal("http://www.w3.org/2000/svg", svg.attrs.xmlns)
    local cells, n = cells_of(svg)
    assert.equal(24, n)
    check_grid(cells, 4, 6)
    local fills = {}
    for i = 0, 3 do
      for j = 0, 5 do
        assert.equal(tostring(l(i, j)), cells[i][j].label)
        fills[cells[i][j].fill] = true
      end
    end
    local colours = 0
    for _ in pairs(fills) do colours = colours + 1 end
    assert.is_true(colours >= 4, "a coloured grid")
    local title
    each(svg, function(el) if el.name == "title" then title = el.text end end)
    assert.equal("(4,(2,3)):(2,(1,8))", title)
  end)

  it("draws a thread-value layout as T<t>V<v> cells", function()
    local thr, val = cute.make_layout({ 4, 2 }, { 2, 1 }), cute.make_layout({ 2, 2 })
    local tiler, tv = cute.make_layout_tv(thr, val)
    local svg = parse_xml(cute.svg_tv(tv, tiler))
    local cells, n = cells_of(svg)
    local m, ncols = tiler[1], tiler[2]
    assert.equal(m * ncols, n)
    check_grid(cells, m, ncols)
    for t = 0, cute.size(thr) - 1 do
      for v = 0, cute.size(val) - 1 do
        local idx = tv(t, v)
        assert.equal(string.format("T%dV%d", t, v), cells[idx % m][math.floor(idx / m)].label)
      end
    end
    -- a swizzled layout escapes its '<' in the caption
    local text = cute.svg_layout(cute.composition(cute.Swizzle(1, 0, 1), cute.make_layout({ 2, 2 })))
    assert.matches("S&lt;1,0,1&gt;", text, 1, true)
    parse_xml(text)
  end)

  it("writes pictures to files that render", function()
    local dir = os.tmpname()
    os.remove(dir)
    local lpath, tvpath = dir .. "-layout.svg", dir .. "-tv.svg"
    assert.equal(lpath, cute.print_svg(cute.make_layout({ 8, 8 }, { 8, 1 }), lpath))
    local tiler, tv = cute.make_layout_tv(cute.make_layout({ 4, 8 }, { 8, 1 }), cute.make_layout({ 2, 2 }, { 2, 1 }))
    assert.equal(tvpath, cute.print_svg_tv(tv, tiler, tvpath))
    for _, p in ipairs { lpath, tvpath } do
      local fh = assert(io.open(p))
      local s = fh:read("*a")
      fh:close()
      parse_xml(s)
      -- rsvg-convert (librsvg2-bin, installed by scripts/install-deps) renders it
      if os.execute("command -v rsvg-convert >/dev/null 2>&1") == 0 then
        assert.equal(0, os.execute("rsvg-convert -o " .. p .. ".png " .. p))
        local png = assert(io.open(p .. ".png", "rb"))
        assert.equal("\137PNG", png:read(4))
        png:close()
        os.remove(p .. ".png")
      else
        print("\nnote: rsvg-convert not found; the SVG was parsed but not rendered")
      end
      os.remove(p)
    end
  end)

  it("makes the SVG wide enough for its caption", function()
    -- a 2 x 2 grid under a long caption
    local l = cute.composition(cute.Swizzle(1, 0, 1), cute.make_layout({ 2, 2 }, { 1, 2 }))
    local text = cute.svg_layout(l)
    local width = tonumber(text:match('<svg[^>]* width="(%d+)"'))
    assert.is_true(width >= 7 * #tostring(l), width .. " px for " .. #tostring(l) .. " characters")
  end)

  it("draws layouts and thread-value layouts as LaTeX (TikZ), cell by cell", function()
    local l = cute.make_layout({ 3, 4 }, { 4, 1 })
    local tex = cute.latex_layout(l)
    assert.matches("^%% %(3,4%):%(4,1%)\n\\documentclass%[tikz", tex)
    assert.matches("\\end{tikzpicture}\n\\end{document}\n$", tex)
    local n = 0
    for x, y, text in tex:gmatch("\\node at %((%d+),(%d+)%) {([^}]*)};") do
      n = n + 1
      assert.equal(tostring(l(tonumber(y), tonumber(x))), text)
    end
    assert.equal(12, n)
    -- TeX's special characters in captions are escaped
    local sw = cute.latex_layout(cute.composition(cute.Swizzle(1, 0, 1), cute.make_layout({ 2, 2 })))
    assert.is_nil(sw:match("\n\\node%[anchor=south west%][^\n]*[^\\][_^]"))
    local thr, val = cute.make_layout({ 4, 2 }, { 2, 1 }), cute.make_layout({ 2, 2 })
    local tiler, tv = cute.make_layout_tv(thr, val)
    local tvtex = cute.latex_tv(tv, tiler)
    assert.equal(tiler[1] * tiler[2], select(2, tvtex:gsub("\\filldraw", "")))
    assert.matches("{T0V0}", tvtex, 1, true)
    -- the cell limit applies
    assert.has_error(function() cute.latex_layout(cute.make_layout({ 512, 512 })) end)
  end)
end)
