"""Read a Python package index (PEP 503/691 simple API, PEP 658 metadata) and derive matrix facts from it.

This package is the only one that talks to a package index. It is split like this:

- ``location``: which index to read (``--index-url`` > pip's configured ``index-url`` > pip's built-in
  default), and the provenance label written into the generated data;
- ``client``: the HTTP side: negotiated JSON/HTML project pages, conditional requests against a local cache,
  retries with backoff, range reads;
- ``wheel_metadata``: a wheel's ``METADATA`` from its PEP 658 file or, failing that, from HTTP range reads of
  the zip's central directory (never the whole wheel);
- ``facts``: pure derivation of the facts (releases, wheels per platform and Python, runtimes, pins) from
  parsed pages and metadata; their schema is ``compat_service/domain/matrix/index/index_facts.py``; ``refresh_config``
  what to read (data, from ``matrix_data/index/refresh.yaml``);
- ``refresh``: the orchestration behind ``accelenv matrix refresh``, and ``generated`` the generated files
  under ``matrix_data/index/`` and the diff ``--check`` prints.
"""
