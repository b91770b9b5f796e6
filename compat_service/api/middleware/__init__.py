"""The ASGI middlewares of the service."""
