-- The pictures of docs/hopper.md are what docs/img/hopper/generate.lua
-- draws from cutelua's layouts today (redraw them with
-- `cutelua docs/img/hopper/generate.lua` when a layout or the drawing changes).
describe("docs/hopper.md pictures", function()
  it("are up to date", function()
    local dir = os.tmpname()
    os.remove(dir)
    local made = os.execute("mkdir -p '" .. dir .. "'")
    assert.truthy(made == 0 or made == true)
    local written = assert(loadfile("docs/img/hopper/generate.lua"))(dir)
    assert.is_true(#written >= 5)
    local doc = assert(io.open("docs/hopper.md")):read("*a")
    for _, name in ipairs(written) do
      local fresh = assert(io.open(dir .. "/" .. name)):read("*a")
      local fh = io.open("docs/img/hopper/" .. name)
      assert.truthy(fh, "docs/img/hopper/" .. name .. " is missing: run cutelua docs/img/hopper/generate.lua")
      local committed = fh:read("*a")
      fh:close()
      assert.is_true(committed == fresh, "docs/img/hopper/" .. name .. " is out of date: run cutelua "
        .. "docs/img/hopper/generate.lua")
      assert.truthy(doc:find("img/hopper/" .. name, 1, true), name .. " is not shown in docs/hopper.md")
      os.remove(dir .. "/" .. name)
    end
    os.remove(dir)
  end)
end)
