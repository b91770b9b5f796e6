"""The service's web pages: the selector (`/`), the matrix heatmap (`/matrix`), a release (`/torch/{v}`) and a
probe report (`/reports/{id}`), rendered on the server with Jinja2 (routes in `api/pages/routes.py`).

Pages hold no logic of their own and read the service through one interface,
`compat_service.api.service_reads` (the functions the `/v1` routes answer with; `pages/reads.py` runs them
with the visitor's token): the selector's answer is `GET /v1/resolve`'s body for the same query string, the
matrix uses the rows behind `GET /v1/matrix`, and evidence, releases and reports are what their routes
answer, so a page shows exactly what the API would, under the API's access rules, without going through
HTTP or a route function. Static files (CSS, a little plain JavaScript) are served from ``static/``; nothing
is loaded from another host.
"""
