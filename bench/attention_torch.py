"""torch's scaled_dot_product_attention on the shapes of bench/attention_sm90_probe.lua,
each backend (flash, cuDNN) alone, for same-run ratios. Exits 77 without torch or a GPU."""
import sys

try:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
except Exception:  # noqa: BLE001
    sys.exit(77)
if not torch.cuda.is_available():
    sys.exit(77)

print(torch.cuda.get_device_name(), "torch", torch.__version__)
backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
for d in (64, 128, 256):
    for causal in (False, True):
        for s in (1024, 4096, 8192):
            h = 32 if d == 64 else 16
            b = max(1, 16384 // s)
            q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            flops = 4 * b * h * s * s * d * (0.5 if causal else 1)
            for name, be in backends.items():
                try:
                    with sdpa_kernel(be):
                        f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        for _ in range(3):
                            f()
                        torch.cuda.synchronize()
                        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        times = []
                        for _ in range(20):
                            st.record()
                            f()
                            en.record()
                            en.synchronize()
                            times.append(st.elapsed_time(en))
                    ms = sorted(times)[len(times) // 2]
                    print(f"torch {name} d={d} causal={causal} b={b} h={h} s={s}: {ms:.3f} ms, {flops / ms / 1e9:.1f} TFLOP/s")
                except Exception as e:  # noqa: BLE001
                    print(f"torch {name} d={d} causal={causal} s={s}: unavailable ({type(e).__name__})")
