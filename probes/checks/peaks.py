"""Peak figures of known devices: the yardstick for the perf group's "fraction of peak".

Each row of ``PEAKS`` is a dict:

- ``match``: words matched against the device name torch reports (``get_device_name``): the first row whose
  every word occurs in the name as a whole token, case-insensitive, wins, so more specific rows come first
  ("NVIDIA H200 NVL" must not take the H200 SXM row, 'L4' is not in 'L40S');
- ``flops``: peak FLOP/s per dtype the perf group's matmul measures (``float32``, ``float16``, ``bfloat16``).
  float32 is the plain FP32 (CUDA-core / vector) figure, because the probe turns TF32 off. float16 and
  bfloat16 are the DENSE tensor-core / matrix-core figures: NVIDIA's Hopper and Ada datasheets print the
  tensor figures "with sparsity" (2:4 structured sparsity, twice the dense rate) and say the dense ones are
  half; where a row stores half the printed figure, ``sparsity`` says so;
- ``memory_bw``: peak device-memory bandwidth in bytes/s;
- ``source`` (vendor document title), ``url`` (where the vendor publishes it), ``where`` (the table in it),
  ``sparsity`` (dense or halved, in words), ``checked`` (the public copy through which the figures were
  checked, since the vendor PDFs themselves were not reachable from the build machine).

Units are decimal, as the datasheets print them: 1 TFLOPS = 1e12 FLOP/s, 1 TB/s = 1e12 bytes/s,
1 GB/s = 1e9 bytes/s. A figure no reachable source confirms is None (unknown is null, never a guess); the perf
group then reports the measured figure without a fraction of peak. A device no row matches has no fractions.
Ascend: the launch Ascend 910 (torch_npu names it ``Ascend910A``) has Huawei's FP16 figure; the 910B variants
(``Ascend910B1``-``B4``, in the Atlas 800T A2) have rows that store nothing and say why: no vendor document
states their per-chip peaks and the public copies disagree.
"""

from typing import Any, Dict, Tuple

DTYPES = ("float32", "float16", "bfloat16")

_NVIDIA_TENSOR_DATASHEET = ("https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet "
                            "(H100 datasheet)")
_HALVED = ("the datasheet prints BF16/FP16 Tensor Core figures with sparsity (footnote '* With sparsity'); "
           "stored dense = printed / 2")

_ASCEND_910B_UNSOURCED = (
    "no figures stored: Huawei publishes no per-chip peak for the Ascend 910B family (the Atlas 800T A2 / 900 "
    "A2 pages give system figures only), and the figures public copies give disagree and are not confirmed by a "
    "vendor document; the rows exist so that the report says so instead of borrowing another chip's figures"
)
_ASCEND_910B_SEEN = (
    "searched: third-party pages give FP16 256, 280, 320 and 353.9 TFLOPS and memory bandwidth 400 GB/s, "
    "768 GB/s, 1.2 TB/s and 1.6 TB/s for '910B' without naming the variant (e.g. "
    "https://ai.gitee.com/docs/compute/clusters_gpu/ascend_gpu: FP16/BF16 280; "
    "https://jishuzhan.net/article/1872432607539499010: FP16 256, 768 GB/s; "
    "https://gitcode.com/cann/ops-cv/issues/997: 353.9 cube-only for 910B2, derived from the CANN platform INI)"
)


def _unsourced_910b(variant):
    return {
        "match": (variant,),
        "flops": {"float32": None, "float16": None, "bfloat16": None},
        "memory_bw": None,
        "source": "Huawei Atlas 800T A2 training server product documentation",
        "url": "https://www.hiascend.com/",
        "where": "torch_npu names the chip %s (the CANN platform config's SoC_version)" % variant,
        "sparsity": _ASCEND_910B_UNSOURCED,
        "checked": _ASCEND_910B_SEEN,
    }


