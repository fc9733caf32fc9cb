"""torch's scaled_dot_product_attention on attention shapes, each backend (flash, cuDNN)
alone, for same-run ratios (bench/suites/attention.lua runs it once and reads its lines).

    python3 bench/attention_torch.py D:CAUSAL:B:H:S ...     e.g. 128:1:4:16:4096
    python3 bench/attention_torch.py                        the suite's shapes

Prints one line a shape and backend: "torch BACKEND D:CAUSAL:B:H:S MS TFLOPS" (or
"unavailable"). Exits 77 without torch or a GPU."""
import sys

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from torch_timing import median_ms
except Exception:  # noqa: BLE001
    sys.exit(77)
if not torch.cuda.is_available():
    sys.exit(77)


def shapes():
    if len(sys.argv) > 1:
        return [tuple(int(x) for x in a.split(":")) for a in sys.argv[1:]]
    out = []
    for d in (64, 128, 256):
        for causal in (0, 1):
            for s in (512, 2048, 8192, 16384):
                out.append((d, causal, max(1, 16384 // s), 32 if d == 64 else 16, s))
    return out


print("# " + torch.cuda.get_device_name() + " torch " + torch.__version__, flush=True)
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
for d, causal, b, h, s in shapes():
    key = f"{d}:{causal}:{b}:{h}:{s}"
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    flops = 4 * b * h * s * s * d * (0.5 if causal else 1)
    for name, backend in BACKENDS.items():
        try:
            with sdpa_kernel(backend):
                ms = median_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                                       is_causal=bool(causal)))
            print(f"torch {name} {key} {ms:.5f} {flops / ms / 1e9:.2f}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"torch {name} {key} unavailable {type(e).__name__}", flush=True)
    del q, k, v
