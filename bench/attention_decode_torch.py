"""torch's scaled_dot_product_attention at decode shapes (one query token a sequence
against a KV cache, GQA heads), each backend alone, for the same-run peer of
bench/attention_decode_probe.lua (which runs it once and reads its lines).

    python3 bench/attention_decode_torch.py B:CACHE ...     e.g. 1:32768 8:8192
    options (environment): HQ (32), HKV (8), D (128)

Prints one line a shape and backend: "torch BACKEND B:CACHE MS" (or "unavailable").
Q is (B, Hq, 1, D), K and V (B, Hkv, CACHE, D) bf16 with enable_gqa=True (torch 2.5
and later), so each backend reads the cache once as cute's decode does. The L2 is
flushed before each timed call as cute.bench does (torch_timing.l2_flusher), and each
call timed settled (torch_timing.median_ms). Exits 77 without torch or a GPU."""
import os
import sys

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception:  # noqa: BLE001
    sys.exit(77)
if not torch.cuda.is_available():
    sys.exit(77)
from torch_timing import l2_flusher, median_ms  # noqa: E402 (bench/, after the checks above)


HQ, HKV, D = (int(os.environ.get(k, v)) for k, v in (("HQ", 32), ("HKV", 8), ("D", 128)))
print("# " + torch.cuda.get_device_name() + " torch " + torch.__version__, flush=True)
flush = l2_flusher()
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION}
for arg in sys.argv[1:]:
    b, cache = (int(x) for x in arg.split(":"))
    q = torch.randn(b, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(b, HKV, cache, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    for name, backend in BACKENDS.items():
        try:
            with sdpa_kernel(backend):
                ms = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                               before=flush)
            print(f"torch {name} {b}:{cache} {ms:.5f}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"torch {name} {b}:{cache} unavailable {type(e).__name__}", flush=True)
    del q, k, v
    torch.cuda.empty_cache()
