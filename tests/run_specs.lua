--- Runs busted spec files inside cutelua, so specs can use everything the
-- host provides. GPU specs carry the tag `gpu`; where no GPU is usable they
-- are excluded, and this says so (with the reason) rather than skip quietly.
--
--   cutelua tests/run_specs.lua [busted options] FILE...
local args = { [0] = "busted" }
for i = 1, #arg do args[#args + 1] = arg[i] end

local function gpu_status()
  local ok, cute = pcall(require, "cute")
  if not ok then return false, "cute failed to load: " .. tostring(cute) end
  if cute.gpu_available then
    local available, why = cute.gpu_available()
    return available, why and why:match("^[^\n]*")
  end
  local lib = cute.libraries().cuda
  if not lib.ok then return false, (lib.error:match("^[^\n]*")) end
  return false, "the CUDA runtime module is not built yet"
end

local function count_gpu_specs(files)
  local n = 0
  for _, f in ipairs(files) do
    local fh = io.open(f)
    if fh then
      for line in fh:lines() do
        if line:find("#gpu", 1, true) then n = n + 1 end
      end
      fh:close()
    end
  end
  return n
end

local ok, why = gpu_status()
if not ok then
  local files = {}
  for i = 1, #arg do
    if arg[i]:match("%.lua$") then files[#files + 1] = arg[i] end
  end
  local n = count_gpu_specs(files)
  if n > 0 then
    io.stderr:write(string.format("SKIPPED %d GPU spec(s) tagged #gpu: no usable GPU (%s)\n", n, why))
  end
  table.insert(args, 1, "--exclude-tags=gpu")
  args[0] = "busted"
end

arg = args -- busted reads its command line from the global `arg`
require "busted.runner" { standalone = false }
