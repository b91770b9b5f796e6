"""Loading the matrix: reading and validating matrix_data (every problem collected), the cross-file rules and the
compiled snapshot the fast path loads."""
