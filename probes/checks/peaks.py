"""Peak figures of known devices: the yardstick for the perf group's "fraction of peak".

Each row: a pattern matched against the device name torch reports (``get_device_name``; the first row whose
every word occurs in the name, case-insensitive, wins, so more specific rows come first), the peak float32
FLOP/s without tensor cores / TF32 (the probe turns TF32 off), the peak dense float16/bfloat16 tensor FLOP/s
(without sparsity), the memory bandwidth in bytes/s, and the vendor's page the numbers come from. A figure
the source does not give is None; a device not listed has no fraction (unknown is null, never a guess).
"""

# (name words, float32 FLOP/s, float16/bfloat16 dense FLOP/s, memory bytes/s, source)
PEAKS = (
    (("H200",), 67e12, 989.5e12, 4.8e12,
     "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM: FP32 67 TFLOPS, BF16/FP16 1,979 TFLOPS with sparsity, "
     "4.8 TB/s)"),
    (("H100", "PCIe"), 51e12, 756e12, 2.0e12,
     "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe: FP32 51 TFLOPS, BF16 1,513 TFLOPS with sparsity, "
     "2 TB/s)"),
    (("H100",), 67e12, 989.5e12, 3.35e12,
     "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: FP32 67 TFLOPS, BF16 1,979 TFLOPS with sparsity, "
     "3.35 TB/s)"),
    (("A100", "80GB", "PCIe"), 19.5e12, 312e12, 1.935e12,
     "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe: FP32 19.5 TFLOPS, BF16 312 TFLOPS, 1,935 GB/s)"),
    (("A100", "80GB"), 19.5e12, 312e12, 2.039e12,
     "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM: FP32 19.5 TFLOPS, BF16 312 TFLOPS, 2,039 GB/s)"),
    (("A100",), 19.5e12, 312e12, 1.555e12,
     "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB: FP32 19.5 TFLOPS, BF16 312 TFLOPS, 1,555 GB/s)"),
    (("L4",), 30.3e12, 121e12, 300e9,
     "NVIDIA L4 Tensor Core GPU datasheet (FP32 30.3 TFLOPS, BF16 242 TFLOPS with sparsity, 300 GB/s)"),
    (("T4",), 8.1e12, 65e12, 320e9,
     "NVIDIA T4 Tensor Core GPU datasheet (FP32 8.1 TFLOPS, mixed precision FP16/FP32 65 TFLOPS, 320 GB/s)"),
    (("MI300X",), 163.4e12, 1307.4e12, 5.3e12,
     "AMD Instinct MI300X accelerator datasheet (FP32 163.4 TFLOPS, BF16 1,307.4 TFLOPS dense, 5.3 TB/s)"),
)


def lookup(device_name):
    """{"fp32_flops", "half_flops", "memory_bw", "source", "row"} for ``device_name``, or None."""
    if not device_name:
        return None
    name = device_name.lower()
    for words, fp32, half, bandwidth, source in PEAKS:
        if all(_word_in(w.lower(), name) for w in words):
            return {"fp32_flops": fp32, "half_flops": half, "memory_bw": bandwidth, "source": source,
                    "row": " ".join(words)}
    return None


def _word_in(word, name):
    """``word`` occurs in ``name`` not as part of a longer alphanumeric token ('L4' is not in 'L40S')."""
    start = name.find(word)
    while start >= 0:
        end = start + len(word)
        before = name[start - 1] if start else " "
        after = name[end] if end < len(name) else " "
        if not before.isalnum() and not after.isalnum():
            return True
        start = name.find(word, start + 1)
    return False
