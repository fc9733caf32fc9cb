-- The pipeline picture of docs/hopper.md is what
-- docs/img/hopper/generate_pipeline.lua draws (redraw it with
-- `cutelua docs/img/hopper/generate_pipeline.lua` when the drawing changes).
describe("docs/hopper.md's pipeline picture", function()
  it("is up to date and shown", function()
    local dir = os.tmpname()
    os.remove(dir)
    local made = os.execute("mkdir -p '" .. dir .. "'")
    assert.truthy(made == 0 or made == true)
    local written = assert(loadfile("docs/img/hopper/generate_pipeline.lua"))(dir)
    assert.same({ "pipeline_stages.svg" }, written)
    local doc = assert(io.open("docs/hopper.md")):read("*a")
    local name = written[1]
    local fresh = assert(io.open(dir .. "/" .. name)):read("*a")
    local fh = io.open("docs/img/hopper/" .. name)
    assert.truthy(fh, "docs/img/hopper/" .. name .. " is missing: run cutelua docs/img/hopper/generate_pipeline.lua")
    local committed = fh:read("*a")
    fh:close()
    assert.is_true(committed == fresh, "docs/img/hopper/" .. name .. " is out of date: run cutelua "
      .. "docs/img/hopper/generate_pipeline.lua")
    assert.truthy(doc:find("img/hopper/" .. name, 1, true), name .. " is not shown in docs/hopper.md")
    os.remove(dir .. "/" .. name)
    os.remove(dir)
  end)
end)
