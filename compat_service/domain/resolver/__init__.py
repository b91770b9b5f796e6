"""The resolver: the request, the stages over an explicit state, the explanation of failures, the answer."""
