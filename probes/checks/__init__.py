"""The check groups and what they share: what a check is, the probe context, op tables."""
