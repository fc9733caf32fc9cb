-- Draws docs/hopper.md's picture of a pipeline's stages over time:
--
--   cutelua docs/img/hopper/generate_pipeline.lua [outdir]   (default: docs/img/hopper)
--
-- The schedule is computed from the protocol cute.pipeline implements (a
-- stage is refilled once its consumers released it; the consumers take
-- k-blocks in order once their stage is full), with a TMA load of 2 time
-- units and a consumer step of 3, 4 stages and 10 k-blocks: the producer runs
-- ahead until every stage is in flight, then waits for releases. Each bar is
-- labelled with its k-block and the parity the waits use: the consumer waits
-- on full[s] with parity (k / S) % 2, the producer on empty[s] with the
-- opposite parity (its first S waits pass at once).
-- tests/spec/hopper/pipeline_docs_spec.lua checks the committed picture.
local outdir = ... or (arg and arg[1]) or "docs/img/hopper"

local S, K, LOAD, USE = 4, 10, 2, 3

-- the schedule
local issue, full, start, done = {}, {}, {}, {}
local producer_free, consumer_free = 0, 0
for k = 0, K - 1 do
  local free_at = k >= S and done[k - S] or 0 -- the release of the stage's previous k-block
  issue[k] = math.max(producer_free, free_at)
  producer_free = issue[k] + 1 -- the producer issues one load a time unit
  full[k] = issue[k] + LOAD
  start[k] = math.max(consumer_free, full[k])
  done[k] = start[k] + USE
  consumer_free = done[k]
end
local T = done[K - 1]

local CW, RH, X0, Y0 = 26, 34, 110, 40
local W, Hgt = X0 + T * CW + 20, Y0 + S * RH + 110
local out = {}
local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end

add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">', W, Hgt)
add('<rect width="%d" height="%d" fill="white"/>', W, Hgt)
add('<text x="%d" y="20" font-size="13">A %d-stage pipeline over %d k-blocks (TMA load: %d, consumer step: %d time units)'
  .. '</text>', X0, S, K, LOAD, USE)
for s = 0, S - 1 do
  add('<text x="10" y="%d">stage %d</text>', Y0 + s * RH + 21, s)
  add('<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4" stroke="#ccc"/>', X0, Y0 + s * RH + 4, T * CW, RH - 8)
end
for k = 0, K - 1 do
  local s, par = k % S, math.floor(k / S) % 2
  local y = Y0 + s * RH + 4
  -- loading (the TMA writes; the full barrier's phase completes at its end)
  add('<rect x="%d" y="%d" width="%d" height="%d" fill="#7fb2e5" stroke="#333"/>', X0 + issue[k] * CW, y,
    (full[k] - issue[k]) * CW, RH - 8)
  add('<text x="%d" y="%d">TMA %d</text>', X0 + issue[k] * CW + 3, y + 16, k)
  -- full, waiting for the consumers
  if start[k] > full[k] then
    add('<rect x="%d" y="%d" width="%d" height="%d" fill="#fde8a8" stroke="#333"/>', X0 + full[k] * CW, y,
      (start[k] - full[k]) * CW, RH - 8)
  end
  -- consumed (MMA); released at its end
  add('<rect x="%d" y="%d" width="%d" height="%d" fill="#8fd18f" stroke="#333"/>', X0 + start[k] * CW, y,
    (done[k] - start[k]) * CW, RH - 8)
  add('<text x="%d" y="%d">MMA %d  p%d</text>', X0 + start[k] * CW + 3, y + 16, k, par)
  -- the producer's acquire for this k-block waited on empty[s] with parity par ^ 1
  if k >= S and issue[k] == done[k - S] then
    add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#c33" stroke-width="2"/>', X0 + issue[k] * CW, y - 3,
      X0 + issue[k] * CW, y + RH - 5)
  end
end
-- the time axis
local ya = Y0 + S * RH + 8
for t = 0, T do
  add('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>', X0 + t * CW, ya, X0 + t * CW, ya + 4)
  if t % 2 == 0 then add('<text x="%d" y="%d" text-anchor="middle">%d</text>', X0 + t * CW, ya + 16, t) end
end
-- the legend
local yl = ya + 34
local legend = { { "#7fb2e5", "TMA k: loading; full[s] completes at its end (k-block k uses stage k % S)" },
  { "#fde8a8", "full, waiting for the consumers" },
  { "#8fd18f", "MMA k pN: consumers waited on full[s] with parity N = (k / S) % 2; they release empty[s] at its end" },
  { "#c33", "the producer's acquire of a refill: empty[s] waited with parity N ^ 1, passed at the release" } }
for i, l in ipairs(legend) do
  add('<rect x="%d" y="%d" width="14" height="10" fill="%s" stroke="#333"/>', X0, yl + (i - 1) * 15, l[1])
  add('<text x="%d" y="%d">%s</text>', X0 + 20, yl + (i - 1) * 15 + 9, l[2])
end
add('</svg>')

local name = "pipeline_stages.svg"
local f = assert(io.open(outdir .. "/" .. name, "w"))
f:write(table.concat(out, "\n"), "\n")
f:close()
return { name }
