"""The DuckDB backend: one owner process per journal file, its log, store, wire and client."""
