"""Stacks: torch together with the ecosystem packages that pin it (vLLM, xformers, torchao, ...).

`catalog` reads what the package index states about each ecosystem package (the generated
``matrix_data/index/<package>.yaml``) with the curated ``matrix_data/ecosystem.yaml``, compiled into one
cached JSON so `accelenv resolve --with vllm` starts fast; `schema` validates the curated file (slow path
only); `request` parses ``--with``; `resolve` picks the package releases and hands the torch constraint and
the build rule to the torch resolver (`compat_service.domain.resolver.stages.resolve`), so the host rules
apply to the whole stack.
"""
