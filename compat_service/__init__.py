"""accelenv: the PyTorch / accelerator compatibility matrix, its resolver and its service."""

__version__ = "0.1.0"
