"""The reference attention of tests/spec/attention/torch_spec.lua, computed by torch on
the GPU in float32 (a head at a time): O = softmax(scale Q K^T + mask) V, the row's
natural-log LSE, and A = softmax(...) |V| (the magnitude the error bound scales with).

    python3 tests/attention/sdpa_ref.py DIR CAUSAL LEFT RIGHT SCALE

Reads DIR/q.npy, k.npy, v.npy ((B, S, H, D): float32 holding bf16 values, or float16); the
mask keeps key j for query i when i + (Sk - Sq) - LEFT <= j <= i + (Sk - Sq) + RIGHT
(negative LEFT/RIGHT: unbounded; CAUSAL 1 sets RIGHT = 0), FlashAttention's
bottom-right alignment. Query head h reads KV head h // (Hq / Hkv). Writes DIR/o.npy,
DIR/a.npy ((B, S, Hq, D) float32) and DIR/lse.npy ((B, Hq, Sq) float32; -inf where a
row sees no key). Exits 77 without torch, numpy or a GPU."""
import sys

try:
    import numpy as np
    import torch
except Exception:  # noqa: BLE001
    sys.exit(77)
if not torch.cuda.is_available():
    sys.exit(77)

d, causal, left, right, scale = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
if causal:
    right = 0
q, k, v = (torch.from_numpy(np.load(f"{d}/{n}.npy")).cuda().float() for n in ("q", "k", "v"))  # f16 comes as float16
B, Sq, Hq, D = q.shape
Sk, Hkv = k.shape[1], k.shape[2]
G = Hq // Hkv
i = torch.arange(Sq, device="cuda")[:, None] + (Sk - Sq)
j = torch.arange(Sk, device="cuda")[None, :]
keep = torch.ones(Sq, Sk, dtype=torch.bool, device="cuda")
if left >= 0:
    keep &= j >= i - left
if right >= 0:
    keep &= j <= i + right
o = torch.zeros(B, Sq, Hq, D, device="cuda")
a = torch.zeros(B, Sq, Hq, D, device="cuda")
lse = torch.full((B, Hq, Sq), float("-inf"), device="cuda")
for b in range(B):
    for h in range(Hq):
        kh, vh = k[b, :, h // G, :], v[b, :, h // G, :]
        s = (q[b, :, h, :] @ kh.T) * scale
        s = s.masked_fill(~keep, float("-inf"))
        m = s.amax(dim=1, keepdim=True)
        seen = torch.isfinite(m)
        p = torch.exp(s - torch.where(seen, m, torch.zeros_like(m)))
        p = torch.where(keep, p, torch.zeros_like(p))
        den = p.sum(dim=1, keepdim=True)
        p = p / torch.where(den > 0, den, torch.ones_like(den))
        o[b, :, h, :] = p @ vh
        a[b, :, h, :] = p @ vh.abs()
        lse[b, h, :] = torch.where(seen[:, 0], m[:, 0] + torch.log(den[:, 0].clamp_min(1e-30)),
                                   torch.full_like(m[:, 0], float("-inf")))
np.save(f"{d}/o.npy", o.cpu().numpy())
np.save(f"{d}/a.npy", a.cpu().numpy())
np.save(f"{d}/lse.npy", lse.cpu().numpy())
