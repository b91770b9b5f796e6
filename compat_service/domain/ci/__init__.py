"""What CI pipelines ask: a test matrix of the combinations that exist (`matrix`), and the check that a
job's environment holds what its cell says (`verify`)."""
