"""What clients send, read strictly: query strings (`strict_query`) and probe-report bodies (`report_bodies`)."""
