"""Exporters: one module per output format. The report models know no format."""
