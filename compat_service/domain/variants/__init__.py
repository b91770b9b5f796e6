"""Wheel variants (PEP 825's package format, PEP 817's provider API) as accelenv reads, writes and explains them.

- ``providers``: the providers accelenv speaks for (matrix_data/variant_providers.yaml) and what each reports
  supported on a host, following the published WheelNext plugins;
- ``export``: a build's variant properties from the matrix's facts, as ``variant.json`` and the index-level
  ``{name}-{version}-variants.json``;
- ``selection``: which variant a PEP 817 installer would pick for a host and which accelenv picks, and why they
  differ.
"""
