"""The service's web pages: the selector (`/`), the matrix heatmap (`/matrix`), a release (`/torch/{v}`) and a
probe report (`/reports/{id}`), rendered on the server with Jinja2 (routes in `api/pages/routes.py`).

Pages hold no logic of their own: the selector's answer is the `GET /v1/resolve` route's own answer for the
same query string, the matrix uses the queries behind `GET /v1/matrix`, and evidence, releases and reports
are read from their API routes inside the process (`internal_api`), so a page shows exactly what the API
would, under the API's access rules. Static files (CSS, a little plain JavaScript) are served from
``static/``; nothing is loaded from another host.
"""