PEAKS: Tuple[Dict[str, Any], ...] = (
    {
        "match": ("H200", "NVL"),
        "flops": {"float32": None, "float16": None, "bfloat16": None},
        "memory_bw": 4.8e12,
        "source": "NVIDIA H200 Tensor Core GPU datasheet",
        "url": "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446",
        "where": "Technical Specifications table, H200 NVL column: GPU memory bandwidth 4.8TB/s",
        "sparsity": "no FLOPS stored: the H200 NVL compute figures were not confirmed by a reachable copy",
        "checked": "https://aiwiki.ai/wiki/nvidia_h200 ('141 GB at 4.8 TB/s on its SXM and NVL boards')",
    },
    {
        "match": ("H200",),
        "flops": {"float32": 67e12, "float16": 1979e12 / 2, "bfloat16": 1979e12 / 2},
        "memory_bw": 4.8e12,
        "source": "NVIDIA H200 Tensor Core GPU datasheet",
        "url": "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446",
        "where": "Technical Specifications table, H200 SXM column: FP32 67 TFLOPS, BFLOAT16 / FP16 Tensor Core "
                 "1,979 TFLOPS*, GPU memory bandwidth 4.8TB/s",
        "sparsity": _HALVED,
        "checked": "the Marin authors' public device-FLOPS table (derived from mosaicml/composer "
                   "speed_monitor.py; source hpc-datasheet-sc23: fp32 67e12, "
                   "bf16 1.979e15 / 2); https://itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html "
                   "(dense FP16/BF16 ~989 TFLOPS, 4.8 TB/s)",
    },
    {
        "match": ("H100", "NVL"),
        "flops": {"float32": None, "float16": None, "bfloat16": None},
        "memory_bw": None,
        "source": "NVIDIA H100 Tensor Core GPU datasheet",
        "url": _NVIDIA_TENSOR_DATASHEET,
        "where": "H100 NVL column (later datasheet revisions)",
        "sparsity": "no figures stored: the H100 NVL figures were not confirmed by a reachable copy; the row "
                    "exists so that an H100 NVL does not take the H100 SXM figures",
        "checked": "none",
    },
    {
        "match": ("H100", "PCIe"),
        "flops": {"float32": 51e12, "float16": 1513e12 / 2, "bfloat16": 1513e12 / 2},
        "memory_bw": 2.0e12,
        "source": "NVIDIA H100 Tensor Core GPU datasheet",
        "url": _NVIDIA_TENSOR_DATASHEET,
        "where": "Technical Specifications table, H100 PCIe column: FP32 51 TFLOPS, BFLOAT16 / FP16 Tensor Core "
                 "1,513 TFLOPS*, GPU memory bandwidth 2TB/s",
        "sparsity": _HALVED,
        "checked": "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html (reprint of the datasheet "
                   "table: 51 / 1,513* / 2000 GB/sec, '* Shown with sparsity. Specifications 1/2 lower without "
                   "sparsity'); NVIDIA H100 PCIe product brief PB-11133-001 ('greater than 2,000 GBps')",
    },
    {
        # torch names the SXM5 part "NVIDIA H100 80GB HBM3"; the PCIe card carries HBM2e
        "match": ("H100", "HBM3"),
        "flops": {"float32": 67e12, "float16": 1979e12 / 2, "bfloat16": 1979e12 / 2},
        "memory_bw": 3.35e12,
        "source": "NVIDIA H100 Tensor Core GPU datasheet",
        "url": _NVIDIA_TENSOR_DATASHEET,
        "where": "Technical Specifications table, H100 SXM column: FP32 67 TFLOPS, BFLOAT16 / FP16 Tensor Core "
                 "1,979 TFLOPS*, GPU memory bandwidth 3.35TB/s",
        "sparsity": _HALVED,
        "checked": "https://archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html (67 / 1,979* / 3,350 GB/sec); "
                   "https://glennklockwood.com/garden/processors/h100 (FP32 66.9, BF16 matrix 989.4 dense, "
                   "1978.9 sparse)",
    },
    {
        "match": ("A100", "80GB", "PCIe"),
        "flops": {"float32": 19.5e12, "float16": 312e12, "bfloat16": 312e12},
        "memory_bw": 1.935e12,
        "source": "NVIDIA A100 Tensor Core GPU datasheet",
        "url": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
               "nvidia-a100-datasheet-nvidia-us-2188504-web.pdf",
        "where": "Specifications table, A100 80GB PCIe column: FP32 19.5 TFLOPS, BFLOAT16 / FP16 Tensor Core "
                 "312 TFLOPS | 624 TFLOPS*, GPU memory bandwidth 1,935GB/s",
        "sparsity": "dense: the datasheet prints both (312 dense | 624* with sparsity); 312 stored",
        "checked": "a public GitHub notes file reproducing this datasheet's table verbatim under a link to it "
                   "(1,935GB/s | 2,039GB/s; 312 | 624*); https://glennklockwood.com/garden/processors/A100",
    },
    {
        "match": ("A100", "80GB"),
        "flops": {"float32": 19.5e12, "float16": 312e12, "bfloat16": 312e12},
        "memory_bw": 2.039e12,
        "source": "NVIDIA A100 Tensor Core GPU datasheet",
        "url": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
               "nvidia-a100-datasheet-nvidia-us-2188504-web.pdf",
        "where": "Specifications table, A100 80GB SXM column: FP32 19.5 TFLOPS, BFLOAT16 / FP16 Tensor Core "
                 "312 TFLOPS | 624 TFLOPS*, GPU memory bandwidth 2,039GB/s",
        "sparsity": "dense: the datasheet prints both (312 dense | 624* with sparsity); 312 stored",
        "checked": "same reproduction of the datasheet table; pytorch/pytorch "
                   "torch/_inductor/analysis/device_info.py ('NVIDIA A100': dram_bw_gbs 2039)",
    },
    {
        "match": ("A100",),
        "flops": {"float32": 19.5e12, "float16": 312e12, "bfloat16": 312e12},
        "memory_bw": 1.555e12,
        "source": "NVIDIA A100 Tensor Core GPU datasheet (40GB edition, r4)",
        "url": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
               "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
        "where": "Specifications table, A100 40GB (PCIe and SXM) columns: FP32 19.5 TFLOPS, BFLOAT16 / FP16 "
                 "Tensor Core 312 | 624* TFLOPS, GPU memory bandwidth 1,555GB/s",
        "sparsity": "dense: the datasheet prints both (312 dense | 624* with sparsity); 312 stored",
        "checked": "https://glennklockwood.com/garden/processors/A100 (A100 40G: 1.555 TB/s, FP32 19.5, BF16 "
                   "312 / 624 sparse, citing this datasheet); a public table listing A100 40GB PCIe / SXM at "
                   "1,555GB/s",
    },
    {
        "match": ("L4",),
        "flops": {"float32": 30.3e12, "float16": 242e12 / 2, "bfloat16": 242e12 / 2},
        "memory_bw": 300e9,
        "source": "NVIDIA L4 Tensor Core GPU datasheet",
        "url": "https://nvdam.widen.net/s/rvq98gbwsw/l4-datasheet-2595652",
        "where": "Specifications table: FP32 30.3 teraFLOPs, BFLOAT16 / FP16 Tensor Core 242 teraFLOPS*, GPU "
                 "memory bandwidth 300GB/s",
        "sparsity": "the datasheet prints BF16/FP16 Tensor Core figures with sparsity ('* Shown with "
                    "sparsity'); stored dense = printed / 2",
        "checked": "https://www.nvidia.com/en-us/data-center/l4/ as quoted in public notes ('30.3 FP32; 242 "
                   "FP16/BF16 ... with sparsity; 24 GB, 300 GB/s'); "
                   "https://store.sourcecode.com/en-us/bg-bucket-compare/125/9820 (300 GB/s, '| Sparsity')",
    },
    {
        "match": ("T4",),
        "flops": {"float32": 8.1e12, "float16": 65e12, "bfloat16": None},
        "memory_bw": 320e9,
        "source": "NVIDIA T4 Tensor Core GPU datasheet / NVIDIA T4 product page",
        "url": "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
               "t4-tensor-core-datasheet-951643.pdf; https://www.nvidia.com/en-us/data-center/tesla-t4/",
        "where": "Specifications: Single-Precision 8.1 TFLOPS, Mixed-Precision (FP16/FP32) 65 TFLOPS, GPU memory "
                 "bandwidth 320+ GB/s",
        "sparsity": "dense: Turing has no structured-sparsity mode, 65 TFLOPS is the dense FP16 tensor figure. "
                    "bfloat16 None: Turing has no BF16 tensor cores and the datasheet gives no BF16 figure. "
                    "Bandwidth: the product page prints '320+ GB/s' (320 stored); one public note reports "
                    "300 GB/s in a datasheet revision -- a fraction of memory peak may be low by up to 6%",
        "checked": "the Marin authors' public device-FLOPS table (t4 datasheet 951643: fp32 8.1e12, "
                   "fp16 65e12); public notes quoting the product page (8.1 FP32 / 65 FP16 TFLOPS, 320+ GB/s)",
    },
    {
        "match": ("MI300X",),
        "flops": {"float32": 163.4e12, "float16": 1307.4e12, "bfloat16": 1307.4e12},
        "memory_bw": 5.3e12,
        "source": "AMD Instinct MI300X Accelerator data sheet",
        "url": "https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/"
               "amd-instinct-mi300x-data-sheet.pdf",
        "where": "AI and HPC performance table: peak FP32 (vector and matrix) 163.4 TFLOPs, peak FP16 / BF16 "
                 "1307.4 TFLOPs (2614.9 with structured sparsity); memory bandwidth 5.3 TB/s",
        "sparsity": "dense: the data sheet prints dense and with-sparsity figures separately; dense stored",
        "checked": "pytorch/pytorch torch/_inductor/analysis/device_info.py ('AMD MI300X': float32 163.4, "
                   "bfloat16 / float16 1307.4, dram_bw_gbs 5300.0, citing this data sheet)",
    },    {
        # torch_npu's get_device_name gives the SoC version; Ascend910A is the 32-core Ascend 910 of the launch
        "match": ("Ascend910A",),
        "flops": {"float32": None, "float16": 256e12, "bfloat16": None},
        "memory_bw": None,
        "source": "Huawei, 'DaVinci: A Scalable Architecture for Neural Network Computing' (Hot Chips 31, 2019) "
                  "and the Ascend 910 launch (23 August 2019)",
        "url": "https://old.hotchips.org/hc31/HC31_1.11_Huawei.Davinci.HengLiao_v4.0.pdf",
        "where": "Ascend 910: 32 Da Vinci cores, 256 TFLOPS FP16 (half precision), 512 TOPS INT8",
        "sparsity": "dense: one FP16 figure (the Cube units'), no sparsity mode. float32, bfloat16 and memory "
                    "bandwidth None: not stated in the launch material or confirmed by a reachable copy",
        "checked": "https://pureai.com/articles/2019/09/03/nws-huawei-ascend-910-processor.aspx ('For half-precision "
                   "floating point (FP16) operations, Ascend 910 delivers 256 TeraFLOPS'); "
                   "http://m.elecfans.com/article/1058184.html (the Hot Chips slide: 32 Da Vinci cores, 256 "
                   "TFLOPS half precision); the CANN platform config Ascend910A.ini (ai_core_cnt=32) for the name",
    },
    _unsourced_910b("Ascend910B1"),
    _unsourced_910b("Ascend910B2"),
    _unsourced_910b("Ascend910B3"),
    _unsourced_910b("Ascend910B4"),
)


def lookup(device_name):
    """The matching row as {"flops", "memory_bw", "source", "row"} for ``device_name``, or None.

    ``flops`` maps each of ``DTYPES`` to FLOP/s or None; ``source`` names the document, its URL and table.
    """
    if not device_name:
        return None
    name = device_name.lower()
    for row in PEAKS:
        if all(_word_in(w.lower(), name) for w in row["match"]):
            return {"flops": dict(row["flops"]), "memory_bw": row["memory_bw"], "row": " ".join(row["match"]),
                    "source": "%s, %s (%s; %s)" % (row["source"], row["where"], row["url"], row["sparsity"])}
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
