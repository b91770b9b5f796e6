"""The matrix model: the schema of matrix_data, the runtime row classes generated from it and their base."""
