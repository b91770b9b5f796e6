"""The matrix in the database: tables, the snapshot follower, release queries, the loader."""
