"""Evidence: the probe report schema, cell keys, status rules, steering and the lookup interface."""
